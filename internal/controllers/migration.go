package controllers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	svmv1 "k8s.io/api/storagemigration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/builtin"
	"github.com/crdserver/crdserver/internal/watchcache"
)

// MigrationServer is what the storage version migration controller needs
// from the server.
type MigrationServer interface {
	// ListForMigration returns the storage version of gr and every
	// object of gr as of a consistent read (its revision too). An error
	// wrapping ErrNotServed fails the migration; others are retried.
	ListForMigration(ctx context.Context, gr schema.GroupResource) (version string, items []*watchcache.Item, rev int64, err error)
	// Rewrite writes one listed object again at the storage version, on
	// the condition that it has not changed since it was listed, and
	// reports whether it wrote (see handler.Rewrite).
	Rewrite(ctx context.Context, gr schema.GroupResource, it *watchcache.Item) (bool, error)
	// FinishMigration records that every object of gr is stored at
	// version: a CRD's status.storedVersions becomes [version], unless
	// its storage version is no longer version (an error then: the
	// migration runs again). Nothing for built-in resources.
	FinishMigration(ctx context.Context, gr schema.GroupResource, version string) error
	// UpdateMigration writes the named migration as update changes it
	// (compare-and-swap, retried on conflict; update may run several
	// times and returns false for no change) and returns what is stored.
	UpdateMigration(ctx context.Context, name string, update func(*svmv1.StorageVersionMigration) bool) (*svmv1.StorageVersionMigration, error)
}

// ErrNotServed is the error MigrationServer.ListForMigration wraps for a
// resource the server does not serve: the migration fails.
var ErrNotServed = errors.New("the server does not serve the resource")

// Migrations acts on StorageVersionMigrations: it lists every object of
// the named resource, rewrites each at the current storage version
// (MigrationServer.Rewrite: compare-and-swap, a conflict means someone
// else rewrote it), then trims the CRD's status.storedVersions to that
// version, reporting through the Running, Succeeded and Failed conditions
// (progress in the Running condition's message).
//
// Every replica runs it. Replicas that pick up the same migration repeat
// each other's work harmlessly: rewrites are conditional and idempotent,
// and status writes are compare-and-swap.
type Migrations struct {
	Cache  *watchcache.Cache // the storageversionmigrations watch cache
	Server MigrationServer
	Log    *slog.Logger
	// Workers is how many objects are rewritten at once. Default 32.
	Workers int
	// Progress is how often the Running condition reports progress.
	// Default 1s.
	Progress time.Duration
	// Retry is how long to wait before trying a migration again after an
	// error that may pass. Default 1s.
	Retry time.Duration
	// Now is the clock of condition timestamps. Default time.Now.
	Now func() time.Time

	queue *nameQueue
}

// Run works until ctx ends, and returns once its workers have returned.
func (m *Migrations) Run(ctx context.Context) {
	if m.Workers <= 0 {
		m.Workers = 32
	}
	if m.Progress <= 0 {
		m.Progress = time.Second
	}
	if m.Retry <= 0 {
		m.Retry = time.Second
	}
	if m.Now == nil {
		m.Now = time.Now
	}
	if m.Log == nil {
		m.Log = slog.Default()
	}
	m.queue = newNameQueue(m.Retry)
	var workers sync.WaitGroup
	defer workers.Wait()
	// Two migrations at once: a large one does not hold up a small one.
	for range 2 {
		workers.Go(func() { m.queue.work(ctx, m.sync) })
	}
	watchChanges(ctx, m.Cache, m.Log, "migration controller", func(it *watchcache.Item) {
		if svm, err := builtin.DecodeMigration(it.JSON()); err == nil && !finished(svm) {
			m.queue.add(it.Name)
		}
	})
}

func finished(svm *svmv1.StorageVersionMigration) bool {
	return builtin.MigrationCondition(svm.Status.Conditions, svmv1.MigrationSucceeded) ||
		builtin.MigrationCondition(svm.Status.Conditions, svmv1.MigrationFailed)
}

// sync runs one migration for the queue: done unless it should run again.
func (m *Migrations) sync(ctx context.Context, name string) bool {
	err := m.migrate(ctx, name)
	if err != nil && ctx.Err() == nil {
		m.Log.Warn("migration controller: will retry", "migration", name, "err", err)
	}
	return err == nil
}

