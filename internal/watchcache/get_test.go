package watchcache

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"

	"github.com/crdserver/crdserver/internal/storage"
)

func TestGetResourceVersions(t *testing.T) { forEachBackend(t, testGetResourceVersions) }

func testGetResourceVersions(t *testing.T, newStore func(testing.TB) storage.Interface) {
	r := newRig(t, newStore(t), Options{})
	r.create("a", "x")
	cur := r.update("a", "x", "v", "2")
	r.waitRev(cur)
	for _, tc := range []struct {
		rv      string
		key     string
		wantRev int64 // 0: not found
	}{
		{rv: "", key: key("a", "x"), wantRev: cur},
		{rv: "0", key: key("a", "x"), wantRev: cur},
		{rv: strconv.FormatInt(cur, 10), key: key("a", "x"), wantRev: cur},
		{rv: "1", key: key("a", "x"), wantRev: cur}, // not older than: the latest
		{rv: "", key: key("a", "missing")},
		{rv: "0", key: key("a", "missing")},
		{rv: strconv.FormatInt(cur, 10), key: key("a", "missing")},
	} {
		t.Run(fmt.Sprintf("rv=%q/%s", tc.rv, tc.key), func(t *testing.T) {
			it, err := r.cache.Get(context.Background(), tc.key, GetOptions{ResourceVersion: tc.rv})
			if tc.wantRev == 0 {
				if !errors.Is(err, storage.ErrNotFound) {
					t.Fatalf("got %v, %v; want storage.ErrNotFound", it, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if it.Revision != tc.wantRev || it.Labels.Get("v") != "2" {
				t.Errorf("got rev %d labels %v, want rev %d v=2", it.Revision, it.Labels, tc.wantRev)
			}
		})
	}
	if _, err := r.cache.Get(context.Background(), key("a", "x"), GetOptions{ResourceVersion: "abc"}); !apierrors.IsBadRequest(err) {
		t.Errorf("rv abc: %v, want 400", err)
	}
}

func TestGetTooLargeResourceVersion(t *testing.T) {
	r := newMemRig(t, Options{})
	cur := r.waitRevOf(r.create("a", "x"))
	done := make(chan struct{})
	var err error
	go func() {
		defer close(done)
		_, err = r.cache.Get(context.Background(), key("a", "x"), GetOptions{ResourceVersion: strconv.FormatInt(cur+100, 10)})
	}()
	r.stepUntil(done, 500*time.Millisecond)
	if !IsTooLargeResourceVersion(err) {
		t.Fatalf("err = %v, want 504 Timeout with ResourceVersionTooLarge", err)
	}
}

// A consistent get on an idle prefix is served from the cache once a
// progress notification says it is current.
func TestGetConsistentIdlePrefix(t *testing.T) {
	r := newMemRig(t, Options{})
	rev := r.create("a", "x")
	if _, err := r.store.Create(r.ctx, "/registry/other/1", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	var it *Item
	var err error
	r.ticking(func() { it, err = r.cache.Get(context.Background(), key("a", "x"), GetOptions{}) })
	if err != nil || it.Revision != rev {
		t.Fatalf("got %v, %v; want rev %d", it, err, rev)
	}
	if storeRev, _ := r.store.CurrentRevision(r.ctx); r.cache.Revision() < storeRev {
		t.Errorf("cache at %d after a consistent get, storage at %d", r.cache.Revision(), storeRev)
	}
}

// When the cache can't catch up in time, a consistent get reads storage.
func TestGetConsistentFallsBackToStorage(t *testing.T) {
	r := newMemRig(t, Options{})
	r.waitRev(r.create("a", "x"))
	r.mem.setNoProgress(true)
	if _, err := r.store.Create(r.ctx, "/registry/other/1", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var it *Item
	var err error
	go func() {
		defer close(done)
		it, err = r.cache.Get(context.Background(), key("a", "x"), GetOptions{})
	}()
	r.stepUntil(done, 500*time.Millisecond)
	if err != nil || it.Name != "x" {
		t.Fatalf("got %v, %v", it, err)
	}
}

// TestSilentWatchRestarted: a watch that stops hearing anything (its
// stream served by a member that answers reads but sends nothing) is
// noticed by the first consistent read that waits for it in vain, which
// reads storage and has storage restart the watch; the cache then catches
// up from its revision, without a relist, and its watchers get the event.
// A read that finds the cache moving, however slowly, restarts nothing.
func TestSilentWatchRestarted(t *testing.T) {
	mem := newMemStore()
	r := newRig(t, restartable{mem}, Options{})
	r.waitRev(r.create("a", "x"))
	w, err := r.cache.Watch(r.ctx, WatchOptions{ResourceVersion: strconv.FormatInt(r.cache.Revision(), 10)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	lists := mem.listCalls()

	mem.setSilent(true)
	rev := r.update("a", "x", "k", "v")
	done := make(chan struct{})
	var it *Item
	go func() {
		defer close(done)
		it, err = r.cache.Get(context.Background(), key("a", "x"), GetOptions{})
	}()
	r.stepUntil(done, 500*time.Millisecond)
	if err != nil || it.Revision != rev {
		t.Fatalf("get while silent: %v, %v; want the object at %d from storage", it, err, rev)
	}
	if n := mem.restartCount(); n != 1 {
		t.Fatalf("watch restarted %d times, want 1", n)
	}
	r.waitRev(rev)
	if got := mem.listCalls(); got != lists {
		t.Errorf("the cache listed storage %d times to catch up, want resuming its watch", got-lists)
	}
	select {
	case ev := <-w.ResultChan():
		if ev.Item == nil || ev.Item.Revision != rev {
			t.Errorf("watcher got %+v, want the update at %d", ev, rev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("watcher got nothing after the restart")
	}

	// The store answers again: reads are served by the cache and restart
	// nothing.
	if _, err := r.cache.Get(context.Background(), key("a", "x"), GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := mem.restartCount(); n != 1 {
		t.Errorf("watch restarted %d times in all, want 1", n)
	}
}

func TestGetNotReady(t *testing.T) {
	store := newMemStore()
	rev, err := store.Create(context.Background(), key("a", "x"), object("a", "x"))
	if err != nil {
		t.Fatal(err)
	}
	c := New(store, testPrefix, testDecode, Options{Logger: slog.New(slog.DiscardHandler)})
	defer c.Stop()
	for _, rv := range []string{"", "0", strconv.FormatInt(rev, 10)} {
		it, err := c.Get(context.Background(), key("a", "x"), GetOptions{ResourceVersion: rv})
		if err != nil || it.Revision != rev {
			t.Errorf("rv %q: got %v, %v", rv, it, err)
		}
	}
	if _, err := c.Get(context.Background(), key("a", "y"), GetOptions{}); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("missing: %v, want storage.ErrNotFound", err)
	}
	if _, err := c.Get(context.Background(), key("a", "x"), GetOptions{ResourceVersion: "50"}); !IsTooLargeResourceVersion(err) {
		t.Errorf("future revision: %v, want 504", err)
	}
}

// A consistent get right after an acknowledged write sees it, with writers
// and readers running concurrently.
func TestGetReadsItsWrites(t *testing.T) { forEachBackend(t, testGetReadsItsWrites) }

func testGetReadsItsWrites(t *testing.T, newStore func(testing.TB) storage.Interface) {
	r := newRig(t, newStore(t), Options{Clock: clock.RealClock{}})
	const writers, writes = 4, 25
	for w := range writers {
		r.create("a", fmt.Sprintf("w%d", w))
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			name := fmt.Sprintf("w%d", w)
			for i := range writes {
				old, err := r.store.Get(r.ctx, key("a", name))
				if err != nil {
					t.Error(err)
					return
				}
				rev, err := r.store.Update(r.ctx, key("a", name), object("a", name, "i", strconv.Itoa(i)), old.ModRevision)
				if err != nil {
					t.Error(err)
					return
				}
				it, err := r.cache.Get(context.Background(), key("a", name), GetOptions{})
				if err != nil {
					t.Error(err)
					return
				}
				if it.Revision < rev || it.Labels.Get("i") != strconv.Itoa(i) {
					t.Errorf("%s: got rev %d i=%s after writing rev %d i=%d", name, it.Revision, it.Labels.Get("i"), rev, i)
					return
				}
			}
		})
	}
	wg.Wait()
}

// Concurrent callers share revision reads, and none gets a revision read
// by a request that began before it arrived.
func TestRevCoalescer(t *testing.T) {
	var started, calls atomic.Int64
	r := &revCoalescer{fetch: func(ctx context.Context) (int64, error) {
		n := started.Add(1) // the revision is the read's start order
		time.Sleep(200 * time.Microsecond)
		return n, nil
	}}
	const callers, rounds = 32, 50
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for range rounds {
				before := started.Load()
				rev, err := r.current(context.Background())
				calls.Add(1)
				if err != nil {
					t.Error(err)
					return
				}
				if rev <= before {
					t.Errorf("got the read started %d, which began before the caller arrived (%d had)", rev, before)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := started.Load(); n*4 > calls.Load() {
		t.Errorf("%d reads for %d calls, want sharing", n, calls.Load())
	}
}

// A caller whose context ends stops waiting; the shared read goes on for
// the others.
func TestRevCoalescerCancel(t *testing.T) {
	release := make(chan struct{})
	var fetches atomic.Int64
	r := &revCoalescer{fetch: func(ctx context.Context) (int64, error) {
		n := fetches.Add(1)
		if n == 1 {
			<-release
		}
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		return n * 10, nil
	}}
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := r.current(ctx)
		first <- err
	}()
	for fetches.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	second := make(chan int64, 1)
	go func() {
		rev, err := r.current(context.Background())
		if err != nil {
			t.Error(err)
		}
		second <- rev
	}()
	cancel()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled caller: %v", err)
	}
	close(release)
	// The second caller arrived while the first read was in flight, so it
	// gets the next one.
	if rev := <-second; rev != 20 {
		t.Errorf("second caller got %d, want 20 (the read after its arrival)", rev)
	}
}

// Under load reads begin spacing apart, and the callers that arrive while
// a read waits to begin share it; a caller that finds the coalescer idle
// waits for nothing.
func TestRevCoalescerSpacing(t *testing.T) {
	var fetches atomic.Int64
	release := make(chan struct{}, 1)
	slept := make(chan time.Duration)
	wake := make(chan struct{})
	r := &revCoalescer{
		fetch: func(context.Context) (int64, error) {
			n := fetches.Add(1)
			if n == 3 {
				<-release
			}
			return n, nil
		},
		spacing: time.Hour,
		sleep: func(d time.Duration) {
			slept <- d
			<-wake
		},
	}
	// An idle coalescer reads at once, however recent the last read.
	for want := int64(1); want <= 2; want++ {
		if rev, err := r.current(context.Background()); err != nil || rev != want {
			t.Fatalf("read on an idle coalescer: %d, %v; want %d at once", rev, err, want)
		}
	}
	// Callers arriving while a read is in flight queue behind it; the
	// queued read waits out the spacing, and more callers join it.
	revs := make(chan int64, 4)
	call := func() {
		rev, err := r.current(context.Background())
		if err != nil {
			t.Error(err)
		}
		revs <- rev
	}
	go call() // starts read 3, held until release
	waitFor(t, func() bool { return fetches.Load() == 3 })
	go call()
	go call() // both queued for read 4
	waitFor(t, func() bool { r.mu.Lock(); defer r.mu.Unlock(); return r.next != nil && r.next.callers == 2 })
	release <- struct{}{}
	if d := <-slept; d <= 0 || d > time.Hour {
		t.Errorf("slept %v, want up to the spacing", d)
	}
	go call() // joins read 4, which has not begun
	waitFor(t, func() bool { r.mu.Lock(); defer r.mu.Unlock(); return r.inflight.callers == 3 })
	close(wake)
	got := map[int64]int{}
	for range 4 {
		got[<-revs]++
	}
	if got[3] != 1 || got[4] != 3 {
		t.Errorf("callers got reads %v, want one read 3 and three read 4", got)
	}
	if n := fetches.Load(); n != 4 {
		t.Errorf("%d reads, want 4", n)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
	}
}

// A coalescer over storage that knows its revision in-process reads it
// directly: nothing to share, so no caller waits for a round trip. Storage
// that declines falls back to the shared read.
func TestRevCoalescerLocal(t *testing.T) {
	var fetches atomic.Int64
	localOK := true
	r := &revCoalescer{
		fetch: func(context.Context) (int64, error) { return 100 + fetches.Add(1), nil },
		local: func() (int64, bool) { return 7, localOK },
	}
	for range 3 {
		if rev, err := r.current(context.Background()); err != nil || rev != 7 {
			t.Fatalf("current = %d, %v; want the local revision 7", rev, err)
		}
	}
	if n := fetches.Load(); n != 0 {
		t.Errorf("%d round trips with a local revision, want 0", n)
	}
	localOK = false
	if rev, err := r.current(context.Background()); err != nil || rev != 101 {
		t.Errorf("current without a local revision = %d, %v; want the read 101", rev, err)
	}
}

// A queued read waits, after the previous read ended, as long as that read
// took: reads under load then run at most half as often as back to back.
// The pause is at least the spacing and at most revReadGapMax.
func TestRevCoalescerGap(t *testing.T) {
	for _, tc := range []struct {
		took, want time.Duration
	}{
		{4 * time.Millisecond, 4 * time.Millisecond},
		{time.Microsecond, time.Millisecond}, // the spacing
		{time.Second, revReadGapMax},
	} {
		var mu sync.Mutex
		now := time.Unix(0, 0)
		release := make(chan struct{})
		slept := make(chan time.Duration, 1)
		var fetches atomic.Int64
		r := &revCoalescer{
			fetch: func(context.Context) (int64, error) {
				n := fetches.Add(1)
				if n == 1 {
					<-release
					mu.Lock()
					now = now.Add(tc.took)
					mu.Unlock()
				}
				return n, nil
			},
			spacing: time.Millisecond,
			sleep:   func(d time.Duration) { slept <- d },
			now:     func() time.Time { mu.Lock(); defer mu.Unlock(); return now },
		}
		done := make(chan int64, 2)
		go func() { rev, _ := r.current(context.Background()); done <- rev }()
		waitFor(t, func() bool { return fetches.Load() == 1 })
		go func() { rev, _ := r.current(context.Background()); done <- rev }()
		waitFor(t, func() bool { r.mu.Lock(); defer r.mu.Unlock(); return r.next != nil })
		close(release)
		if d := <-slept; d != tc.want {
			t.Errorf("read took %v: queued read waited %v, want %v", tc.took, d, tc.want)
		}
		<-done
		<-done
	}
}

// Reads waiting for the cache when it stops (its resource changed: a new
// schema starts a new cache) are answered from storage, as upstream's
// requests finish on the storage they started with, not with a 503.
func TestReadsWaitingWhenStopped(t *testing.T) {
	r := newMemRig(t, Options{})
	rev := r.waitRevOf(r.create("a", "x"))
	r.mem.setNoProgress(true)
	if _, err := r.store.Create(r.ctx, "/registry/other/1", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	type result struct {
		what  string
		names []string
		err   error
	}
	results := make(chan result, 3)
	go func() {
		it, err := r.cache.Get(context.Background(), key("a", "x"), GetOptions{})
		if err != nil {
			results <- result{what: "consistent get", err: err}
			return
		}
		results <- result{what: "consistent get", names: []string{it.Name}}
	}()
	for _, opts := range []ListOptions{{}, {ResourceVersion: strconv.FormatInt(rev+1, 10)}} {
		go func() {
			res, err := r.cache.List(context.Background(), opts)
			what := fmt.Sprintf("list at %q", opts.ResourceVersion)
			if err != nil {
				results <- result{what: what, err: err}
				return
			}
			var names []string
			for _, it := range res.Items {
				names = append(names, it.Name)
			}
			results <- result{what: what, names: names}
		}()
	}
	time.Sleep(100 * time.Millisecond) // all three wait: the cache is behind, and the clock stands still
	r.cache.Stop()
	for range 3 {
		select {
		case res := <-results:
			if res.err != nil || len(res.names) != 1 || res.names[0] != "x" {
				t.Errorf("%s: %v, %v; want x from storage", res.what, res.names, res.err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a read still waits after the cache stopped")
		}
	}
}
