package server

import (
	"context"
	"errors"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/quota"
	"github.com/crdserver/crdserver/internal/storage"
)

// Charge charges a create of obj (an update from old, of subresource
// sub), of resource gr, to the quotas of namespace that limit what it
// counts for (for an update, what it counts for more), as kube-apiserver's quota admission
// does: the writes of one namespace wait in one batch, which is checked
// write by write against the quotas as the writes before it left them,
// and stored with one write of each quota charged. Writes one by one
// would all but the first conflict on the quota at 16 creates at once.
// A write a quota refuses charges none. A quota charged for a write that
// then fails is counted right by the quota controller's next full count.
func (q *quotas) Charge(ctx context.Context, gr schema.GroupResource, namespace, sub string, obj, old map[string]any, dry bool) error {
	if !quota.Charges(gr, sub) {
		return nil
	}
	// The quotas as the cache holds them, as upstream's admission reads
	// them from an informer: a consistent read would cost every create
	// in the namespace a wait for the cache to catch up. Most namespaces
	// have none, and the write's usage is not worked out then.
	items, err := q.list(ctx, resourceQuotasGR, namespace, "0")
	if err != nil || len(items) == 0 {
		return quotaError(err)
	}
	w, err := quota.NewWrite(gr, sub, obj, old, time.Now())
	if err != nil || w == nil {
		return quotaError(err)
	}
	req := &chargeRequest{write: w, dry: dry, done: make(chan error, 1)}
	if q.batches.add(namespace, req) {
		go q.work(namespace)
	}
	select {
	case err := <-req.done:
		return err
	case <-ctx.Done():
		return apierrors.NewTimeoutError("the request ended while it waited to be charged to the namespace's resource quotas", 0)
	}
}

// chargeBatches are the writes waiting to be charged, by namespace.
type chargeBatches struct {
	mu      sync.Mutex
	waiting map[string][]*chargeRequest
	busy    map[string]bool // a worker charges the namespace's batches
}

// chargeRequest is one write's charge; done receives its outcome.
type chargeRequest struct {
	write *quota.Write
	dry   bool
	done  chan error
}

// add queues req and reports whether the namespace needs a worker.
func (b *chargeBatches) add(namespace string, req *chargeRequest) (start bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.waiting == nil {
		b.waiting, b.busy = map[string][]*chargeRequest{}, map[string]bool{}
	}
	b.waiting[namespace] = append(b.waiting[namespace], req)
	if b.busy[namespace] {
		return false
	}
	b.busy[namespace] = true
	return true
}

// take returns the namespace's waiting batch; none ends its worker.
func (b *chargeBatches) take(namespace string) []*chargeRequest {
	b.mu.Lock()
	defer b.mu.Unlock()
	batch := b.waiting[namespace]
	delete(b.waiting, namespace)
	if len(batch) == 0 {
		delete(b.busy, namespace)
	}
	return batch
}

// chargeTimeout bounds the storage reads and writes of one batch.
const chargeTimeout = 30 * time.Second

// work charges the namespace's batches until none waits.
func (q *quotas) work(namespace string) {
	for batch := q.batches.take(namespace); len(batch) > 0; batch = q.batches.take(namespace) {
		ctx, cancel := context.WithTimeout(context.Background(), chargeTimeout)
		q.chargeBatch(ctx, namespace, batch)
		cancel()
	}
}

// chargeRetries bounds the batch's charges lost to other writes of the
// same quota (the quota controller's, another replica's).
const chargeRetries = 10

// liveQuota is a quota read for a batch, with the usage its charges so
// far leave it.
type liveQuota struct {
	name    string
	own     ownStatus
	rq      corev1.ResourceQuota
	changed bool
}

// chargeBatch decides every request of batch: refused, or charged to the
// quotas that limit it, stored at the revision read. A quota that changed
// since is read again and charged again with the requests it was to
// charge, alone: the others stored theirs.
func (q *quotas) chargeBatch(ctx context.Context, namespace string, batch []*chargeRequest) {
	items, err := q.list(ctx, resourceQuotasGR, namespace, "0")
	names := make([]string, len(items))
	for i, it := range items {
		names[i] = it.Name
	}
	pending := batch
	for range chargeRetries {
		if err != nil {
			break
		}
		var live []*liveQuota
		if live, err = q.readQuotas(ctx, namespace, names); err != nil {
			break
		}
		var admitted []*chargeRequest
		for _, r := range pending {
			if q.admit(live, r) {
				admitted = append(admitted, r)
			}
		}
		var failed []string
		for _, l := range live {
			if !l.changed {
				continue
			}
			st, serr := statusMap(l.rq.Status)
			if serr != nil {
				err = serr
				break
			}
			werr := l.own.setStatusAs(ctx, q.fields, apiServerManager, func(status map[string]any) {
				status["used"] = st["used"]
			})
			switch {
			case errors.Is(werr, storage.ErrConflict) || errors.Is(werr, storage.ErrNotFound):
				failed = append(failed, l.name)
			case werr != nil:
				err = werr
			}
		}
		if err != nil {
			pending = admitted
			break
		}
		if len(failed) == 0 {
			for _, r := range admitted {
				r.done <- nil
			}
			return
		}
		pending, names = admitted, failed
	}
	if err == nil {
		err = apierrors.NewConflict(resourceQuotasGR, namespace, errors.New("the namespace's quotas changed too often to charge the write to them; try again"))
	} else {
		err = quotaError(err)
	}
	for _, r := range pending {
		r.done <- err
	}
}

// readQuotas reads the named quotas from storage (the cache may lag the
// charges stored a moment ago).
func (q *quotas) readQuotas(ctx context.Context, namespace string, names []string) ([]*liveQuota, error) {
	var out []*liveQuota
	for _, name := range names {
		l := &liveQuota{name: name}
		own, found, err := q.s.readOwnStatusIn(ctx, resourceQuotasGR, namespace, name, &l.rq)
		if err != nil {
			return nil, err
		}
		if found {
			l.own = own
			out = append(out, l)
		}
	}
	return out, nil
}

// admit checks r against every quota as the batch left it: refused, r
// hears why; else its charge is added to the quotas (unless a dry run,
// which hears it would pass) and admit reports that it waits for them to
// be stored.
func (q *quotas) admit(live []*liveQuota, r *chargeRequest) bool {
	// Every quota is checked before any is charged, as upstream does: a
	// pod one quota cannot count is refused for that, not for another's
	// limit.
	for _, l := range live {
		if err := quota.Check(&l.rq, r.write); err != nil {
			r.done <- err
			return false
		}
	}
	used := make([]corev1.ResourceList, len(live))
	for i, l := range live {
		u, err := quota.Charge(&l.rq, r.write)
		if err != nil {
			r.done <- err
			return false
		}
		used[i] = u
	}
	if r.dry {
		r.done <- nil
		return false
	}
	for i, l := range live {
		if used[i] != nil {
			l.rq.Status.Used, l.changed = used[i], true
		}
	}
	return true
}
