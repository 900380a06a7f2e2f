package controllers

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/watchcache"
)

// Quotas keeps ResourceQuotas' status current, as upstream's resource
// quota controller does: a quota is counted when it appears or its hard
// limits change, or a resource it names comes to be served (Sync with
// full false: when its status does not match them; Recheck), and counted
// again (full) when an object of a resource it counts is deleted in its
// namespace, which is how a delete gives its usage back, when a Service,
// pod or claim there changes, when the server creates an object there itself
// (Recount), and every Resync. Creates are charged at admission:
// counting on them too could count a quota's charge before the object
// charged is stored, and let another create past the limit; the resync
// counts what a create that failed after its charge left behind.
type Quotas struct {
	// Cache is the ResourceQuotas' watch cache.
	Cache *watchcache.Cache
	// Sync counts the named quota ("namespace/name") and stores its
	// status if it changed: always with full, else only when the status
	// does not match the hard limits. It returns the resources the quota
	// counts, whose deletions are then watched.
	Sync func(ctx context.Context, name string, full bool) ([]schema.GroupResource, error)
	// Objects returns the watch cache of a resource, false when it is not
	// served.
	Objects func(schema.GroupResource) (*watchcache.Cache, bool)
	Log     *slog.Logger
	// Resync is how often every quota is counted again; default 1m.
	Resync time.Duration

	queue   *nameQueue
	once    sync.Once     // init
	kick    chan struct{} // Recheck's
	mu      sync.Mutex
	watched map[*watchcache.Cache]bool
	ctx     context.Context
	wg      sync.WaitGroup
}

// Run works until ctx ends, and returns once its goroutines have.
func (q *Quotas) Run(ctx context.Context) {
	if q.Resync == 0 {
		q.Resync = time.Minute
	}
	if q.Log == nil {
		q.Log = slog.Default()
	}
	q.init()
	q.ctx = ctx
	defer q.wg.Wait()
	q.wg.Go(func() { q.queue.work(ctx, q.sync) })
	q.wg.Go(func() {
		t := time.NewTicker(q.Resync)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				q.requeue(ctx, "", true)
			case <-q.kick:
				q.requeue(ctx, "", false)
			}
		}
	})
	watchChanges(ctx, q.Cache, q.Log, "resource quota controller", func(it *watchcache.Item) {
		q.queue.add(it.Namespace + "/" + it.Name)
	})
}

// fullPrefix marks the queued names of quotas to count again in full.
const fullPrefix = "!"

func (q *Quotas) sync(ctx context.Context, name string) bool {
	full := strings.HasPrefix(name, fullPrefix)
	counted, err := q.Sync(ctx, strings.TrimPrefix(name, fullPrefix), full)
	if err != nil {
		if ctx.Err() == nil {
			q.Log.Warn("resource quota controller: counting a quota", "name", name, "err", err)
		}
		return false
	}
	for _, gr := range counted {
		q.watch(gr)
	}
	return true
}

// watch starts watching gr's objects, once per cache: a cache replaced
// (its CRD changed) is watched anew.
func (q *Quotas) watch(gr schema.GroupResource) {
	cache, ok := q.Objects(gr)
	if !ok {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.watched[cache] {
		return
	}
	q.watched[cache] = true
	q.wg.Go(func() {
		defer func() {
			q.mu.Lock()
			delete(q.watched, cache)
			q.mu.Unlock()
		}()
		// As watchEvents, until the resource's cache is no longer its
		// current one.
		for q.ctx.Err() == nil {
			watchOnce(q.ctx, cache, q.Log, "resource quota controller ("+gr.String()+")", func(ev watchcache.Event) {
				// A Service changed may count other node ports or load
				// balancers; a pod changed may have finished, been
				// resized or be deleted; a claim, grown.
				if ev.Item.Namespace != "" && (ev.Type == watchcache.Deleted || ev.Type == watchcache.Modified && recountOnUpdate[gr]) {
					q.requeue(q.ctx, ev.Item.Namespace, true)
				}
			})
			if cur, ok := q.Objects(gr); !ok || cur != cache {
				return
			}
			select {
			case <-q.ctx.Done():
			case <-time.After(time.Second):
			}
		}
	})
}

// recountOnUpdate are the resources whose updates change what their
// objects count for.
var recountOnUpdate = map[schema.GroupResource]bool{
	{Resource: "services"}: true, {Resource: "pods"}: true, {Resource: "persistentvolumeclaims"}: true,
}

// Recheck counts every quota whose status lacks a usage for what it
// names: a resource just served (a CRD established) has none yet, and
// creates of it are refused until it has.
func (q *Quotas) Recheck() {
	q.init()
	select {
	case q.kick <- struct{}{}:
	default:
	}
}

// Recount counts namespace's quotas again in full: the server created an
// object there itself (a namespace's kube-root-ca.crt), past admission.
func (q *Quotas) Recount(namespace string) {
	q.init()
	q.requeue(context.Background(), namespace, true)
}

// init makes what callers may reach before Run.
func (q *Quotas) init() {
	q.once.Do(func() {
		q.queue = newNameQueue(time.Second)
		q.kick = make(chan struct{}, 1)
		q.watched = map[*watchcache.Cache]bool{}
	})
}

// requeue queues the quotas of namespace ("" = all), to count in full or
// to check.
func (q *Quotas) requeue(ctx context.Context, namespace string, full bool) {
	res, err := q.Cache.List(ctx, watchcache.ListOptions{Namespace: namespace, ResourceVersion: "0"})
	if err != nil {
		return
	}
	prefix := ""
	if full {
		prefix = fullPrefix
	}
	for _, it := range res.Items {
		q.queue.add(prefix + it.Namespace + "/" + it.Name)
	}
}
