package webhook

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/crdserver/crdserver/internal/endpoints"
)

// Services is where ServiceResolver reads the Service objects the server
// stores, and the addresses behind them. Without pods or an endpoints
// controller, Endpoints and EndpointSlices are what users write.
type Services interface {
	// Service returns the named Service; a missing one is an error that
	// says so.
	Service(ctx context.Context, namespace, name string) (*corev1.Service, error)
	// EndpointSlices returns the slices labelled with the Service's name
	// (kubernetes.io/service-name), none being no error.
	EndpointSlices(ctx context.Context, namespace, service string) ([]*discoveryv1.EndpointSlice, error)
	// Endpoints returns the Service's Endpoints object, nil when there is
	// none.
	Endpoints(ctx context.Context, namespace, name string) (*corev1.Endpoints, error)
}

// ServiceResolver resolves Services as a cluster without kube-proxy
// would reach them: an ExternalName Service is its external name, any
// other type is one of the ready addresses its EndpointSlices (or, when it
// has none, its Endpoints) list for the Service port, at the port's target
// port.
type ServiceResolver struct {
	Services Services
}

var _ Resolver = ServiceResolver{}

func (r ServiceResolver) Resolve(ctx context.Context, namespace, name string, port int32) (string, error) {
	svc, err := r.Services.Service(ctx, namespace, name)
	if err != nil {
		return "", err
	}
	switch svc.Spec.Type {
	case corev1.ServiceTypeExternalName:
		return net.JoinHostPort(svc.Spec.ExternalName, strconv.Itoa(int(port))), nil
	case "", corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer:
	default:
		return "", fmt.Errorf("unsupported service type %q", svc.Spec.Type)
	}
	var svcPort *corev1.ServicePort
	for i := range svc.Spec.Ports {
		if svc.Spec.Ports[i].Port == port {
			svcPort = &svc.Spec.Ports[i]
			break
		}
	}
	if svcPort == nil {
		return "", fmt.Errorf("no service port %d found for service %q", port, name)
	}
	slices, err := r.Services.EndpointSlices(ctx, namespace, name)
	if err != nil {
		return "", err
	}
	family := corev1.IPFamilyUnknown
	if len(svc.Spec.IPFamilies) > 0 {
		family = svc.Spec.IPFamilies[0]
	}
	if addr, ok := endpoints.Pick(slices, svcPort.Name, family, nil); ok {
		return addr, nil
	}
	// Without slices (no mirroring controller runs here), the Endpoints.
	var candidates []string
	if len(slices) == 0 {
		eps, err := r.Services.Endpoints(ctx, namespace, name)
		if err != nil {
			return "", err
		}
		if eps != nil {
			for _, ss := range eps.Subsets {
				for _, p := range ss.Ports {
					if p.Name != svcPort.Name {
						continue
					}
					for _, a := range ss.Addresses {
						candidates = append(candidates, net.JoinHostPort(a.IP, strconv.Itoa(int(p.Port))))
					}
				}
			}
		}
	}
	if len(candidates) == 0 {
		return "", fmt.Errorf("no endpoints available for service %q", name)
	}
	return candidates[rand.IntN(len(candidates))], nil
}
