package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/apply"
	"github.com/crdserver/crdserver/internal/builtin"
	"github.com/crdserver/crdserver/internal/handler"
	"github.com/crdserver/crdserver/internal/quota"
	"github.com/crdserver/crdserver/internal/registry"
	"github.com/crdserver/crdserver/internal/storage"
	"github.com/crdserver/crdserver/internal/watchcache"
)

var resourceQuotasGR = schema.GroupResource{Resource: "resourcequotas"}

// apiServerManager is the field manager of the writes kube-apiserver
// makes itself through its loopback client, as its quota admission's
// charges.
const apiServerManager = "kube-apiserver"

// quotas reads and writes ResourceQuotas: the counts of the quota
// controller (controllers.Quotas) and the charges of quota admission
// (handler.QuotaCharger).
type quotas struct {
	s      *Server
	reg    *registry.Registry
	fields *apply.Manager // the quotas' status field manager
}

func newQuotas(s *Server, reg *registry.Registry) *quotas {
	return &quotas{s: s, reg: reg, fields: statusFieldManager(builtin.ResourceQuotas(), "v1")}
}

var (
	_ handler.QuotaCharger = (*quotas)(nil)
	_ quota.Counter        = (*quotas)(nil)
)

// Served reports whether gr is a namespaced resource served here.
func (q *quotas) Served(gr schema.GroupResource) bool {
	def, ok := q.reg.Current().Lookup(gr.Group, gr.Resource)
	return ok && def.Namespaced()
}

// objects returns gr's watch cache.
func (q *quotas) objects(gr schema.GroupResource) (*watchcache.Cache, bool) {
	if !q.Served(gr) {
		return nil, false
	}
	st, ok := q.s.stores.Store(gr)
	if !ok {
		return nil, false
	}
	return st.Cache, true
}

// list lists namespace's objects of gr from its cache, at
// resourceVersion rv ("" for a consistent read).
func (q *quotas) list(ctx context.Context, gr schema.GroupResource, namespace, rv string) ([]*watchcache.Item, error) {
	cache, ok := q.objects(gr)
	if !ok {
		return nil, nil
	}
	res, err := cache.List(ctx, watchcache.ListOptions{Namespace: namespace, ResourceVersion: rv})
	if err != nil {
		return nil, err
	}
	return res.Items, nil
}

func (q *quotas) Count(ctx context.Context, gr schema.GroupResource, namespace string) (int64, error) {
	items, err := q.list(ctx, gr, namespace, "0")
	return int64(len(items)), err
}

func (q *quotas) Services(ctx context.Context, namespace string) ([]map[string]any, error) {
	items, err := q.list(ctx, servicesGR, namespace, "0")
	if err != nil {
		return nil, err
	}
	out := make([]map[string]any, 0, len(items))
	for _, it := range items {
		obj, err := handler.DecodeStored(it.JSON())
		if err != nil {
			return nil, err
		}
		out = append(out, obj)
	}
	return out, nil
}

// sync counts the quota namespace/name and stores its status, as
// kube-controller-manager's, when it changed (see controllers.Quotas for
// full).
func (q *quotas) sync(ctx context.Context, key string, full bool) ([]schema.GroupResource, error) {
	ns, name, _ := strings.Cut(key, "/")
	var rq corev1.ResourceQuota
	own, found, err := q.s.readOwnStatusIn(ctx, resourceQuotasGR, ns, name, &rq)
	if err != nil || !found {
		return nil, err
	}
	if !full && quota.Counted(&rq, q.Served) {
		return nil, nil
	}
	st, counted, err := quota.Status(ctx, &rq, q)
	if err != nil {
		return nil, err
	}
	if quota.Equal(st.Hard, rq.Status.Hard) && quota.Equal(st.Used, rq.Status.Used) {
		return counted, nil
	}
	want, err := statusMap(st)
	if err != nil {
		return nil, fmt.Errorf("encoding the status of ResourceQuota %s: %w", key, err)
	}
	return counted, own.writeStatusAs(ctx, q.fields, builtin.ControllerManager, func(status map[string]any) {
		clear(status)
		maps.Copy(status, want)
	})
}

