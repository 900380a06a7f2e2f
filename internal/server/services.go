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

func (s storedServices) get(ctx context.Context, gr schema.GroupResource, namespace, name string, into any) (bool, error) {
	st, ok := s.stores.Store(gr)
	if !ok {
		return false, fmt.Errorf("%s are not served", gr)
	}
	it, err := st.Cache.Get(ctx, st.Key(namespace, name), watchcache.GetOptions{ResourceVersion: "0"})
	if errors.Is(err, storage.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, json.Unmarshal(it.JSON(), into)
}

func (s storedServices) Service(ctx context.Context, namespace, name string) (*corev1.Service, error) {
	svc := &corev1.Service{}
	found, err := s.get(ctx, servicesGR, namespace, name, svc)
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
