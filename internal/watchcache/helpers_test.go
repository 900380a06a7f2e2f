package watchcache

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/crdserver/crdserver/internal/storage"
	"github.com/crdserver/crdserver/internal/storage/etcd"
	"github.com/crdserver/crdserver/internal/storage/etcdtest"
)

const testPrefix = "/registry/example.com/widgets/"

// testDecode decodes {"metadata":{name,namespace,labels}} and sets
// metadata.resourceVersion, like the real decoder does for any object.
func testDecode(key string, value []byte, rev int64) (*Item, error) {
	var obj map[string]any
	if err := json.Unmarshal(value, &obj); err != nil {
		return nil, fmt.Errorf("decode %s: %w", key, err)
	}
	md, _ := obj["metadata"].(map[string]any)
	if md == nil {
		return nil, fmt.Errorf("decode %s: no metadata", key)
	}
	md["resourceVersion"] = strconv.FormatInt(rev, 10)
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	it := &Item{Key: key, Revision: rev}
	// Share the metadata's labels, when long enough, as the server
	// shares managedFields' field sets: items must read the same.
	var spans [][2]int
	if i, j := bytes.Index(b, []byte(`"labels":{`)), bytes.IndexByte(b, '}'); i >= 0 && j > i {
		spans = append(spans, [2]int{i, j + 1})
	}
	var set labels.Set
	if l, ok := md["labels"].(map[string]any); ok {
		set = labels.Set{}
		for k, v := range l {
			set[k], _ = v.(string)
		}
	}
	it.SetJSON(b, spans, set)
	it.Name, _ = md["name"].(string)
	it.Namespace, _ = md["namespace"].(string)
	it.Fields = fields.Set{"metadata.name": it.Name}
	if it.Namespace != "" {
		it.Fields["metadata.namespace"] = it.Namespace
	}
	return it, nil
}

func key(ns, name string) string { return testPrefix + ns + "/" + name }

// object returns a stored value; kv are label key/value pairs.
func object(ns, name string, kv ...string) []byte {
	l := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		l[kv[i]] = kv[i+1]
	}
	b, _ := json.Marshal(map[string]any{
		"apiVersion": "example.com/v1",
		"kind":       "Widget",
		"metadata":   map[string]any{"name": name, "namespace": ns, "labels": l},
		"spec":       map[string]any{"size": len(name)},
	})
	return b
}

// rig is a cache over a store, started and ready, with a fake clock.
type rig struct {
	t     testing.TB
	store storage.Interface
	mem   *memStore // nil when store is real etcd
	clock *testingclock.FakeClock
	cache *Cache
	ctx   context.Context
}

func newRig(t testing.TB, store storage.Interface, opts Options) *rig {
	t.Helper()
	clk := testingclock.NewFakeClock(time.Unix(1_700_000_000, 0))
	if opts.Clock == nil {
		opts.Clock = clk
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	r := &rig{t: t, store: store, clock: clk, ctx: context.Background()}
	r.mem, _ = store.(*memStore)
	r.cache = New(store, testPrefix, testDecode, opts)
	ctx, cancel := context.WithCancel(context.Background())
	r.cache.Start(ctx)
	t.Cleanup(func() {
		cancel()
		r.cache.Stop()
	})
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if err := r.cache.WaitReady(wctx); err != nil {
		t.Fatalf("WaitReady: %v", err)
	}
	return r
}

func newMemRig(t testing.TB, opts Options) *rig { return newRig(t, newMemStore(), opts) }

func (r *rig) create(ns, name string, kv ...string) int64 {
	r.t.Helper()
	rev, err := r.store.Create(r.ctx, key(ns, name), object(ns, name, kv...))
	if err != nil {
		r.t.Fatalf("create %s/%s: %v", ns, name, err)
	}
	return rev
}

func (r *rig) update(ns, name string, kv ...string) int64 {
	r.t.Helper()
	kvOld, err := r.store.Get(r.ctx, key(ns, name))
	if err != nil {
		r.t.Fatalf("get %s/%s: %v", ns, name, err)
	}
	rev, err := r.store.Update(r.ctx, key(ns, name), object(ns, name, kv...), kvOld.ModRevision)
	if err != nil {
		r.t.Fatalf("update %s/%s: %v", ns, name, err)
	}
	return rev
}

func (r *rig) delete(ns, name string) int64 {
	r.t.Helper()
	_, rev, err := r.store.Delete(r.ctx, key(ns, name), 0)
	if err != nil {
		r.t.Fatalf("delete %s/%s: %v", ns, name, err)
	}
	return rev
}

// watchNow opens a watch of opts from the cache's current revision,
// stopped when the test ends.
func (r *rig) watchNow(opts WatchOptions) *Watcher {
	r.t.Helper()
	opts.ResourceVersion = strconv.FormatInt(r.cache.Revision(), 10)
	w, err := r.cache.Watch(context.Background(), opts)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(w.Stop)
	return w
}

// waitRev waits (in real time; the cache is driven by storage, not the
// clock) until the cache has applied rev.
func (r *rig) waitRev(rev int64) {
	r.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for r.cache.Revision() < rev {
		if time.Now().After(deadline) {
			r.t.Fatalf("cache stuck at %d, want %d", r.cache.Revision(), rev)
		}
		time.Sleep(time.Millisecond)
	}
}

func (r *rig) waitRevOf(rev int64) int64 {
	r.t.Helper()
	r.waitRev(rev)
	return rev
}

// stepUntil advances the fake clock in steps until done is closed, for
// code waiting on timeouts.
func (r *rig) stepUntil(done <-chan struct{}, step time.Duration) {
	r.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-done:
			return
		default:
		}
		if time.Now().After(deadline) {
			r.t.Fatal("timed out stepping the clock")
		}
		r.clock.Step(step)
		time.Sleep(time.Millisecond)
	}
}

