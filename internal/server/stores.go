package server

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/handler"
	"github.com/crdserver/crdserver/internal/metrics"
	"github.com/crdserver/crdserver/internal/registry"
	"github.com/crdserver/crdserver/internal/storage"
	"github.com/crdserver/crdserver/internal/storage/encrypt"
	"github.com/crdserver/crdserver/internal/watchcache"
)

// stores owns one handler.Store (key prefix + watch cache) per resource.
// Caches start when a definition appears and stop when it goes.
type stores struct {
	ctx     context.Context
	backend storage.Interface
	reg     *registry.Registry
	prefix  string
	log     *slog.Logger
	metrics *metrics.Metrics // times each resource's storage requests
	// encryption encrypts the values of the resources it lists; set
	// before the first store starts.
	encryption *encrypt.Config

	// settled is set once every built-in cache is ready: caches started
	// from then on (a CRD's, as it is created or changed) list at the
	// current revision, and only those the server starts with backfill.
	settled atomic.Bool

	mu sync.RWMutex
	m  map[schema.GroupResource]*entry
}

// startBackfill is how many revisions back a cache started with the server
// begins its window (watchcache.Options.Backfill): enough for the writes
// of a restart, so that informers resume their watches across it, and for
// a new server's first writes, which upstream's caches, started before
// any write, cover.
const startBackfill = 1000

// entry is one storage's store. Resources that share a storage share
// their entry: the map holds it under each of their names, and gr is the
// storage's own.
type entry struct {
	gr     schema.GroupResource
	store  *handler.Store
	cancel context.CancelFunc
	// custom marks a custom resource's store, which readiness does not
	// wait for (see ready).
	custom bool
}

var _ handler.Stores = (*stores)(nil)

func newStores(ctx context.Context, backend storage.Interface, reg *registry.Registry, prefix string, log *slog.Logger, m *metrics.Metrics) *stores {
	return &stores{ctx: ctx, backend: backend, reg: reg, prefix: prefix, log: log, metrics: m, m: map[schema.GroupResource]*entry{}}
}

// keyPrefix is upstream's layout: /registry/<resource>/ for the core group,
// /registry/<group>/<resource>/ otherwise.
func (s *stores) keyPrefix(gr schema.GroupResource) string { return keyPrefix(s.prefix, gr) }

func keyPrefix(prefix string, gr schema.GroupResource) string {
	if gr.Group == "" {
		return prefix + "/" + gr.Resource + "/"
	}
	return prefix + "/" + gr.Group + "/" + gr.Resource + "/"
}

// ensure starts the store of def if it has none. A definition stored as
// another resource (Definition.StoredAs) gets that resource's store, the
// same entry, started if need be: one key prefix and one watch cache,
// never two caches on one prefix.
func (s *stores) ensure(def *registry.Definition) *handler.Store {
	gr := def.GroupResource()
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.m[gr]; ok {
		return e.store
	}
	sgr := def.StorageGroupResource()
	e, ok := s.m[sgr]
	if !ok {
		s.startLocked(sgr)
		e = s.m[sgr]
		e.custom = def.Hooks == nil
	}
	s.m[gr] = e
	return e.store
}

// replace starts a new store for gr in place of the current one, in one
// step, so that requests always find a store.
func (s *stores) replace(gr schema.GroupResource) {
	s.mu.Lock()
	defer s.mu.Unlock()
	custom := false
	if e, ok := s.m[gr]; ok {
		e.cancel()
		custom = e.custom
	}
	s.startLocked(gr)
	s.m[gr].custom = custom
}

// startLocked starts gr's store; s.mu is held.
func (s *stores) startLocked(gr schema.GroupResource) *handler.Store {
	prefix := s.keyPrefix(gr)
	current := func() *registry.Definition {
		d, _ := s.reg.Current().Lookup(gr.Group, gr.Resource)
		return d
	}
	backend := s.metrics.Storage(encrypt.Wrap(s.backend, s.encryption.For(gr)), gr)
	opts := watchcache.Options{Logger: s.log.With("resource", gr.String())}
	if !s.settled.Load() {
		opts.Backfill = startBackfill
	}
	cache := watchcache.New(backend, prefix, handler.ItemDecoder(current), opts)
	ctx, cancel := context.WithCancel(s.ctx)
	go cache.Start(ctx)
	st := &handler.Store{Storage: backend, Cache: cache, Prefix: prefix}
	s.m[gr] = &entry{gr: gr, store: st, cancel: cancel}
	return st
}

func (s *stores) Store(gr schema.GroupResource) (*handler.Store, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, ok := s.m[gr]
	if !ok {
		return nil, false
	}
	return e.store, true
}

// ready reports whether every built-in resource's cache has been filled.
// Custom resources' caches fill in the background: until one has, reads
// of that resource go to storage and watches get upstream's 429 "storage
// is (re)initializing" with Retry-After, so a server with hundreds of CRDs
// is ready as soon as it serves their routes. Upstream's readiness does
// not wait for custom resource caches either.
func (s *stores) ready() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, e := range s.m {
		if !e.custom && !e.store.Cache.Ready() {
			return false
		}
	}
	s.settled.Store(true)
	return true
}

// readyOf reports whether the caches of grs are filled (a resource not
// served counts as ready: there is nothing to wait for).
func (s *stores) readyOf(grs ...schema.GroupResource) bool {
	for _, gr := range grs {
		if st, ok := s.Store(gr); ok && !st.Cache.Ready() {
			return false
		}
	}
	return true
}

// stats reads every cache's numbers for /metrics.
func (s *stores) stats() []metrics.CacheStats {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]metrics.CacheStats, 0, len(s.m))
	for gr, e := range s.m {
		if gr != e.gr {
			continue // a shared storage counts once, under its own name
		}
		st := e.store.Cache.Stats()
		out = append(out, metrics.CacheStats{GroupResource: gr, Objects: st.Objects,
			EventsReceived: st.EventsReceived, EventsDispatched: st.EventsDispatched, TerminatedWatchers: st.TerminatedWatchers})
	}
	return out
}

func (s *stores) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for gr, e := range s.m {
		e.cancel()
		delete(s.m, gr)
	}
}

// retain stops the stores of every resource not in keep.
func (s *stores) retain(keep map[schema.GroupResource]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for gr, e := range s.m {
		if !keep[gr] {
			if gr == e.gr { // not only a name for another storage
				e.cancel()
			}
			delete(s.m, gr)
		}
	}
}

// typedConversionCache bounds, per definition stored as another resource,
// the bytes of converted objects kept for its readers (see
// conversion.NewTyped).
const typedConversionCache = 8 << 20
