package handler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/crdserver/crdserver/internal/registry"
	"github.com/crdserver/crdserver/internal/storage"
	"github.com/crdserver/crdserver/internal/storage/memory"
	"github.com/crdserver/crdserver/internal/watchcache"
)

// gatedStorage counts Gets, and holds back the events its watches carry
// while held, so that a watch cache over it falls behind storage.
type gatedStorage struct {
	storage.Interface
	gets atomic.Int64
	gate sync.RWMutex // write-locked: events wait
}

func (s *gatedStorage) Get(ctx context.Context, key string) (storage.KeyValue, error) {
	s.gets.Add(1)
	return s.Interface.Get(ctx, key)
}

func (s *gatedStorage) Watch(ctx context.Context, prefix string, fromRev int64) <-chan storage.Event {
	in := s.Interface.Watch(ctx, prefix, fromRev)
	out := make(chan storage.Event)
	go func() {
		defer close(out)
		for ev := range in {
			s.gate.RLock()
			s.gate.RUnlock()
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// deleteRig is one resource's storage and watch cache.
type deleteRig struct {
	t     *testing.T
	store *Store
	back  *gatedStorage
}

func newDeleteRig(t *testing.T) *deleteRig {
	back := &gatedStorage{Interface: memory.New()}
	cache := watchcache.New(back, "/w/", decodeItem, watchcache.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	go cache.Start(ctx)
	t.Cleanup(func() { cancel(); cache.Stop() })
	// Until its first list is in, a cache reads storage.
	if err := cache.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	return &deleteRig{t: t, store: &Store{Storage: back, Cache: cache, Prefix: "/w/"}, back: back}
}

// put writes name's object in storage (created or replaced).
func (r *deleteRig) put(name, uid, finalizers string) int64 {
	r.t.Helper()
	body := []byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{` + finalizers + `"name":"` + name + `","namespace":"ns","uid":"` + uid + `"}}`)
	key := r.store.Key("ns", name)
	kv, err := r.store.Storage.Get(context.Background(), key)
	var rev int64
	switch {
	case errors.Is(err, storage.ErrNotFound):
		rev, err = r.store.Storage.Create(context.Background(), key, body)
	case err == nil:
		rev, err = r.store.Storage.Update(context.Background(), key, body, kv.ModRevision)
	}
	if err != nil {
		r.t.Fatal(err)
	}
	return rev
}

// cached waits until the cache holds name at rev.
func (r *deleteRig) cached(name string, rev int64) {
	r.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		it, err := r.store.Cache.Get(context.Background(), r.store.Key("ns", name), watchcache.GetOptions{ResourceVersion: "0"})
		if err == nil && it.Revision == rev {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("the cache never held %s at %d", name, rev)
		}
	}
}

// exists reports whether name is in storage (read past the Get count).
func (r *deleteRig) exists(name string) bool {
	_, err := r.store.Storage.(*gatedStorage).Interface.Get(context.Background(), r.store.Key("ns", name))
	return err == nil
}

type waitsHooks struct{}

func (waitsHooks) Pending(map[string]any) bool                        { return false }
func (waitsHooks) MarkDeleting(map[string]any, *metav1.DeleteOptions) {}
func (waitsHooks) PreconditionFailed(name, field, want, have string) error {
	return fmt.Errorf("%s precondition", field)
}

var _ registry.Finalizer = waitsHooks{}

// TestDeleteCached: a delete that needs nothing from the object but its
// uid deletes the cached copy at its revision without reading storage;
// anything else (finalizers, options that add them, a dry run, unmet
// preconditions, a copy behind storage or none) is left to the ordinary
// delete, with storage untouched.
func TestDeleteCached(t *testing.T) {
	widgets := &registry.Definition{Group: "example.com", Resource: "widgets", Kind: "Widget"}
	withHooks := &registry.Definition{Group: "example.com", Resource: "widgets", Kind: "Widget", Hooks: waitsHooks{}}
	ptr := func(s string) *string { return &s }
	policy := func(p metav1.DeletionPropagation) *metav1.DeletionPropagation { return &p }
	yes, no := true, false
	cases := []struct {
		name       string
		def        *registry.Definition
		finalizers string // the object's, as JSON members
		opts       func(rev int64) metav1.DeleteOptions
		behind     bool // the object changes in storage after the cache saw it
		uncached   bool // the object is created in storage behind the cache
		done       bool
	}{
		{name: "plain", done: true},
		{name: "background", opts: func(int64) metav1.DeleteOptions {
			return metav1.DeleteOptions{PropagationPolicy: policy(metav1.DeletePropagationBackground)}
		}, done: true},
		{name: "orphanDependents false", opts: func(int64) metav1.DeleteOptions { return metav1.DeleteOptions{OrphanDependents: &no} }, done: true}, //nolint:staticcheck
		{name: "empty finalizers", finalizers: `"finalizers":[],`, done: true},
		{name: "uid and resourceVersion preconditions met", opts: func(rev int64) metav1.DeleteOptions {
			uid := types.UID("uid-1")
			return metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: ptr(rvString(rev))}}
		}, done: true},
		{name: "finalizers", finalizers: `"finalizers":["example.com/hold"],`},
		{name: "foreground", opts: func(int64) metav1.DeleteOptions {
			return metav1.DeleteOptions{PropagationPolicy: policy(metav1.DeletePropagationForeground)}
		}},
		{name: "orphan", opts: func(int64) metav1.DeleteOptions {
			return metav1.DeleteOptions{PropagationPolicy: policy(metav1.DeletePropagationOrphan)}
		}},
		{name: "orphanDependents true", opts: func(int64) metav1.DeleteOptions { return metav1.DeleteOptions{OrphanDependents: &yes} }}, //nolint:staticcheck
		{name: "dry run", opts: func(int64) metav1.DeleteOptions { return metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}} }},
		{name: "uid precondition unmet", opts: func(int64) metav1.DeleteOptions {
			uid := types.UID("other")
			return metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
		}},
		{name: "resourceVersion precondition unmet", opts: func(rev int64) metav1.DeleteOptions {
			return metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: ptr(rvString(rev + 100))}}
		}},
		{name: "a resource that waits", def: withHooks},
		{name: "copy behind storage", behind: true},
		{name: "not cached yet", uncached: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newDeleteRig(t)
			def := widgets
			if c.def != nil {
				def = c.def
			}
			if c.uncached {
				r.back.gate.Lock()
				defer r.back.gate.Unlock()
			}
			rev := r.put("w", "uid-1", c.finalizers)
			if !c.uncached {
				r.cached("w", rev)
			}
			if c.behind {
				r.back.gate.Lock()
				defer r.back.gate.Unlock()
				rev = r.put("w", "uid-1", c.finalizers)
			}
			opts := metav1.DeleteOptions{}
			if c.opts != nil {
				opts = c.opts(rev)
			}
			gets := r.back.gets.Load()
			uid, done, err := deleteCached(context.Background(), def, r.store, "ns", "w", &opts)
			if err != nil {
				t.Fatal(err)
			}
			if done != c.done {
				t.Fatalf("done %v, want %v", done, c.done)
			}
			if n := r.back.gets.Load() - gets; n != 0 {
				t.Errorf("%d storage reads", n)
			}
			if done && uid != "uid-1" {
				t.Errorf("uid %q, want uid-1", uid)
			}
			if r.exists("w") == done {
				t.Errorf("in storage after the delete: %v", !done)
			}
		})
	}
}

// staleStorage marks every value it reads as stored under an old key.
type staleStorage struct{ storage.Interface }

func (s staleStorage) Get(ctx context.Context, key string) (storage.KeyValue, error) {
	kv, err := s.Interface.Get(ctx, key)
	kv.Stale = true
	return kv, err
}

// TestStoredAs: a write that seems not to change the cached copy asks
// storage whether it still holds that revision, and then whether it holds
// the same bytes.
func TestStoredAs(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	rev, err := st.Create(ctx, "/k", []byte(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name               string
		st                 storage.Interface
		key                string
		rev                int64
		data               string
		unchanged, current bool
	}{
		{name: "same revision and bytes", st: st, key: "/k", rev: rev, data: `{"a":1}`, unchanged: true, current: true},
		{name: "same revision, other bytes", st: st, key: "/k", rev: rev, data: `{"a":2}`, current: true},
		{name: "same revision and bytes, old encryption key", st: staleStorage{st}, key: "/k", rev: rev, data: `{"a":1}`, current: true},
		{name: "another revision", st: st, key: "/k", rev: rev - 1, data: `{"a":1}`},
		{name: "gone", st: st, key: "/gone", rev: rev, data: `{"a":1}`},
	}
	for _, c := range cases {
		unchanged, current, err := storedAs(ctx, c.st, c.key, c.rev, []byte(c.data))
		if err != nil || unchanged != c.unchanged || current != c.current {
			t.Errorf("%s: unchanged %v current %v (%v), want %v %v", c.name, unchanged, current, err, c.unchanged, c.current)
		}
	}
}