// ticking runs f while stepping the fake clock in real time, 100ms per
// 100ms, so that the cache's timers fire as on a real clock. A cache waiting
// for progress needs them: storage ignores a progress request that comes
// before the cache's watch is established (memStore) or has caught up
// (etcd), and the cache asks again every 100ms.
func (r *rig) ticking(f func()) {
	r.t.Helper()
	const every = 100 * time.Millisecond
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case <-done:
			return
		case <-deadline:
			r.t.Fatal("timed out ticking the clock")
		case <-time.After(every):
			r.clock.Step(every)
		}
	}
}

func names(items []*Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		if it.Namespace != "" {
			out[i] = it.Namespace + "/" + it.Name
		} else {
			out[i] = it.Name
		}
	}
	return out
}

// next reads one event or fails after a real-time timeout.
func next(t testing.TB, w *Watcher) Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch closed")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event")
	}
	return Event{}
}

// noEvent checks that nothing arrives for a short while.
func noEvent(t testing.TB, w *Watcher) {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if ok {
			t.Fatalf("unexpected event %s %v rev %d", ev.Type, itemName(ev.Item), ev.Revision)
		}
		t.Fatal("watch closed unexpectedly")
	case <-time.After(50 * time.Millisecond):
	}
}

// closed waits for the result channel to be closed, draining it, and
// returns what was drained.
func closed(t testing.TB, w *Watcher) []Event {
	t.Helper()
	var evs []Event
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return evs
			}
			evs = append(evs, ev)
		case <-timeout:
			t.Fatal("watch not closed")
		}
	}
}

func itemName(it *Item) string {
	if it == nil {
		return "<nil>"
	}
	return it.Namespace + "/" + it.Name
}

func evString(ev Event) string {
	switch ev.Type {
	case Bookmark:
		return fmt.Sprintf("BOOKMARK@%d end=%v", ev.Revision, ev.InitialEventsEnd)
	case Error:
		return fmt.Sprintf("ERROR %v", ev.Err)
	}
	return fmt.Sprintf("%s %s@%d", ev.Type, itemName(ev.Item), ev.Item.Revision)
}

func ptr[T any](v T) *T { return &v }

// listCalls counts storage lists (0 for real etcd, which doesn't count).
func (r *rig) listCalls() int {
	if r.mem == nil {
		return 0
	}
	return r.mem.listCalls()
}

// compact compacts storage's history before rev.
func (r *rig) compact(rev int64) {
	r.t.Helper()
	if r.mem != nil {
		r.mem.compact(rev)
		return
	}
	c, ok := r.store.(interface {
		Compact(context.Context, int64) error
	})
	if !ok {
		r.t.Skip("storage can't compact")
	}
	if err := c.Compact(context.Background(), rev); err != nil {
		r.t.Fatalf("compact %d: %v", rev, err)
	}
}

// forEachBackend runs a test against the in-memory fake and, unless
// -short, against a real (embedded) etcd.
func forEachBackend(t *testing.T, test func(*testing.T, func(testing.TB) storage.Interface)) {
	t.Run("mem", func(t *testing.T) {
		test(t, func(testing.TB) storage.Interface { return newMemStore() })
	})
	t.Run("etcd", func(t *testing.T) {
		if testing.Short() {
			t.Skip("-short: no etcd")
		}
		test(t, newEtcd)
	})
}

func newEtcd(t testing.TB) storage.Interface {
	t.Helper()
	endpoints := etcdtest.StartEmbedded(t)
	b, err := etcd.New(context.Background(), etcd.Config{Endpoints: endpoints, DialTimeout: 10 * time.Second, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}
