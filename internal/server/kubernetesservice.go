package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/builtin"
	"github.com/crdserver/crdserver/internal/handler"
	"github.com/crdserver/crdserver/internal/storage"
)

// ipAddressesGR is where the cluster IP allocation records live.
var ipAddressesGR = schema.GroupResource{Group: "networking.k8s.io", Resource: "ipaddresses"}

// createKubernetesService creates the default/kubernetes Service at the
// range's first address, and its Endpoints and EndpointSlice pointing at
// this server, unless they exist. Every write is a create (compare-and-
// swap), so replicas starting together agree on one of each; the first
// replica's address is the one published.
func (s *Server) createKubernetesService(ctx context.Context, ips *builtin.ClusterIPs, port int) error {
	u, err := url.Parse(s.URL)
	if err != nil {
		return err
	}
	ip := u.Hostname()
	if net.ParseIP(ip) == nil {
		ip = "127.0.0.1"
	}
	now := time.Now()
	svcKey := keyPrefix(s.cfg.EtcdPrefix, servicesGR) + "default/kubernetes"
	if _, err := s.raw.Get(ctx, svcKey); errors.Is(err, storage.ErrNotFound) {
		svc := builtin.KubernetesService(ips.First().String(), int64(port), now)
		undo, err := ips.AllocateService(ctx, svc)
		if err != nil {
			return fmt.Errorf("allocating the kubernetes Service's cluster IP: %w", err)
		}
		if err := s.createStored(ctx, svcKey, svc); err != nil {
			undo()
			return err
		}
	} else if err != nil {
		return fmt.Errorf("reading the kubernetes Service: %w", err)
	}
	if err := s.createStored(ctx, keyPrefix(s.cfg.EtcdPrefix, endpointsGR)+"default/kubernetes", builtin.KubernetesEndpoints(ip, int64(port), now)); err != nil {
		return err
	}
	return s.createStored(ctx, keyPrefix(s.cfg.EtcdPrefix, endpointSlicesGR)+"default/kubernetes", builtin.KubernetesEndpointSlice(ip, int64(port), now))
}

// createStored stores obj at key unless the key exists.
func (s *Server) createStored(ctx context.Context, key string, obj map[string]any) error {
	data, err := handler.EncodeStored(obj)
	if err != nil {
		return err
	}
	if _, err := s.raw.Create(ctx, key, data); err != nil && !errors.Is(err, storage.ErrExists) {
		return fmt.Errorf("creating %s: %w", key, err)
	}
	return nil
}
