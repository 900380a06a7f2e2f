package controllers

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/crdserver/crdserver/internal/builtin"
	"github.com/crdserver/crdserver/internal/watchcache"
)

// ServiceAccountServer is what the service account controller needs from
// the server.
type ServiceAccountServer interface {
	// EnsureServiceAccount creates the named ServiceAccount in namespace ns
	// unless it exists, or the namespace is gone or terminating. The
	// create is create-if-absent in storage, so replicas that race agree.
	EnsureServiceAccount(ctx context.Context, ns, name string) error
}

// ServiceAccounts gives every namespace its default ServiceAccount, as
// upstream's service account controller does: when a namespace appears
// (or changes, or a watch restarts), and when the default ServiceAccount
// is deleted from a namespace that stays. It scans nothing periodically:
// the two watches drive it.
type ServiceAccounts struct {
	Namespaces *watchcache.Cache // the namespaces watch cache
	Accounts   *watchcache.Cache // the serviceaccounts watch cache
	Server     ServiceAccountServer
	Log        *slog.Logger
	// Retry is how long to wait before trying a namespace again after an
	// error. Default 1s.
	Retry time.Duration

	queue *nameQueue
}

// Run works until ctx ends, and returns once its worker and watches have
// returned.
func (s *ServiceAccounts) Run(ctx context.Context) {
	if s.Retry == 0 {
		s.Retry = time.Second
	}
	if s.Log == nil {
		s.Log = slog.Default()
	}
	s.queue = newNameQueue(s.Retry)
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { s.queue.work(ctx, s.sync) })
	wg.Go(func() {
		watchChanges(ctx, s.Namespaces, s.Log, "service account controller", func(it *watchcache.Item) {
			if !terminating(it.JSON()) {
				s.queue.add(it.Name)
			}
		})
	})
	watchEvents(ctx, s.Accounts, s.Log, "service account controller", func(ev watchcache.Event) {
		if ev.Type == watchcache.Deleted && ev.Item.Name == builtin.DefaultServiceAccount {
			s.queue.add(ev.Item.Namespace)
		}
	})
}

func (s *ServiceAccounts) sync(ctx context.Context, ns string) bool {
	err := s.Server.EnsureServiceAccount(ctx, ns, builtin.DefaultServiceAccount)
	if err != nil && ctx.Err() == nil {
		s.Log.Warn("service account controller: creating the default service account", "namespace", ns, "err", err)
	}
	return err == nil
}
