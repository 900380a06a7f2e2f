package server

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/apply"
	"github.com/crdserver/crdserver/internal/builtin"
	"github.com/crdserver/crdserver/internal/handler"
	"github.com/crdserver/crdserver/internal/quota"
	"github.com/crdserver/crdserver/internal/registry"
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
	s       *Server
	reg     *registry.Registry
	fields  *apply.Manager // the quotas' status field manager
	batches chargeBatches
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

func (q *quotas) List(ctx context.Context, gr schema.GroupResource, namespace string) ([]map[string]any, error) {
	items, err := q.list(ctx, gr, namespace, "0")
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
	counted := quota.Resources(&rq, q.Served)
	if !full && quota.Counted(&rq, q.Served) {
		return counted, nil
	}
	st, err := quota.Status(ctx, &rq, q, time.Now())
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

// quotaError is a failure to read or write the quotas, as a Status (nil
// for nil).
func quotaError(err error) error {
	if err == nil {
		return nil
	}
	return apierrors.NewInternalError(fmt.Errorf("charging the create to the namespace's resource quotas: %w", err))
}
