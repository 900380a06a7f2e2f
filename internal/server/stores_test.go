package server

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/handler"
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

// idleStorage backs caches that are never started.
type idleStorage struct{ storage.Interface }

func (idleStorage) CurrentRevision(context.Context) (int64, error) { return 0, nil }
