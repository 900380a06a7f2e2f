// Package controllers holds the background loops of crdserver. Each is safe
// when several replicas run it against the same etcd: every write it makes
// is a compare-and-swap or idempotent.
package controllers

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/crdserver/crdserver/internal/watchcache"
)

// NamespaceContent is what the namespace controller needs from the server:
// deleting a namespace's objects as a client's delete would (finalizers
// honoured), then finalizing the namespace itself.
type NamespaceContent interface {
	// DeleteContents deletes every object in namespace ns, of every
	// namespaced resource, and reports how many objects remain (waiting for
	// their finalizers).
	DeleteContents(ctx context.Context, ns string) (remaining int, err error)
	// Finalize removes the "kubernetes" finalizer from the namespace and
	// deletes it once no finalizers remain.
	Finalize(ctx context.Context, ns string) error
}

// Namespaces deletes the contents of terminating namespaces, then the
// namespaces themselves.
type Namespaces struct {
	Cache   *watchcache.Cache // the namespaces watch cache
	Content NamespaceContent
	Log     *slog.Logger
	// Retry is how long to wait before looking again at a namespace whose
	// contents are not gone yet. Default 1s.
	Retry time.Duration

	queue *nameQueue
}

// Run works until ctx ends, and returns once its worker has returned too:
// after Run, the controller no longer touches the server's storage.
func (n *Namespaces) Run(ctx context.Context) {
	if n.Retry == 0 {
		n.Retry = time.Second
	}
	if n.Log == nil {
		n.Log = slog.Default()
	}
	n.queue = newNameQueue(n.Retry)
	var worker sync.WaitGroup
	defer worker.Wait()
	worker.Go(func() { n.queue.work(ctx, n.sync) })
	// Terminating namespaces feed the queue.
	watchChanges(ctx, n.Cache, n.Log, "namespace controller", func(it *watchcache.Item) {
		if terminating(it.JSON()) {
			n.queue.add(it.Name)
		}
	})
}

func terminating(obj []byte) bool {
	var ns struct {
		Metadata struct {
			DeletionTimestamp *string `json:"deletionTimestamp"`
		} `json:"metadata"`
	}
	return json.Unmarshal(obj, &ns) == nil && ns.Metadata.DeletionTimestamp != nil
}

// sync makes one pass over a terminating namespace and reports whether it
// is finished.
func (n *Namespaces) sync(ctx context.Context, name string) bool {
	// Errors after ctx ended are the shutdown's, not worth a warning.
	remaining, err := n.Content.DeleteContents(ctx, name)
	if err != nil {
		if ctx.Err() == nil {
			n.Log.Warn("namespace controller: deleting contents", "namespace", name, "err", err)
		}
		return false
	}
	if remaining > 0 {
		return false
	}
	if err := n.Content.Finalize(ctx, name); err != nil {
		if ctx.Err() == nil {
			n.Log.Warn("namespace controller: finalizing", "namespace", name, "err", err)
		}
		return false
	}
	return true
}
