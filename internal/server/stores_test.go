package server

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/builtin"
	"github.com/crdserver/crdserver/internal/handler"
	"github.com/crdserver/crdserver/internal/registry"
	"github.com/crdserver/crdserver/internal/storage"
	"github.com/crdserver/crdserver/internal/watchcache"
)

// Readiness waits for the built-in resources' caches but not for custom
// resources', which fill in the background (reads meanwhile go to storage).
func TestStoresReady(t *testing.T) {
	unfilled := func(custom bool) *entry {
		return &entry{store: &handler.Store{Cache: watchcache.New(idleStorage{}, "/p/", nil, watchcache.Options{})}, custom: custom}
	}
	s := &stores{m: map[schema.GroupResource]*entry{
		{Group: "example.com", Resource: "widgets"}: unfilled(true),
	}}
	if !s.ready() {
		t.Error("not ready while only a custom resource's cache is filling")
	}
	s.m[schema.GroupResource{Resource: "namespaces"}] = unfilled(false)
	if s.ready() {
		t.Error("ready while the namespaces cache is empty")
	}
}

// idleStorage backs caches that never fill: a cache that starts waits in
// its first list until the test ends.
type idleStorage struct{ storage.Interface }

func (idleStorage) CurrentRevision(context.Context) (int64, error) { return 0, nil }

func (idleStorage) List(ctx context.Context, _ string, _ storage.ListOptions) (storage.ListResult, error) {
	<-ctx.Done()
	return storage.ListResult{}, ctx.Err()
}

// A definition stored as another resource gets that resource's store: one
// key prefix and one cache, counted once, kept while either is served.
func TestStoresShared(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	core, v1 := builtin.Events(time.Hour), builtin.EventsV1(time.Hour)
	reg := registry.New([]*registry.Definition{core, v1})
	s := newStores(ctx, idleStorage{}, reg, "/registry", slog.New(slog.DiscardHandler), nil)
	defer s.stop()
	a := s.ensure(v1) // before its storage's own definition
	b := s.ensure(core)
	if a != b || a.Prefix != "/registry/events/" {
		t.Fatalf("stores %p (%s) and %p (%s), want one at /registry/events/", a, a.Prefix, b, b.Prefix)
	}
	if got := s.stats(); len(got) != 1 || got[0].GroupResource != core.GroupResource() {
		t.Errorf("stats: %+v, want the core events' only", got)
	}
	s.retain(map[schema.GroupResource]bool{core.GroupResource(): true})
	if _, ok := s.Store(v1.GroupResource()); ok {
		t.Error("events.k8s.io store kept after retain without it")
	}
	if st, ok := s.Store(core.GroupResource()); !ok || st != a {
		t.Error("core events store lost with events.k8s.io's")
	}
}
