package watchcache

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"

	"github.com/crdserver/crdserver/internal/storage"
)

func TestWatchProperty(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newStore func(testing.TB) storage.Interface) {
		testWatchProperty(t, newStore(t))
	})
}

// state is what a client knows: key → revision and labels.
type state map[string]stateEntry

type stateEntry struct {
	rev int64
	app string
}

func stateOf(items []*Item) state {
	s := state{}
	for _, it := range items {
		s[it.Key] = stateEntry{rev: it.Revision, app: it.Labels.Get("app")}
	}
	return s
}

// observer is one client: it reads a starting state at some revision, then
// watches from there, recording every event.
type observer struct {
	name   string
	sel    labels.Selector
	start  state
	rev    int64
	events []Event
	err    error
	done   chan struct{}
}

// testWatchProperty checks the watch guarantees under concurrent writers:
// every watcher started at revision R receives exactly the changes after R,
// in order, without gaps or duplicates, and replaying them onto the state
// at R gives the final state.
func testWatchProperty(t *testing.T, store storage.Interface) {
	r := newRig(t, store, Options{Clock: clock.RealClock{}, WatcherBuffer: 1000, WindowSize: 100000})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	const writers, opsPerWriter = 4, 120
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(w), 7))
			for range opsPerWriter {
				time.Sleep(time.Duration(rnd.IntN(1000)) * time.Microsecond)
				ns := fmt.Sprintf("ns%d", rnd.IntN(3))
				name := fmt.Sprintf("o%d", rnd.IntN(8))
				app := []string{"x", "y"}[rnd.IntN(2)]
				k := key(ns, name)
				var err error
				switch cur, gerr := store.Get(ctx, k); {
				case errors.Is(gerr, storage.ErrNotFound):
					_, err = store.Create(ctx, k, object(ns, name, "app", app))
				case gerr != nil:
					err = gerr
				case rnd.IntN(3) == 0:
					_, _, err = store.Delete(ctx, k, cur.ModRevision)
				default:
					_, err = store.Update(ctx, k, object(ns, name, "app", app), cur.ModRevision)
				}
				if err != nil && !errors.Is(err, storage.ErrExists) && !errors.Is(err, storage.ErrNotFound) && !errors.Is(err, storage.ErrConflict) {
					t.Errorf("write: %v", err)
					return
				}
			}
		}()
	}

	// Observers start while the writers run, each a different way.
	selX := labels.SelectorFromSet(labels.Set{"app": "x"})
	var observers []*observer
	kinds := []string{"list+watch", "paged list+watch", "selector list+watch", "initial events", "selector initial events", "exact list+watch", "rewind"}
	for i := range 28 {
		kind := kinds[i%len(kinds)]
		o := &observer{name: fmt.Sprintf("%d %s", i, kind), done: make(chan struct{})}
		if kind == "selector list+watch" || kind == "selector initial events" {
			o.sel = selX
		}
		observers = append(observers, o)
		if err := o.begin(ctx, r.cache, kind); err != nil {
			t.Fatalf("%s: %v", o.name, err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	wg.Wait()

	// A sentinel every observer sees marks the end of the history.
	sentinel := r.create("zz", "sentinel", "app", "x")
	for _, o := range observers {
		select {
		case <-o.done:
		case <-ctx.Done():
			t.Fatalf("%s: never saw the sentinel", o.name)
		}
	}
	final, err := r.cache.List(ctx, ListOptions{ResourceVersion: strconv.FormatInt(sentinel, 10), ResourceVersionMatch: MatchExact})
	if err != nil {
		t.Fatal(err)
	}
	finalAll := stateOf(final.Items)
	delete(finalAll, key("zz", "sentinel"))
	finalX := state{}
	for k, v := range finalAll {
		if v.app == "x" {
			finalX[k] = v
		}
	}
	// Every change to the prefix, straight from storage, for the gap check.
	truth := storageRevisions(t, store, sentinel)

	for _, o := range observers {
		if o.err != nil {
			t.Errorf("%s: %v", o.name, o.err)
			continue
		}
		want := finalAll
		if o.sel != nil {
			want = finalX
		}
		got := maps.Clone(o.start)
		last := o.rev
		var revs []int64
		for _, ev := range o.events {
			if ev.Revision <= last {
				t.Errorf("%s: event at %d after %d (order/duplicate)", o.name, ev.Revision, last)
			}
			last = ev.Revision
			revs = append(revs, ev.Revision)
			switch ev.Type {
			case Added:
				if _, ok := got[ev.Item.Key]; ok {
					t.Errorf("%s: Added %s at %d but it exists", o.name, ev.Item.Key, ev.Revision)
				}
				got[ev.Item.Key] = stateEntry{rev: ev.Item.Revision, app: ev.Item.Labels.Get("app")}
			case Modified:
				if _, ok := got[ev.Item.Key]; !ok {
					t.Errorf("%s: Modified %s at %d but it is absent", o.name, ev.Item.Key, ev.Revision)
				}
				got[ev.Item.Key] = stateEntry{rev: ev.Item.Revision, app: ev.Item.Labels.Get("app")}
			case Deleted:
				if _, ok := got[ev.Item.Key]; !ok {
					t.Errorf("%s: Deleted %s at %d but it is absent", o.name, ev.Item.Key, ev.Revision)
				}
				delete(got, ev.Item.Key)
			default:
				t.Errorf("%s: unexpected %s", o.name, evString(ev))
			}
		}
		t.Logf("%s: from %d, %d events", o.name, o.rev, len(o.events))
		if !maps.Equal(got, want) {
			t.Errorf("%s (from %d, %d events): replayed state differs from the final state:\n got %v\nwant %v", o.name, o.rev, len(o.events), got, want)
		}
		if o.sel == nil {
			var wantRevs []int64
			for _, rev := range truth {
				if rev > o.rev {
					wantRevs = append(wantRevs, rev)
				}
			}
			if fmt.Sprint(revs) != fmt.Sprint(wantRevs) {
				t.Errorf("%s: revisions delivered\n %v\nwant\n %v", o.name, revs, wantRevs)
			}
		}
	}
}

// begin reads the observer's starting state and starts its watch.
func (o *observer) begin(ctx context.Context, c *Cache, kind string) error {
	var w *Watcher
	var err error
	switch kind {
	case "initial events", "selector initial events":
		w, err = c.Watch(ctx, WatchOptions{SendInitialEvents: ptr(true), AllowBookmarks: true, Labels: o.sel})
		if err != nil {
			return err
		}
		o.start = state{}
		for ev := range w.ResultChan() {
			if ev.Type == Bookmark && ev.InitialEventsEnd {
				o.rev = ev.Revision
				break
			}
			if ev.Type != Added {
				return fmt.Errorf("initial event %s", evString(ev))
			}
			o.start[ev.Item.Key] = stateEntry{rev: ev.Item.Revision, app: ev.Item.Labels.Get("app")}
		}
	default:
		opts := ListOptions{Labels: o.sel}
		if kind == "paged list+watch" {
			opts.Limit = 3
		}
		var items []*Item
		for {
			res, err := c.List(ctx, opts)
			if err != nil {
				return err
			}
			items = append(items, res.Items...)
			o.rev = res.ResourceVersion
			if res.Continue == "" {
				break
			}
			opts.Continue = res.Continue
		}
		if kind == "rewind" && o.rev > 20 {
			// Start from an older revision: exact list there, then the
			// watch replays the window from it.
			o.rev -= 20
			res, err := c.List(ctx, ListOptions{ResourceVersion: strconv.FormatInt(o.rev, 10), ResourceVersionMatch: MatchExact})
			if err != nil {
				return err
			}
			items = res.Items
		}
		if kind == "exact list+watch" {
			// Re-read the same revision exactly: must be the same state.
			res, err := c.List(ctx, ListOptions{ResourceVersion: strconv.FormatInt(o.rev, 10), ResourceVersionMatch: MatchExact})
			if err != nil {
				return err
			}
			if !maps.Equal(stateOf(res.Items), stateOf(items)) {
				return fmt.Errorf("exact list at %d differs from the consistent list at %d", o.rev, o.rev)
			}
		}
		o.start = stateOf(items)
		w, err = c.Watch(ctx, WatchOptions{ResourceVersion: strconv.FormatInt(o.rev, 10), Labels: o.sel})
		if err != nil {
			return err
		}
	}
	go func() {
		defer close(o.done)
		defer w.Stop()
		for ev := range w.ResultChan() {
			if ev.Type == Error {
				o.err = ev.Err
				return
			}
			if ev.Type == Bookmark {
				continue
			}
			if ev.Item.Key == key("zz", "sentinel") {
				return
			}
			o.events = append(o.events, ev)
		}
		o.err = errors.New("watch closed before the sentinel")
	}()
	return nil
}

// storageRevisions lists the revisions of every change under the prefix up
// to end, from a storage watch from the beginning.
func storageRevisions(t *testing.T, store storage.Interface, end int64) []int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var revs []int64
	for ev := range store.Watch(ctx, testPrefix, 1) {
		switch ev.Type {
		case storage.EventError:
			t.Fatalf("storage watch: %v", ev.Err)
		case storage.EventPut, storage.EventDelete:
			if ev.Revision < end {
				revs = append(revs, ev.Revision)
			}
			if ev.Revision >= end {
				return revs
			}
		}
	}
	t.Fatal("storage watch ended early")
	return nil
}
