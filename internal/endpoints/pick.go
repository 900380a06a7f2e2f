// Package endpoints picks the address behind a Service from its
// EndpointSlices as kube-apiserver picks one, for the callers that reach
// a Service by its endpoints: webhooks and services/proxy.
package endpoints

import (
	"math/rand/v2"
	"net"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// Pick returns the address ("host:port") of an endpoint that
// slices list for the Service port named portName, picked as
// kube-apiserver picks one (for services/proxy and for webhooks): the
// slices of family first, each family's in a random order; in each slice
// that has the port (with a number), its endpoints from a random one on;
// the first endpoint that is not unready (readiness unset counts as
// ready) and that accept, when set, accepts. Only an endpoint's first
// address is used. ok is false when no endpoint qualifies. slices is not
// reordered.
func Pick(slices []*discoveryv1.EndpointSlice, portName string, family corev1.IPFamily, accept func(*discoveryv1.Endpoint) bool) (addr string, ok bool) {
	order := rand.Perm(len(slices))
	sorted := make([]*discoveryv1.EndpointSlice, len(slices))
	for i, j := range order {
		sorted[i] = slices[j]
	}
	preferred := discoveryv1.AddressType(family)
	sort.SliceStable(sorted, func(i, j int) bool {
		return sorted[i].AddressType == preferred && sorted[j].AddressType != preferred
	})
	for _, s := range sorted {
		for _, p := range s.Ports {
			if p.Port == nil || portName != stringOf(p.Name) || len(s.Endpoints) == 0 {
				continue
			}
			start := rand.IntN(len(s.Endpoints))
			for i := range s.Endpoints {
				ep := &s.Endpoints[(start+i)%len(s.Endpoints)]
				if len(ep.Addresses) == 0 || (ep.Conditions.Ready != nil && !*ep.Conditions.Ready) {
					continue
				}
				if accept != nil && !accept(ep) {
					continue
				}
				return net.JoinHostPort(ep.Addresses[0], strconv.Itoa(int(*p.Port))), true
			}
		}
	}
	return "", false
}

// stringOf reads an EndpointSlice port's name: one stored without a name
// has the empty one, which upstream's defaulting gives it.
func stringOf(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
