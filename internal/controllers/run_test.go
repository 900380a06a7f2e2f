package controllers_test

import (
	"context"
	"encoding/json"
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
	backend, err := etcd.New(context.Background(), etcd.Config{Endpoints: etcdtest.StartEmbedded(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { backend.Close() })
	terminating := `{"metadata":{"name":"x","deletionTimestamp":"2026-01-01T00:00:00Z"}}`
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
			if _, err := backend.Create(context.Background(), prefix+"x", []byte(terminating)); err != nil {
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
	return &watchcache.Item{Key: key, Revision: rev, Name: name, JSON: data}, nil
}
