package controllers

import (
	"context"
	"log/slog"
	"sync"
	"time"

	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/crdserver/crdserver/internal/watchcache"
)

// CRDServer is what the CRD controller needs from the server.
type CRDServer interface {
	// Serve makes the registry serve exactly these CRDs (those whose names
	// are accepted), adding and removing routes and stores.
	Serve(crds []map[string]any)
	// SyncStatus recomputes a CRD's conditions and accepted names against
	// all CRDs and writes them if they changed (compare-and-swap); then
	// those of the CRDs of its group whose names it may have freed. name
	// may be a CRD that no longer exists.
	SyncStatus(ctx context.Context, name string) error
	// Cleanup deletes a terminating CRD's instances and, once none remain,
	// removes its cleanup finalizer. It reports whether it is finished.
	Cleanup(ctx context.Context, name string) (done bool, err error)
}

// CRDs keeps the server's routes in line with the stored CRDs, keeps their
// status conditions, and cleans up deleted ones. Every replica runs it: the
// routes are each replica's own, and status writes and cleanup are
// compare-and-swap, so replicas converge.
type CRDs struct {
	Cache  *watchcache.Cache // the CRDs watch cache
	Server CRDServer
	Log    *slog.Logger

	mu       sync.Mutex
	cleaning map[string]bool
	// cleanups counts the running cleanup goroutines; Run waits for them.
	cleanups sync.WaitGroup
}

// Run works until ctx ends, and returns once its cleanups have returned
// too: after Run, the controller no longer touches the server's storage.
func (c *CRDs) Run(ctx context.Context) {
	if c.Log == nil {
		c.Log = slog.Default()
	}
	c.cleaning = map[string]bool{}
	defer c.cleanups.Wait()
	for ctx.Err() == nil {
		c.watch(ctx)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// watch follows the CRDs until the watch ends: every change re-serves the
// whole set (CRDs are few; a swap is cheap) and syncs the changed CRD.
func (c *CRDs) watch(ctx context.Context) {
	// The cache refuses watches until its first list is in; retrying a
	// second later would hold up the server's readiness by that second.
	if err := c.Cache.WaitReady(ctx); err != nil {
		return
	}
	initial := true
	w, err := c.Cache.Watch(ctx, watchcache.WatchOptions{SendInitialEvents: &initial, AllowBookmarks: true, ResourceVersionMatch: watchcache.MatchNotOlderThan})
	if err != nil {
		if ctx.Err() == nil {
			c.Log.Warn("crd controller: watch", "err", err)
		}
		return
	}
	defer w.Stop()
	crds := map[string]map[string]any{}
	synced := false
	var dirty []string
	flush := func() {
		list := make([]map[string]any, 0, len(crds))
		for _, o := range crds {
			list = append(list, o)
		}
		c.Server.Serve(list)
		for _, name := range dirty {
			if err := c.Server.SyncStatus(ctx, name); err != nil && ctx.Err() == nil {
				c.Log.Warn("crd controller: status", "crd", name, "err", err)
			}
			if o, ok := crds[name]; ok {
				if md, _ := o["metadata"].(map[string]any); md["deletionTimestamp"] != nil {
					c.cleanup(ctx, name)
				}
			}
		}
		dirty = dirty[:0]
	}
	for {
		var ev watchcache.Event
		var ok bool
		if synced && len(dirty) > 0 {
			// Apply what arrived together in one swap.
			select {
			case ev, ok = <-w.ResultChan():
			default:
				flush()
				continue
			}
		} else {
			select {
			case <-ctx.Done():
				return
			case ev, ok = <-w.ResultChan():
			}
		}
		if !ok || ev.Type == watchcache.Error {
			return
		}
		switch ev.Type {
		case watchcache.Bookmark:
			if ev.InitialEventsEnd {
				synced = true
				flush()
			}
			continue
		case watchcache.Added, watchcache.Modified:
			var obj map[string]any
			if err := utiljson.Unmarshal(ev.Item.JSON(), &obj); err != nil {
				c.Log.Error("crd controller: decoding", "crd", ev.Item.Name, "err", err)
				continue
			}
			crds[ev.Item.Name] = obj
		case watchcache.Deleted:
			delete(crds, ev.Item.Name)
		}
		dirty = append(dirty, ev.Item.Name)
	}
}

// cleanup runs one CRD's cleanup in the background until it finishes.
func (c *CRDs) cleanup(ctx context.Context, name string) {
	c.mu.Lock()
	if c.cleaning[name] {
		c.mu.Unlock()
		return
	}
	c.cleaning[name] = true
	c.mu.Unlock()
	c.cleanups.Go(func() {
		defer func() {
			c.mu.Lock()
			delete(c.cleaning, name)
			c.mu.Unlock()
		}()
		for ctx.Err() == nil {
			done, err := c.Server.Cleanup(ctx, name)
			if err != nil && ctx.Err() == nil {
				c.Log.Warn("crd controller: cleanup", "crd", name, "err", err)
			}
			if done {
				return
			}
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	})
}
