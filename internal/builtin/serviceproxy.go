package builtin

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	netutils "k8s.io/utils/net"

	"github.com/crdserver/crdserver/internal/endpoints"
	"github.com/crdserver/crdserver/internal/registry"
)

// ServiceBackends is where services/proxy finds the addresses behind a
// Service.
type ServiceBackends interface {
	// Service returns the named Service; a missing one is a NotFound
	// error.
	Service(ctx context.Context, namespace, name string) (*corev1.Service, error)
	// EndpointSlices returns the slices labelled with the Service's name
	// (kubernetes.io/service-name), none being no error.
	EndpointSlices(ctx context.Context, namespace, service string) ([]*discoveryv1.EndpointSlice, error)
	// Pod returns the named pod, nil when there is none.
	Pod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
}

// serviceProxy is services/proxy as upstream's discovery lists it.
var serviceProxy = registry.OtherSubresource{
	Name: "proxy", Verbs: []string{"create", "delete", "get", "patch", "update"},
	Kind: &schema.GroupVersionKind{Version: "v1", Kind: "ServiceProxyOptions"}, Connect: true,
}

// WithServiceProxy adds services/proxy to the Services definition d: a
// request is forwarded to a ready endpoint of the Service's
// EndpointSlices, which backends reads, whose address is its target
// pod's; slices of family, the primary family of the cluster's service
// IPs, are tried first.
func WithServiceProxy(d *registry.Definition, backends ServiceBackends, family corev1.IPFamily) *registry.Definition {
	cp := *d
	cp.Versions = slices.Clone(d.Versions)
	for i := range cp.Versions {
		v := &cp.Versions[i]
		v.Subresources.Other = append(slices.Clip(v.Subresources.Other), serviceProxy)
	}
	cp.Hooks = serviceProxyHooks{serviceHooks: d.Hooks.(serviceHooks), backends: backends, family: family}
	return &cp
}

type serviceProxyHooks struct {
	serviceHooks
	backends ServiceBackends
	family   corev1.IPFamily
}

var _ registry.Proxier = serviceProxyHooks{}

// Proxies: services/proxy.
func (serviceProxyHooks) Proxies(sub string) bool { return sub == "proxy" }

// ProxyLocation resolves services/proxy's [scheme:]name[:port] as
// upstream does. A port number is looked up among the Service's ports
// for its name (so the Service must exist); a port name, or none (the
// unnamed port), is looked for in the EndpointSlices alone, so that a
// Service that does not exist has no endpoints rather than not being
// found. An endpoint is proxied to only when its address is the pod IP
// of the pod it targets, in the Service's namespace (podBehind).
func (h serviceProxyHooks) ProxyLocation(ctx context.Context, namespace, id string) (*url.URL, error) {
	scheme, name, port, ok := utilnet.SplitSchemeNamePort(id)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid service request %q", id))
	}
	if n, err := strconv.ParseInt(port, 10, 64); err == nil {
		if port, err = h.portName(ctx, namespace, name, n); err != nil {
			return nil, err
		}
	}
	eps, err := h.backends.EndpointSlices(ctx, namespace, name)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	host, ok := endpoints.Pick(eps, port, h.family, func(ep *discoveryv1.Endpoint) bool {
		return h.podBehind(ctx, namespace, ep)
	})
	if !ok {
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", name))
	}
	return &url.URL{Scheme: scheme, Host: host}, nil
}

// portName is the name of the Service's port numbered n.
func (h serviceProxyHooks) portName(ctx context.Context, namespace, name string, n int64) (string, error) {
	svc, err := h.backends.Service(ctx, namespace, name)
	if err != nil {
		return "", err
	}
	for _, p := range svc.Spec.Ports {
		if int64(p.Port) == n {
			return p.Name, nil
		}
	}
	return "", apierrors.NewServiceUnavailable(fmt.Sprintf("no service port %d found for service %q", n, name))
}

// podBehind reports whether ep targets a pod of namespace that has ep's
// first address among its pod IPs: upstream proxies to pods only. The
// address must be a global unicast IP too: upstream's validation refuses
// slices with loopback addresses, which crdserver's keeps (for webhooks
// running beside it), and the server must not be led to its own.
func (h serviceProxyHooks) podBehind(ctx context.Context, namespace string, ep *discoveryv1.Endpoint) bool {
	ref := ep.TargetRef
	if ref == nil || ref.Namespace != namespace {
		return false
	}
	if ip := netutils.ParseIPSloppy(ep.Addresses[0]); ip == nil || !ip.IsGlobalUnicast() {
		return false
	}
	pod, err := h.backends.Pod(ctx, namespace, ref.Name)
	if err != nil || pod == nil {
		return false
	}
	return slices.ContainsFunc(pod.Status.PodIPs, func(ip corev1.PodIP) bool { return ip.IP == ep.Addresses[0] })
}
