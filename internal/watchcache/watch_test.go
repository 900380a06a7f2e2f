package watchcache

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"

	"github.com/crdserver/crdserver/internal/storage"
)

func TestWatchResourceVersions(t *testing.T) { forEachBackend(t, testWatchResourceVersions) }

func testWatchResourceVersions(t *testing.T, newStore func(testing.TB) storage.Interface) {
	r := newRig(t, newStore(t), Options{})
	revs := history(r)
	rv := func(i int) string { return strconv.FormatInt(revs[i], 10) }
	sel := func(s string) labels.Selector { l, _ := labels.Parse(s); return l }
	at := func(typ EventType, name string, i int) string {
		return fmt.Sprintf("%s %s@%d", typ, name, revs[i])
	}
	end := fmt.Sprintf("BOOKMARK@%d end=true", revs[5])
	current := []string{at(Added, "a/x1", 4), at(Added, "b/x2", 3)}

	tests := []struct {
		name string
		opts WatchOptions
		want []string
	}{
		{name: "rv unset", opts: WatchOptions{}, want: current},
		{name: "rv 0", opts: WatchOptions{ResourceVersion: "0"}, want: current},
		{name: "rv 0 namespace", opts: WatchOptions{ResourceVersion: "0", Namespace: "b"}, want: current[1:]},
		{name: "rv 0 label", opts: WatchOptions{ResourceVersion: "0", Labels: sel("app=y")}, want: current[:1]},
		{name: "from rv", opts: WatchOptions{ResourceVersion: rv(2)}, want: []string{at(Added, "b/x2", 3), at(Modified, "a/x1", 4), at(Deleted, "a/y1", 5)}},
		{name: "from current rv", opts: WatchOptions{ResourceVersion: rv(5)}, want: nil},
		{name: "from rv namespace", opts: WatchOptions{ResourceVersion: rv(1), Namespace: "a"}, want: []string{at(Added, "a/y1", 2), at(Modified, "a/x1", 4), at(Deleted, "a/y1", 5)}},
		// x1 leaves app=x at r4: its watcher sees it deleted, in its old state.
		{name: "label leaves", opts: WatchOptions{ResourceVersion: rv(1), Labels: sel("app=x")}, want: []string{at(Added, "b/x2", 3), at(Deleted, "a/x1", 4)}},
		// x1 joins app=y at r4: its watcher sees it added.
		{name: "label joins", opts: WatchOptions{ResourceVersion: rv(1), Labels: sel("app=y")}, want: []string{at(Added, "a/y1", 2), at(Added, "a/x1", 4), at(Deleted, "a/y1", 5)}},
		{name: "field", opts: WatchOptions{ResourceVersion: rv(1), Fields: mustFields("metadata.name=y1")}, want: []string{at(Added, "a/y1", 2), at(Deleted, "a/y1", 5)}},
		{name: "initial events consistent", opts: WatchOptions{SendInitialEvents: ptr(true), AllowBookmarks: true}, want: append(slices.Clone(current), end)},
		{name: "initial events rv 0", opts: WatchOptions{ResourceVersion: "0", SendInitialEvents: ptr(true), AllowBookmarks: true}, want: append(slices.Clone(current), end)},
		{name: "initial events not older than", opts: WatchOptions{ResourceVersion: rv(2), ResourceVersionMatch: MatchNotOlderThan, SendInitialEvents: ptr(true), AllowBookmarks: true}, want: append(slices.Clone(current), end)},
		{name: "initial events label", opts: WatchOptions{SendInitialEvents: ptr(true), AllowBookmarks: true, Labels: sel("app=x")}, want: []string{at(Added, "b/x2", 3), end}},
		{name: "initial events without bookmarks", opts: WatchOptions{SendInitialEvents: ptr(true)}, want: current},
		{name: "no initial events rv unset", opts: WatchOptions{SendInitialEvents: ptr(false), AllowBookmarks: true}, want: nil},
		{name: "no initial events rv 0", opts: WatchOptions{ResourceVersion: "0", SendInitialEvents: ptr(false)}, want: nil},
		{name: "no initial events from rv", opts: WatchOptions{ResourceVersion: rv(3), SendInitialEvents: ptr(false)}, want: []string{at(Modified, "a/x1", 4), at(Deleted, "a/y1", 5)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			w, err := r.cache.Watch(ctx, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			var got []string
			for range tt.want {
				got = append(got, evString(next(t, w)))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
			noEvent(t, w)
		})
	}
}

func mustFields(s string) fields.Selector { return fields.ParseSelectorOrDie(s) }

// A Deleted event carries the object's last state with the delete's
// revision, in the item and in its JSON.
func TestWatchDeletedCarriesDeleteRevision(t *testing.T) {
	forEachBackend(t, testWatchDeletedCarriesDeleteRevision)
}

func testWatchDeletedCarriesDeleteRevision(t *testing.T, newStore func(testing.TB) storage.Interface) {
	r := newRig(t, newStore(t), Options{})
	r.waitRev(r.create("a", "x", "app", "x"))
	w := r.watchNow(WatchOptions{})
	upd := r.update("a", "x", "app", "y")
	del := r.delete("a", "x")
	if ev := next(t, w); ev.Type != Modified || ev.Item.Revision != upd {
		t.Fatalf("got %s", evString(ev))
	}
	ev := next(t, w)
	if ev.Type != Deleted || ev.Item.Revision != del || ev.Revision != del {
		t.Fatalf("got %s", evString(ev))
	}
	if !strings.Contains(string(ev.Item.JSON()), fmt.Sprintf(`"resourceVersion":"%d"`, del)) {
		t.Errorf("JSON %s lacks resourceVersion %d", ev.Item.JSON(), del)
	}
	if ev.Item.Labels.Get("app") != "y" {
		t.Errorf("deleted item labels %v, want its last state", ev.Item.Labels)
	}

	// Leaving a selector by update: Deleted with the old state at the
	// update's revision.
	r.waitRev(r.create("a", "z", "app", "x"))
	wx := r.watchNow(WatchOptions{Labels: labels.SelectorFromSet(labels.Set{"app": "x"})})
	upd = r.update("a", "z", "app", "y")
	ev = next(t, wx)
	if ev.Type != Deleted || ev.Item.Revision != upd || ev.Item.Labels.Get("app") != "x" {
		t.Fatalf("got %s labels %v", evString(ev), ev.Item.Labels)
	}
	if !strings.Contains(string(ev.Item.JSON()), fmt.Sprintf(`"resourceVersion":"%d"`, upd)) {
		t.Errorf("JSON %s lacks resourceVersion %d", ev.Item.JSON(), upd)
	}
}

// A value the cache cannot decode is not held, so its watchers never see
// it: neither when it is written nor when it is deleted, and the cache's
// revision moves past both. Storage events carry no previous value to
// decode at the delete.
func TestWatchUndecodableNeverSeen(t *testing.T) { forEachBackend(t, testWatchUndecodableNeverSeen) }

func testWatchUndecodableNeverSeen(t *testing.T, newStore func(testing.TB) storage.Interface) {
	r := newRig(t, newStore(t), Options{})
	r.waitRev(r.create("a", "x", "app", "x"))
	w := r.watchNow(WatchOptions{})
	if _, err := r.store.Create(r.ctx, key("a", "bad"), []byte("{not json")); err != nil {
		t.Fatal(err)
	}
	_, del, err := r.store.Delete(r.ctx, key("a", "bad"), 0)
	if err != nil {
		t.Fatal(err)
	}
	r.waitRev(del)
	upd := r.update("a", "x", "app", "y")
	if ev := next(t, w); ev.Type != Modified || itemName(ev.Item) != "a/x" || ev.Item.Revision != upd {
		t.Fatalf("got %s, want only x's update", evString(ev))
	}
	noEvent(t, w)
}

func TestWatchLiveEvents(t *testing.T) {
	r := newMemRig(t, Options{})
	history(r)
	w, err := r.cache.Watch(context.Background(), WatchOptions{Namespace: "c"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	r.create("a", "other")
	rev := r.create("c", "live")
	if ev := next(t, w); ev.Type != Added || itemName(ev.Item) != "c/live" || ev.Item.Revision != rev {
		t.Fatalf("got %s", evString(ev))
	}
	noEvent(t, w)
}

// A watch from a revision ahead of the cache is accepted and delivers only
// what comes after that revision, as upstream does.
func TestWatchFutureRevision(t *testing.T) { forEachBackend(t, testWatchFutureRevision) }

func testWatchFutureRevision(t *testing.T, newStore func(testing.TB) storage.Interface) {
	r := newRig(t, newStore(t), Options{})
	cur := r.create("a", "x")
	r.waitRev(cur)
	w, err := r.cache.Watch(context.Background(), WatchOptions{ResourceVersion: strconv.FormatInt(cur+2, 10)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	r.create("a", "y") // cur+1
	r.create("a", "z") // cur+2
	want := r.create("a", "after")
	if ev := next(t, w); ev.Item.Revision != want {
		t.Fatalf("got %s, want the event at %d", evString(ev), want)
	}
}

func TestWatchTooOld(t *testing.T) { forEachBackend(t, testWatchTooOld) }

func testWatchTooOld(t *testing.T, newStore func(testing.TB) storage.Interface) {
	r := newRig(t, newStore(t), Options{WindowSize: 2})
	revs := history(r)
	w, err := r.cache.Watch(context.Background(), WatchOptions{ResourceVersion: strconv.FormatInt(revs[1], 10)})
	if err != nil {
		t.Fatal(err)
	}
	evs := closed(t, w)
	if len(evs) != 1 || evs[0].Type != Error || !apierrors.IsResourceExpired(evs[0].Err) {
		t.Fatalf("got %v", evs)
	}
	want := fmt.Sprintf("too old resource version: %d (%d)", revs[1], revs[3])
	if evs[0].Err.Error() != want {
		t.Errorf("message %q, want %q", evs[0].Err.Error(), want)
	}
	// The oldest revision the window still covers is fine.
	w, err = r.cache.Watch(context.Background(), WatchOptions{ResourceVersion: strconv.FormatInt(revs[3], 10)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if ev := next(t, w); ev.Type != Modified || ev.Item.Revision != revs[4] {
		t.Fatalf("got %s", evString(ev))
	}
}

// SendInitialEvents with a revision the cache doesn't reach in time ends
// with a 504 Timeout event.
func TestWatchInitialEventsTooLarge(t *testing.T) {
	r := newMemRig(t, Options{})
	cur := r.create("a", "x")
	r.waitRev(cur)
	done := make(chan struct{})
	var w *Watcher
	var err error
	go func() {
		defer close(done)
		w, err = r.cache.Watch(context.Background(), WatchOptions{ResourceVersion: strconv.FormatInt(cur+10, 10), SendInitialEvents: ptr(true), AllowBookmarks: true})
	}()
	r.stepUntil(done, 500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	evs := closed(t, w)
	if len(evs) != 1 || evs[0].Type != Error || !IsTooLargeResourceVersion(evs[0].Err) {
		t.Fatalf("got %v", evs)
	}
}

func TestWatchBadRequest(t *testing.T) {
	r := newMemRig(t, Options{})
	_, err := r.cache.Watch(context.Background(), WatchOptions{ResourceVersion: "x"})
	if !apierrors.IsBadRequest(err) {
		t.Fatalf("err = %v", err)
	}
}

// stepForEvent advances the fake clock until the watcher delivers an event.
func stepForEvent(t *testing.T, r *rig, w *Watcher, step time.Duration) Event {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		r.clock.Step(step)
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("watch closed")
			}
			return ev
		case <-time.After(5 * time.Millisecond):
		}
	}
	t.Fatal("no event")
	return Event{}
}

func TestWatchBookmarks(t *testing.T) { forEachBackend(t, testWatchBookmarks) }

func testWatchBookmarks(t *testing.T, newStore func(testing.TB) storage.Interface) {
	r := newRig(t, newStore(t), Options{BookmarkInterval: time.Minute})
	r.waitRev(r.create("a", "x"))
	start := strconv.FormatInt(r.cache.Revision(), 10)

	// Events this watcher doesn't see still move its bookmarks forward.
	w, err := r.cache.Watch(context.Background(), WatchOptions{Namespace: "a", ResourceVersion: start, AllowBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	wl, err := r.cache.Watch(context.Background(), WatchOptions{ResourceVersion: start, AllowBookmarks: true, Labels: labels.SelectorFromSet(labels.Set{"app": "none"})})
	if err != nil {
		t.Fatal(err)
	}
	defer wl.Stop()
	plain, err := r.cache.Watch(context.Background(), WatchOptions{Namespace: "a", ResourceVersion: start})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Stop()

	rev := r.create("b", "elsewhere")
	r.waitRev(rev)
	for _, w := range []*Watcher{w, wl} {
		ev := stepForEvent(t, r, w, 10*time.Second)
		for ev.Type == Bookmark && ev.Revision < rev { // the dispatcher may not have seen rev yet
			ev = stepForEvent(t, r, w, 10*time.Second)
		}
		if ev.Type != Bookmark || ev.Revision != rev || ev.InitialEventsEnd {
			t.Fatalf("got %s, want bookmark at %d", evString(ev), rev)
		}
	}
	// No news, no new bookmark.
	r.clock.Step(2 * time.Minute)
	noEvent(t, w)
	// Without AllowBookmarks, nothing.
	noEvent(t, plain)
}

// A client that stops reading is cut off; others keep receiving.
func TestWatchSlowWatcherTerminated(t *testing.T) {
	r := newMemRig(t, Options{WatcherBuffer: 2})
	start := strconv.FormatInt(r.waitRevOf(r.create("init", "x")), 10)
	stop := make(chan struct{})
	defer close(stop)
	go func() { // the dispatcher's budget timer runs on the fake clock
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
				r.clock.Step(10 * time.Millisecond)
			}
		}
	}()
	slow, err := r.cache.Watch(context.Background(), WatchOptions{ResourceVersion: start})
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Stop()
	fast, err := r.cache.Watch(context.Background(), WatchOptions{ResourceVersion: start})
	if err != nil {
		t.Fatal(err)
	}
	defer fast.Stop()
	// The fast client reads each event before the next write, so only the
	// slow one ever fills up.
	const n = 20
	for i := range n {
		r.create("a", fmt.Sprintf("o%d", i))
		if ev := next(t, fast); ev.Item.Name != fmt.Sprintf("o%d", i) {
			t.Fatalf("fast watcher got %s", evString(ev))
		}
	}
	evs := closed(t, slow)
	if len(evs) >= n {
		t.Fatalf("slow watcher got all %d events; want it cut off", len(evs))
	}
	// What it got is a gap-free prefix, so its client can resume.
	for i, ev := range evs {
		if ev.Type != Added || ev.Item.Name != fmt.Sprintf("o%d", i) {
			t.Fatalf("event %d: %s", i, evString(ev))
		}
	}
}

// The budget lets a briefly slow watcher catch up instead of being cut.
func TestWatchSlowWatcherBudget(t *testing.T) {
	r := newMemRig(t, Options{WatcherBuffer: 1})
	start := r.waitRevOf(r.create("init", "x"))
	w, err := r.cache.Watch(context.Background(), WatchOptions{ResourceVersion: strconv.FormatInt(start, 10)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for i := range 4 { // 1 in result, 1 in the watcher's hand, 1 in input, 1 blocked
		r.create("a", fmt.Sprintf("o%d", i))
	}
	// Wait until the dispatcher is waiting on its budget timer, then read.
	deadline := time.Now().Add(10 * time.Second)
	for r.clock.Waiters() < 2 { // the bookmark timer and the budget timer
		if time.Now().After(deadline) {
			t.Fatal("dispatcher never blocked")
		}
		time.Sleep(time.Millisecond)
	}
	for i := range 4 {
		if ev := next(t, w); ev.Item.Name != fmt.Sprintf("o%d", i) {
			t.Fatalf("got %s", evString(ev))
		}
	}
	noEvent(t, w)
}

func TestBudget(t *testing.T) {
	r := newMemRig(t, Options{})
	b := newBudget(r.clock)
	if d := b.take(); d != 100*time.Millisecond {
		t.Fatalf("initial budget %v", d)
	}
	r.clock.Step(time.Second)
	if d := b.take(); d != 50*time.Millisecond {
		t.Fatalf("after 1s: %v", d)
	}
	r.clock.Step(time.Hour)
	if d := b.take(); d != 100*time.Millisecond {
		t.Fatalf("capped: %v", d)
	}
	b.giveBack(30 * time.Millisecond)
	if d := b.take(); d != 30*time.Millisecond {
		t.Fatalf("returned: %v", d)
	}
}

// After storage compacts past the cache's watch, the cache relists; its
// watchers get 410 and it serves the new state.
func TestRelistAfterCompaction(t *testing.T) {
	r := newMemRig(t, Options{})
	revs := history(r)
	w, err := r.cache.Watch(context.Background(), WatchOptions{ResourceVersion: strconv.FormatInt(revs[5], 10)})
	if err != nil {
		t.Fatal(err)
	}
	r.compact(revs[5])
	r.mem.breakWatches(fmt.Errorf("gone: %w", storage.ErrCompacted))

	evs := closed(t, w)
	if n := len(evs); n == 0 || evs[n-1].Type != Error || !apierrors.IsResourceExpired(evs[n-1].Err) {
		t.Fatalf("got %v, want a 410 last", evs)
	}
	if evs[len(evs)-1].Err.Error() != msgWatchExpired {
		t.Errorf("message %q", evs[len(evs)-1].Err.Error())
	}
	missed := r.create("z", "missed")
	r.waitRev(missed)
	res, err := r.cache.List(context.Background(), ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names(res.Items), []string{"a/x1", "b/x2", "z/missed"}) {
		t.Errorf("after relist: %v", names(res.Items))
	}
	// Old positions are gone; new ones work.
	old, _ := r.cache.Watch(context.Background(), WatchOptions{ResourceVersion: strconv.FormatInt(revs[4], 10)})
	if evs := closed(t, old); len(evs) != 1 || !apierrors.IsResourceExpired(evs[0].Err) {
		t.Fatalf("old watch: %v", evs)
	}
	nw, err := r.cache.Watch(context.Background(), WatchOptions{ResourceVersion: strconv.FormatInt(missed, 10)})
	if err != nil {
		t.Fatal(err)
	}
	defer nw.Stop()
	rev := r.create("a", "fresh")
	if ev := next(t, nw); ev.Item.Revision != rev {
		t.Fatalf("got %s", evString(ev))
	}
}

// A watch that breaks for another reason is resumed from the last revision:
// watchers see no gap and no error.
func TestWatchResumesAfterStorageError(t *testing.T) {
	r := newMemRig(t, Options{})
	start := r.waitRevOf(r.create("init", "x"))
	w, err := r.cache.Watch(context.Background(), WatchOptions{ResourceVersion: strconv.FormatInt(start, 10)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	a := r.create("a", "before")
	r.waitRev(a)
	r.mem.breakWatches(errors.New("connection reset"))
	b := r.create("a", "after")
	for _, want := range []int64{a, b} {
		if ev := next(t, w); ev.Type != Added || ev.Item.Revision != want {
			t.Fatalf("got %s, want Added at %d", evString(ev), want)
		}
	}
}

func TestWatchStop(t *testing.T) {
	r := newMemRig(t, Options{})
	r.create("a", "x")
	w, err := r.cache.Watch(context.Background(), WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.Stop()
	w.Stop()
	closed(t, w)

	ctx, cancel := context.WithCancel(context.Background())
	w, err = r.cache.Watch(ctx, WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	closed(t, w)

	// Stopping the cache closes its watchers.
	w, err = r.cache.Watch(context.Background(), WatchOptions{ResourceVersion: "0", SendInitialEvents: ptr(false)})
	if err != nil {
		t.Fatal(err)
	}
	r.cache.Stop()
	closed(t, w)
	w, err = r.cache.Watch(context.Background(), WatchOptions{ResourceVersion: "0"})
	if err == nil {
		if evs := closed(t, w); len(evs) != 1 || evs[0].Type != Error {
			t.Fatalf("watch on a stopped cache: %v", evs)
		}
	}
}

// Nothing is left running once watchers and the cache are stopped.
func TestNoGoroutineLeaks(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		store := newMemStore()
		c := New(store, testPrefix, testDecode, Options{BookmarkInterval: time.Millisecond})
		ctx, cancel := context.WithCancel(context.Background())
		c.Start(ctx)
		if err := c.WaitReady(ctx); err != nil {
			t.Fatal(err)
		}
		var ws []*Watcher
		for i := range 10 {
			store.Create(ctx, key("a", fmt.Sprint(i)), object("a", fmt.Sprint(i)))
			w, err := c.Watch(ctx, WatchOptions{AllowBookmarks: true})
			if err != nil {
				t.Fatal(err)
			}
			ws = append(ws, w)
		}
		ws[0].Stop()
		wctx, wcancel := context.WithCancel(ctx)
		if _, err := c.Watch(wctx, WatchOptions{}); err != nil {
			t.Fatal(err)
		}
		wcancel()
		cancel() // stops the cache through its context
		c.Stop()
	}()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines left, started with %d:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A cache started with Backfill after writes serves a watch from a
// revision older than its start (a client resuming across a restart)
// with the events since, and is ready only once it has caught up; other
// prefixes' writes (an idle prefix) do not keep it from getting there.
func TestBackfill(t *testing.T) { forEachBackend(t, testBackfill) }

func testBackfill(t *testing.T, newStore func(testing.TB) storage.Interface) {
	store := newStore(t)
	ctx := context.Background()
	first, err := store.Create(ctx, key("a", "x"), object("a", "x"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Create(ctx, key("a", "y"), object("a", "y")); err != nil {
		t.Fatal(err)
	}
	last, err := store.Create(ctx, "/registry/other/thing", object("b", "thing"))
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, store, Options{Backfill: 100, Clock: clock.RealClock{}})

	if got := r.cache.Revision(); got < last {
		t.Fatalf("ready at %d, before the revision it started from (%d)", got, last)
	}
	w, err := r.cache.Watch(ctx, WatchOptions{ResourceVersion: strconv.FormatInt(first, 10)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if ev := next(t, w); ev.Type != Added || ev.Item.Name != "y" {
		t.Fatalf("got %s, want y ADDED", evString(ev))
	}
	// Without Backfill the same watch is too old, as before.
	r = newRig(t, store, Options{Clock: clock.RealClock{}})

	w, err = r.cache.Watch(ctx, WatchOptions{ResourceVersion: strconv.FormatInt(first, 10)})
	if err != nil {
		t.Fatal(err)
	}
	if evs := closed(t, w); len(evs) != 1 || evs[0].Type != Error || !apierrors.IsResourceExpired(evs[0].Err) {
		t.Fatalf("without backfill: got %v", evs)
	}
}

// Backfill reaching into compacted history lists at the current revision.
func TestBackfillCompacted(t *testing.T) {
	store := newMemStore()
	ctx := context.Background()
	first, err := store.Create(ctx, key("a", "x"), object("a", "x"))
	if err != nil {
		t.Fatal(err)
	}
	last, err := store.Create(ctx, key("a", "y"), object("a", "y"))
	if err != nil {
		t.Fatal(err)
	}
	store.compact(last)
	r := newRig(t, store, Options{Backfill: 100, Clock: clock.RealClock{}})

	w, err := r.cache.Watch(ctx, WatchOptions{ResourceVersion: strconv.FormatInt(first, 10)})
	if err != nil {
		t.Fatal(err)
	}
	if evs := closed(t, w); len(evs) != 1 || evs[0].Type != Error || !apierrors.IsResourceExpired(evs[0].Err) {
		t.Fatalf("got %v", evs)
	}
	if n := r.cache.Stats().Objects; n != 2 {
		t.Fatalf("%d objects, want 2", n)
	}
}

// A backfilled first list whose replay fails (an old value that no
// longer decrypts) falls back to a list at the current revision: the
// cache is ready with every object, and watches older than it get 410 as
// without backfill.
func TestBackfillReplayFails(t *testing.T) {
	store := newMemStore()
	ctx := context.Background()
	first, err := store.Create(ctx, key("a", "x"), object("a", "x"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Create(ctx, key("a", "y"), object("a", "y")); err != nil {
		t.Fatal(err)
	}
	store.failReplay = errors.New("no matching prefix found: value is encrypted with a provider that is not configured")
	r := newRig(t, store, Options{Backfill: 100, Clock: clock.RealClock{}})
	if n := r.cache.Stats().Objects; n != 2 {
		t.Fatalf("%d objects, want 2", n)
	}
	w, err := r.cache.Watch(ctx, WatchOptions{ResourceVersion: strconv.FormatInt(first, 10)})
	if err != nil {
		t.Fatal(err)
	}
	if evs := closed(t, w); len(evs) != 1 || evs[0].Type != Error || !apierrors.IsResourceExpired(evs[0].Err) {
		t.Fatalf("got %v", evs)
	}
}
