package controllers

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/crdserver/crdserver/internal/watchcache"
)

// Each keeps something about every object of one resource current, such
// as a status the server owns: Sync runs for each object when it appears
// or changes, and again after a failure. It is driven by the resource's
// watch. Replicas that sync the same object must write the same thing,
// conditionally (a compare-and-swap at the revision read), so that every
// replica may run it.
//
// The server runs three: the ValidatingAdmissionPolicy type checker (its
// status.typeChecking, as upstream's policy status controller), the
// APIService availability of Local APIServices (as upstream's
// aggregator's availability controller), and PodDisruptionBudgets'
// status (DisruptionStatus, as upstream's disruption controller).
type Each struct {
	// Name names the controller in logs.
	Name  string
	Cache *watchcache.Cache
	// Sync brings the named object's state up to date; an error retries.
	// A namespaced object is named namespace/name.
	Sync func(ctx context.Context, name string) error
	Log  *slog.Logger
	// Retry is how long to wait before syncing an object again after an
	// error. Default 1s.
	Retry time.Duration
	// Deletes syncs an object's name when it is deleted too (a controller
	// that acts on what the object held: a deleted pod frees its claims).
	Deletes bool

	queue *nameQueue
}

// Run works until ctx ends, and returns once its worker and watch have
// returned.
func (e *Each) Run(ctx context.Context) {
	if e.Retry == 0 {
		e.Retry = time.Second
	}
	if e.Log == nil {
		e.Log = slog.Default()
	}
	e.queue = newNameQueue(e.Retry)
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { e.queue.work(ctx, e.sync) })
	watchEvents(ctx, e.Cache, e.Log, e.Name, func(ev watchcache.Event) {
		if ev.Type == watchcache.Deleted && !e.Deletes {
			return
		}
		if it := ev.Item; it.Namespace != "" {
			e.queue.add(it.Namespace + "/" + it.Name)
		} else {
			e.queue.add(it.Name)
		}
	})
}

func (e *Each) sync(ctx context.Context, name string) bool {
	err := e.Sync(ctx, name)
	if err != nil && ctx.Err() == nil {
		e.Log.Warn(e.Name+": syncing an object", "name", name, "err", err)
	}
	return err == nil
}