// migrate runs one migration to its end. An error means it should run
// again later; a migration that cannot succeed is marked Failed instead.
func (m *Migrations) migrate(ctx context.Context, name string) error {
	var gr schema.GroupResource
	done := false
	_, err := m.Server.UpdateMigration(ctx, name, func(svm *svmv1.StorageVersionMigration) bool {
		gr = schema.GroupResource{Group: svm.Spec.Resource.Group, Resource: svm.Spec.Resource.Resource}
		if done = finished(svm); done {
			return false
		}
		return builtin.SetMigrationCondition(&svm.Status, svmv1.MigrationRunning, metav1.ConditionTrue,
			builtin.MigrationReasonRunning, "listing "+gr.String(), svm.Generation, m.Now())
	})
	if err != nil || done {
		return ignoreNotFound(err)
	}

	version, items, rev, err := m.Server.ListForMigration(ctx, gr)
	if errors.Is(err, ErrNotServed) {
		return m.fail(ctx, name, err.Error())
	}
	if err != nil {
		return err
	}
	total := len(items)
	report := func(n int64) error {
		_, err := m.Server.UpdateMigration(ctx, name, func(svm *svmv1.StorageVersionMigration) bool {
			changed := false
			if svm.Status.ResourceVersion == "" {
				// Upstream's field: the resource's revision when the
				// migration started.
				svm.Status.ResourceVersion = fmt.Sprint(rev)
				changed = true
			}
			if finished(svm) {
				return changed
			}
			msg := builtin.MigrationProgress(int(n), total, version)
			return builtin.SetMigrationCondition(&svm.Status, svmv1.MigrationRunning, metav1.ConditionTrue,
				builtin.MigrationReasonRunning, msg, svm.Generation, m.Now()) || changed
		})
		return err
	}
	if err := report(0); err != nil {
		return ignoreNotFound(err)
	}

	rewritten, err := m.rewriteAll(ctx, gr, items, report)
	if err != nil {
		return ignoreNotFound(err)
	}
	// storedVersions shrinks only once every object is at version.
	// Upstream's migrator leaves that to the user; crdserver does it, as
	// migrating is the only reason to shrink it.
	if err := m.Server.FinishMigration(ctx, gr, version); err != nil {
		return err
	}
	msg := fmt.Sprintf("migrated %d objects to %s (%d rewritten)", total, version, rewritten)
	_, err = m.Server.UpdateMigration(ctx, name, func(svm *svmv1.StorageVersionMigration) bool {
		if finished(svm) {
			return false
		}
		now := m.Now()
		builtin.SetMigrationCondition(&svm.Status, svmv1.MigrationSucceeded, metav1.ConditionTrue, builtin.MigrationReasonSucceeded, msg, svm.Generation, now)
		builtin.SetMigrationCondition(&svm.Status, svmv1.MigrationRunning, metav1.ConditionFalse, builtin.MigrationReasonSucceeded, msg, svm.Generation, now)
		return true
	})
	if err == nil {
		m.Log.Info("migration succeeded", "migration", name, "resource", gr.String(), "version", version, "objects", total, "rewritten", rewritten)
	}
	return ignoreNotFound(err)
}

// rewriteAll rewrites items with m.Workers goroutines, calling report with
// the count done every m.Progress, and returns how many it wrote. It stops
// at the first error, or when report finds the migration deleted.
func (m *Migrations) rewriteAll(ctx context.Context, gr schema.GroupResource, items []*watchcache.Item, report func(int64) error) (int64, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next, done, rewritten atomic.Int64
	var wg sync.WaitGroup
	for range min(m.Workers, max(len(items), 1)) {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := next.Add(1) - 1
				if i >= int64(len(items)) {
					return
				}
				wrote, err := m.Server.Rewrite(ctx, gr, items[i])
				if err != nil {
					cancel(fmt.Errorf("rewriting %s %s: %w", gr, items[i].Name, err))
					return
				}
				if wrote {
					rewritten.Add(1)
				}
				done.Add(1)
			}
		})
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	tick := time.NewTicker(m.Progress)
	defer tick.Stop()
	for {
		select {
		case <-finished:
			if err := context.Cause(ctx); err != nil {
				return 0, err
			}
			return rewritten.Load(), nil
		case <-tick.C:
			err := report(done.Load())
			switch {
			case errors.Is(err, ErrMigrationGone):
				cancel(err) // deleted: stop rewriting
			case err != nil && ctx.Err() == nil:
				m.Log.Warn("migration controller: reporting progress", "resource", gr.String(), "err", err)
			}
		}
	}
}

// fail marks the migration Failed with msg.
func (m *Migrations) fail(ctx context.Context, name, msg string) error {
	_, err := m.Server.UpdateMigration(ctx, name, func(svm *svmv1.StorageVersionMigration) bool {
		if finished(svm) {
			return false
		}
		now := m.Now()
		builtin.SetMigrationCondition(&svm.Status, svmv1.MigrationFailed, metav1.ConditionTrue, builtin.MigrationReasonFailed, msg, svm.Generation, now)
		builtin.SetMigrationCondition(&svm.Status, svmv1.MigrationRunning, metav1.ConditionFalse, builtin.MigrationReasonFailed, msg, svm.Generation, now)
		return true
	})
	return ignoreNotFound(err)
}

// ErrMigrationGone is what a MigrationServer returns, wrapped, when the
// migration object no longer exists.
var ErrMigrationGone = errors.New("storage version migration not found")

func ignoreNotFound(err error) error {
	if errors.Is(err, ErrMigrationGone) {
		return nil
	}
	return err
}