// statusMap is st as a stored object's status holds it.
func statusMap(st corev1.ResourceQuotaStatus) (map[string]any, error) {
	b, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	return handler.DecodeStored(b)
}

// chargeRetries bounds the charges of one create lost to concurrent
// writes of the same quota.
const chargeRetries = 10

// Charge charges a create of obj (an update from old), of resource gr,
// to the quotas of namespace that limit what it counts for (for an
// update, what it counts for more), each written at the revision
// read (another charge in between reads it again), as kube-apiserver's.
// A refusal leaves every quota as it was: all are checked before any is
// charged, but for one that changed meanwhile, checked again after the
// others were. A quota charged for a write that then fails, or refused,
// is counted right by the quota controller's next full count.
func (q *quotas) Charge(ctx context.Context, gr schema.GroupResource, namespace string, obj, old map[string]any, dry bool) error {
	u := quota.Usage(gr, obj)
	if old != nil {
		if u = quota.UpdateUsage(gr, obj, old); len(u) == 0 {
			return nil
		}
	}
	// The quotas as the cache holds them, as upstream's admission reads
	// them from an informer: a consistent read would cost every create
	// in the namespace a wait for the cache to catch up.
	items, err := q.list(ctx, resourceQuotasGR, namespace, "0")
	if err != nil || len(items) == 0 {
		return quotaError(err)
	}
	names := make([]string, len(items))
	for i, it := range items {
		names[i] = it.Name
	}
	for range chargeRetries {
		charges, err := q.charges(ctx, namespace, names, u)
		if err != nil || dry {
			return err
		}
		// Each quota is charged once: after a conflict, only those not
		// yet charged are read and checked again.
		var left []string
		for i, c := range charges {
			err := c.own.setStatusAs(ctx, q.fields, apiServerManager, func(status map[string]any) {
				status["used"] = c.used
			})
			if errors.Is(err, storage.ErrConflict) || errors.Is(err, storage.ErrNotFound) {
				for _, c := range charges[i:] {
					left = append(left, c.name)
				}
				break
			}
			if err != nil {
				return quotaError(err)
			}
		}
		if len(left) == 0 {
			return nil
		}
		names = left
	}
	return apierrors.NewConflict(resourceQuotasGR, namespace, errors.New("the namespace's quotas changed too often to charge the create to them; try again"))
}

// charge is one quota's new status.used, and the quota as read.
type charge struct {
	name string
	own  ownStatus
	used map[string]any
}

// charges reads the named quotas and works out the create's charge to
// each; the first quota that refuses it refuses the create.
func (q *quotas) charges(ctx context.Context, namespace string, names []string, u corev1.ResourceList) ([]charge, error) {
	var out []charge
	for _, name := range names {
		var rq corev1.ResourceQuota
		own, found, err := q.s.readOwnStatusIn(ctx, resourceQuotasGR, namespace, name, &rq)
		if err != nil {
			return nil, quotaError(err)
		}
		if !found {
			continue
		}
		used, err := quota.Charge(&rq, u)
		if err != nil {
			return nil, err
		}
		if used == nil {
			continue
		}
		st, err := statusMap(corev1.ResourceQuotaStatus{Used: used})
		if err != nil {
			return nil, quotaError(err)
		}
		stored, _ := st["used"].(map[string]any)
		out = append(out, charge{name: name, own: own, used: stored})
	}
	return out, nil
}

// quotaError is a failure to read or write the quotas, as a Status (nil
// for nil).
func quotaError(err error) error {
	if err == nil {
		return nil
	}
	return apierrors.NewInternalError(fmt.Errorf("charging the create to the namespace's resource quotas: %w", err))
}
