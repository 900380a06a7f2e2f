package controllers

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/crdserver/crdserver/internal/watchcache"
)

// NamespaceObjects keeps an object of one name in every namespace, as
// upstream's service account controller keeps the default ServiceAccount
// and its root CA publisher the kube-root-ca.crt ConfigMap: when a
// namespace appears (or changes, or a watch restarts), and when the
// object is deleted from a namespace that stays — or, for an object whose
// content is the controller's (Owned), changed. It scans nothing
// periodically: the two watches drive it.
type NamespaceObjects struct {
	// Name names the controller in logs.
	Name       string
	Namespaces *watchcache.Cache // the namespaces watch cache
	Objects    *watchcache.Cache // the watch cache of the objects kept
	// Object is the name of the object kept in each namespace.
	Object string
	// Owned says the object's content is the controller's to keep as it
	// should be, not only its existence.
	Owned bool
	// Ensure makes the object in namespace ns be as it should, unless the
	// namespace is gone or terminating. Its writes must be safe when
	// replicas race (create-if-absent, compare-and-swap).
	Ensure func(ctx context.Context, ns string) error
	Log    *slog.Logger
	// Retry is how long to wait before trying a namespace again after an
	// error. Default 1s.
	Retry time.Duration

	queue *nameQueue
}

// Run works until ctx ends, and returns once its worker and watches have
// returned.
func (n *NamespaceObjects) Run(ctx context.Context) {
	if n.Retry == 0 {
		n.Retry = time.Second
	}
	if n.Log == nil {
		n.Log = slog.Default()
	}
	n.queue = newNameQueue(n.Retry)
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { n.queue.work(ctx, n.sync) })
	wg.Go(func() {
		watchChanges(ctx, n.Namespaces, n.Log, n.Name, func(it *watchcache.Item) {
			if !terminating(it.JSON()) {
				n.queue.add(it.Name)
			}
		})
	})
	watchEvents(ctx, n.Objects, n.Log, n.Name, func(ev watchcache.Event) {
		if (ev.Type == watchcache.Deleted || n.Owned && ev.Type == watchcache.Modified) && ev.Item.Name == n.Object {
			n.queue.add(ev.Item.Namespace)
		}
	})
}

func (n *NamespaceObjects) sync(ctx context.Context, ns string) bool {
	err := n.Ensure(ctx, ns)
	if err != nil && ctx.Err() == nil {
		n.Log.Warn(n.Name+": ensuring "+n.Object, "namespace", ns, "err", err)
	}
	return err == nil
}
