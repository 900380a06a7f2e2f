package controllers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crdserver/crdserver/internal/controllers"
	"github.com/crdserver/crdserver/internal/storage/etcd"
	"github.com/crdserver/crdserver/internal/storage/etcdtest"
	"github.com/crdserver/crdserver/internal/watchcache"
)

// busy is a controller dependency whose work blocks: it reports when the
// controller is inside it and, once the controller's context has ended,
// keeps it there until release is closed.
type busy struct {
	entered chan struct{} // closed on the first call
	release chan struct{}
	inside  atomic.Int32
	once    atomic.Bool
}

func newBusy() *busy {
	return &busy{entered: make(chan struct{}), release: make(chan struct{})}
}

func (b *busy) work(ctx context.Context) {
	b.inside.Add(1)
	defer b.inside.Add(-1)
	if b.once.CompareAndSwap(false, true) {
		close(b.entered)
	}
	<-ctx.Done()
	<-b.release
}

// NamespaceContent.
func (b *busy) DeleteContents(ctx context.Context, _ string) (int, error) {
	b.work(ctx)
	return 0, ctx.Err()
}
func (b *busy) Finalize(context.Context, string) error { return nil }

// CRDServer.
func (b *busy) Serve([]map[string]any)                   {}
func (b *busy) SyncStatus(context.Context, string) error { return nil }
func (b *busy) Cleanup(ctx context.Context, _ string) (bool, error) {
	b.work(ctx)
	return false, ctx.Err()
}

// Run returns only after the work it started has returned: the server
// closes storage after Run, so work still running then would fail against
// closed storage.
func TestRunWaitsForWork(t *testing.T) {
	backend := newBackend(t)
	cases := []struct {
		name string
		run  func(ctx context.Context, cache *watchcache.Cache, b *busy)
	}{
		{"namespaces", func(ctx context.Context, cache *watchcache.Cache, b *busy) {
			(&controllers.Namespaces{Cache: cache, Content: b}).Run(ctx)
		}},
		{"crds", func(ctx context.Context, cache *watchcache.Cache, b *busy) {
			(&controllers.CRDs{Cache: cache, Server: b}).Run(ctx)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			prefix := "/test/" + c.name + "/"
			if _, err := backend.Create(context.Background(), prefix+"x", []byte(terminatingNS)); err != nil {
				t.Fatal(err)
			}
			cacheCtx, stopCache := context.WithCancel(context.Background())
			defer stopCache()
			cache := watchcache.New(backend, prefix, decodeItem, watchcache.Options{})
			go cache.Start(cacheCtx)

			b := newBusy()
			ctx, cancel := context.WithCancel(context.Background())
			returned := make(chan struct{})
			go func() {
				defer close(returned)
				c.run(ctx, cache, b)
			}()
			select {
			case <-b.entered:
			case <-time.After(30 * time.Second):
				t.Fatal("the controller never started its work")
			}
			cancel()
			// The work is held after cancel: Run must not return yet. A
			// wrong Run returns at once, well within this bound.
			select {
			case <-returned:
				t.Fatal("Run returned while its work was still running")
			case <-time.After(100 * time.Millisecond):
			}
			close(b.release)
			<-returned
			if n := b.inside.Load(); n != 0 {
				t.Errorf("%d calls still running after Run returned", n)
			}
		})
	}
}

// terminatingNS is an object both controllers act on: a namespace being
// deleted, or a CRD.
const terminatingNS = `{"metadata":{"name":"x","deletionTimestamp":"2026-01-01T00:00:00Z"}}`

func newBackend(t *testing.T) *etcd.Backend {
	t.Helper()
	backend, err := etcd.New(context.Background(), etcd.Config{Endpoints: etcdtest.StartEmbedded(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { backend.Close() })
	return backend
}

func decodeItem(key string, value []byte, rev int64) (*watchcache.Item, error) {
	var obj map[string]any
	if err := json.Unmarshal(value, &obj); err != nil {
		return nil, err
	}
	md, _ := obj["metadata"].(map[string]any)
	md["resourceVersion"] = strconv.FormatInt(rev, 10)
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	name, _ := md["name"].(string)
	if it, ok := controllers.IndexedItem(key, rev, data); ok {
		it.Name = name
		return it, nil
	}
	it := &watchcache.Item{Key: key, Revision: rev, Name: name}
	it.SetJSON(data, nil, nil)
	return it, nil
}

// served records what the CRD controller serves and the namespaces whose
// contents the namespace controller deletes.
type served struct {
	crds    chan int    // sizes of the sets served
	deleted chan string // namespaces emptied
}

func (s *served) Serve(list []map[string]any)              { s.crds <- len(list) }
func (s *served) SyncStatus(context.Context, string) error { return nil }
func (s *served) Cleanup(context.Context, string) (bool, error) {
	return true, nil
}
func (s *served) DeleteContents(_ context.Context, ns string) (int, error) {
	s.deleted <- ns
	return 0, nil
}
func (s *served) Finalize(context.Context, string) error { return nil }

// A controller started before its cache has listed waits for the list
// instead of failing its watch and retrying a second later (which held the
// server's readiness back by that second), and logs nothing.
func TestRunBeforeCacheReady(t *testing.T) {
	backend := newBackend(t)
	cases := []struct {
		name string
		run  func(ctx context.Context, cache *watchcache.Cache, s *served, log *slog.Logger)
		done func(s *served) bool // what the controller did, once it did it
	}{
		{"namespaces", func(ctx context.Context, cache *watchcache.Cache, s *served, log *slog.Logger) {
			(&controllers.Namespaces{Cache: cache, Content: s, Log: log}).Run(ctx)
		}, func(s *served) bool { return <-s.deleted == "x" }},
		{"crds", func(ctx context.Context, cache *watchcache.Cache, s *served, log *slog.Logger) {
			(&controllers.CRDs{Cache: cache, Server: s, Log: log}).Run(ctx)
		}, func(s *served) bool { return <-s.crds == 1 }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			prefix := "/test/early-" + c.name + "/"
			if _, err := backend.Create(context.Background(), prefix+"x", []byte(terminatingNS)); err != nil {
				t.Fatal(err)
			}
			var logged bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logged, nil))
			cache := watchcache.New(backend, prefix, decodeItem, watchcache.Options{})
			s := &served{crds: make(chan int, 10), deleted: make(chan string, 10)}
			ctx, cancel := context.WithCancel(context.Background())
			returned := make(chan struct{})
			go func() {
				defer close(returned)
				c.run(ctx, cache, s, log)
			}()
			time.Sleep(50 * time.Millisecond) // let the controller reach its watch
			cacheCtx, stopCache := context.WithCancel(context.Background())
			defer stopCache()
			go cache.Start(cacheCtx)
			if !c.done(s) {
				t.Error("the controller did not act on the object")
			}
			cancel()
			<-returned
			if logged.Len() > 0 {
				t.Errorf("the controller logged:\n%s", logged.String())
			}
		})
	}
}
