package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/builtin"
	"github.com/crdserver/crdserver/internal/storage"
	"github.com/crdserver/crdserver/internal/watchcache"
	"github.com/crdserver/crdserver/internal/webhook"
)

var (
	servicesGR       = schema.GroupResource{Resource: "services"}
	endpointsGR      = schema.GroupResource{Resource: "endpoints"}
	endpointSlicesGR = schema.GroupResource{Group: "discovery.k8s.io", Resource: "endpointslices"}
)

// storedServices reads Services, Endpoints and EndpointSlices from their
// watch caches, for the webhook client's service resolution.
type storedServices struct{ stores *stores }

var _ webhook.Services = storedServices{}

// get reads the object from the cache, whatever it holds.
func (s storedServices) get(ctx context.Context, gr schema.GroupResource, namespace, name string, into any) (bool, error) {
	return s.getAt(ctx, gr, namespace, name, "0", into)
}

// getAt reads the object at resourceVersion rv, as a client's get with it
// would ("" consistently, "0" whatever the cache holds).
func (s storedServices) getAt(ctx context.Context, gr schema.GroupResource, namespace, name, rv string, into any) (bool, error) {
	st, ok := s.stores.Store(gr)
	if !ok {
		return false, fmt.Errorf("%s are not served", gr)
	}
	it, err := st.Cache.Get(ctx, st.Key(namespace, name), watchcache.GetOptions{ResourceVersion: rv})
	if errors.Is(err, storage.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, json.Unmarshal(it.JSON(), into)
}

func (s storedServices) Service(ctx context.Context, namespace, name string) (*corev1.Service, error) {
	return s.serviceAt(ctx, namespace, name, "0")
}

// serviceAt reads the Service at resourceVersion rv (getAt); a missing one
// is a NotFound error.
func (s storedServices) serviceAt(ctx context.Context, namespace, name, rv string) (*corev1.Service, error) {
	svc := &corev1.Service{}
	found, err := s.getAt(ctx, servicesGR, namespace, name, rv, svc)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, apierrors.NewNotFound(servicesGR, name)
	}
	return svc, nil
}

func (s storedServices) Endpoints(ctx context.Context, namespace, name string) (*corev1.Endpoints, error) {
	eps := &corev1.Endpoints{}
	found, err := s.get(ctx, endpointsGR, namespace, name, eps)
	if err != nil || !found {
		return nil, err
	}
	return eps, nil
}

func (s storedServices) EndpointSlices(ctx context.Context, namespace, service string) ([]*discoveryv1.EndpointSlice, error) {
	st, ok := s.stores.Store(endpointSlicesGR)
	if !ok {
		return nil, fmt.Errorf("%s are not served", endpointSlicesGR)
	}
	res, err := st.Cache.List(ctx, watchcache.ListOptions{
		Namespace:       namespace,
		ResourceVersion: "0",
		Labels:          labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: service}),
	})
	if err != nil {
		return nil, err
	}
	out := make([]*discoveryv1.EndpointSlice, 0, len(res.Items))
	for _, it := range res.Items {
		es := &discoveryv1.EndpointSlice{}
		if err := json.Unmarshal(it.JSON(), es); err != nil {
			return nil, err
		}
		out = append(out, es)
	}
	return out, nil
}

// serviceBackends reads what services/proxy resolves a Service through,
// as upstream reads it: the Service and the pods behind its endpoints
// consistently (from storage), the EndpointSlices from their cache (an
// informer upstream). It reads the server's stores, which are made after
// the definitions it serves.
type serviceBackends struct{ s *Server }

var _ builtin.ServiceBackends = serviceBackends{}

func (b serviceBackends) Service(ctx context.Context, namespace, name string) (*corev1.Service, error) {
	return storedServices{b.s.stores}.serviceAt(ctx, namespace, name, "")
}

func (b serviceBackends) EndpointSlices(ctx context.Context, namespace, service string) ([]*discoveryv1.EndpointSlice, error) {
	return storedServices{b.s.stores}.EndpointSlices(ctx, namespace, service)
}

func (b serviceBackends) Pod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	pod := &corev1.Pod{}
	found, err := storedServices{b.s.stores}.getAt(ctx, podsGR, namespace, name, "", pod)
	if err != nil || !found {
		return nil, err
	}
	return pod, nil
}

// serviceIPFamily is the primary family of the cluster's service IPs, the
// family of ips's range (IPv4 when there is none).
func serviceIPFamily(ips *builtin.ClusterIPs) corev1.IPFamily {
	if ips != nil && ips.Range.Addr().Is6() {
		return corev1.IPv6Protocol
	}
	return corev1.IPv4Protocol
}
