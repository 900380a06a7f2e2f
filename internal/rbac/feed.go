package rbac

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/crdserver/crdserver/internal/watchcache"
)

// Sources are the watch caches of the four RBAC resources.
type Sources struct {
	Roles, ClusterRoles, RoleBindings, ClusterRoleBindings *watchcache.Cache
}

// Feed keeps an Index equal to the objects in Sources. Each resource is
// watched from a full list (the watch's initial events): a restarted
// watch replaces what it held, so deletions missed between two watches
// are not kept.
type Feed struct {
	Index   *Index
	Sources Sources
	Log     *slog.Logger
	// Changed, when set, is called after every change of a ClusterRole
	// (the aggregation controller listens).
	Changed func()

	synced atomic.Int32 // resources whose first list is in the index
	ready  chan struct{}
	once   sync.Once
}

// resource is how the feed writes one resource's objects to the index.
type resource struct {
	name  string
	cache *watchcache.Cache
	set   func(data []byte) error
	del   func(namespace, name string)
}

// Run feeds the index until ctx ends.
func (f *Feed) Run(ctx context.Context) {
	f.once.Do(func() { f.ready = make(chan struct{}) })
	if f.Log == nil {
		f.Log = slog.Default()
	}
	ix := f.Index
	resources := []resource{
		{"clusterroles", f.Sources.ClusterRoles, decodeInto(func(r *rbacv1.ClusterRole) { ix.SetClusterRole(r); f.notify() }),
			func(_, name string) { ix.DeleteClusterRole(name); f.notify() }},
		{"roles", f.Sources.Roles, decodeInto(ix.SetRole), ix.DeleteRole},
		{"clusterrolebindings", f.Sources.ClusterRoleBindings, decodeInto(ix.SetClusterRoleBinding),
			func(_, name string) { ix.DeleteClusterRoleBinding(name) }},
		{"rolebindings", f.Sources.RoleBindings, decodeInto(ix.SetRoleBinding), ix.DeleteRoleBinding},
	}
	var wg sync.WaitGroup
	for _, r := range resources {
		wg.Go(func() { f.run(ctx, r) })
	}
	wg.Wait()
}

func (f *Feed) notify() {
	if f.Changed != nil {
		f.Changed()
	}
}

// Ready is closed once the index holds every resource's objects.
func (f *Feed) Ready() <-chan struct{} {
	f.once.Do(func() { f.ready = make(chan struct{}) })
	return f.ready
}

func decodeInto[T any](set func(*T)) func([]byte) error {
	return func(data []byte) error {
		obj := new(T)
		if err := json.Unmarshal(data, obj); err != nil {
			return err
		}
		set(obj)
		return nil
	}
}

type objectKey struct{ namespace, name string }

// run watches one resource, again a second after each watch ends.
func (f *Feed) run(ctx context.Context, r resource) {
	known := map[objectKey]bool{}
	first := true
	for ctx.Err() == nil {
		f.watch(ctx, r, known, &first)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// watch applies one watch's events to the index. known holds the objects
// the index has of r; the initial events' end drops those they lacked.
func (f *Feed) watch(ctx context.Context, r resource, known map[objectKey]bool, first *bool) {
	if err := r.cache.WaitReady(ctx); err != nil {
		return
	}
	yes := true
	w, err := r.cache.Watch(ctx, watchcache.WatchOptions{SendInitialEvents: &yes, AllowBookmarks: true})
	if err != nil {
		if ctx.Err() == nil {
			f.Log.Warn("rbac: watch", "resource", r.name, "err", err)
		}
		return
	}
	defer w.Stop()
	listed := map[objectKey]bool{}
	initial := true
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.ResultChan():
			if !ok {
				return
			}
			switch ev.Type {
			case watchcache.Error:
				f.Log.Warn("rbac: watch ended", "resource", r.name, "err", ev.Err)
				return
			case watchcache.Added, watchcache.Modified:
				k := objectKey{ev.Item.Namespace, ev.Item.Name}
				if err := r.set(ev.Item.JSON()); err != nil {
					f.Log.Error("rbac: decoding", "resource", r.name, "name", ev.Item.Name, "err", fmt.Errorf("%s %s: %w", r.name, ev.Item.Name, err))
					continue
				}
				known[k] = true
				if initial {
					listed[k] = true
				}
			case watchcache.Deleted:
				k := objectKey{ev.Item.Namespace, ev.Item.Name}
				r.del(k.namespace, k.name)
				delete(known, k)
			case watchcache.Bookmark:
				if !initial || !ev.InitialEventsEnd {
					continue
				}
				initial = false
				for k := range known {
					if !listed[k] {
						r.del(k.namespace, k.name)
						delete(known, k)
					}
				}
				if *first {
					*first = false
					if f.synced.Add(1) == 4 {
						f.Ready()
						close(f.ready)
					}
				}
			}
		}
	}
}
