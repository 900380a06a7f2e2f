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
	if err := s.ensureKubernetesService(ctx, ips, port, now); err != nil {
		return err
	}
	if err := s.createStored(ctx, keyPrefix(s.cfg.EtcdPrefix, endpointsGR)+"default/kubernetes", builtin.KubernetesEndpoints(ip, int64(port), now)); err != nil {
		return err
	}
	return s.createStored(ctx, keyPrefix(s.cfg.EtcdPrefix, endpointSlicesGR)+"default/kubernetes", builtin.KubernetesEndpointSlice(ip, int64(port), now))
}

// ensureKubernetesService creates default/kubernetes at the range's first
// address unless it exists. Replicas starting together race for the
// address: a loser's reservation fails while the winner's Service is on its
// way to storage (or a third replica has taken over the winner's record),
// so a failed reservation is retried a few times, each starting by looking
// for the Service the winner stored. A winner that crashed before storing
// it left a record of the kubernetes Service without its Service, which a
// retry takes over.
func (s *Server) ensureKubernetesService(ctx context.Context, ips *builtin.ClusterIPs, port int, now time.Time) error {
	svcKey := keyPrefix(s.cfg.EtcdPrefix, servicesGR) + "default/kubernetes"
	var allocErr error
	for attempt := range 10 {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(attempt) * 50 * time.Millisecond):
			}
		}
		_, err := s.raw.Get(ctx, svcKey)
		if err == nil {
			return nil
		}
		if !errors.Is(err, storage.ErrNotFound) {
			return fmt.Errorf("reading the kubernetes Service: %w", err)
		}
		svc := builtin.KubernetesService(ips.First().String(), int64(port), now)
		undo, err := ips.AllocateService(ctx, svc)
		if err != nil {
			allocErr = err
			continue
		}
		if err := s.createStored(ctx, svcKey, svc); err != nil {
			undo()
			return err
		}
		return nil
	}
	return fmt.Errorf("allocating the kubernetes Service's cluster IP: %w", allocErr)
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
