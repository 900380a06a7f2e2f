package builtin

import (
	"context"
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdserver/crdserver/internal/registry"
)

// backends are Services, EndpointSlices and pods by namespace/name.
type backends struct {
	services map[string]*corev1.Service
	slices   map[string][]*discoveryv1.EndpointSlice // by namespace/service
	pods     map[string]*corev1.Pod
}

func (b backends) Service(_ context.Context, ns, name string) (*corev1.Service, error) {
	if s, ok := b.services[ns+"/"+name]; ok {
		return s, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("services"), name)
}

func (b backends) EndpointSlices(_ context.Context, ns, service string) ([]*discoveryv1.EndpointSlice, error) {
	if service == "broken" {
		return nil, errors.New("cache is gone")
	}
	return b.slices[ns+"/"+service], nil
}

func (b backends) Pod(_ context.Context, ns, name string) (*corev1.Pod, error) {
	return b.pods[ns+"/"+name], nil
}

func podAt(ns, name string, ips ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	for _, ip := range ips {
		p.Status.PodIPs = append(p.Status.PodIPs, corev1.PodIP{IP: ip})
	}
	return p
}

// endpointSlice lists endpoints, each at its address and targeting the
// pod namespace/name ("" for no target), for the ports name=port.
func endpointSlice(ports map[string]int32, eps ...[3]string) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{AddressType: discoveryv1.AddressTypeIPv4}
	for name, port := range ports {
		s.Ports = append(s.Ports, discoveryv1.EndpointPort{Name: &name, Port: &port})
	}
	for _, e := range eps {
		ep := discoveryv1.Endpoint{Addresses: []string{e[0]}}
		if e[2] != "" {
			ep.TargetRef = &corev1.ObjectReference{Kind: "Pod", Namespace: e[1], Name: e[2]}
		}
		s.Endpoints = append(s.Endpoints, ep)
	}
	return s
}

func TestServiceProxyLocation(t *testing.T) {
	web := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
		{Name: "http", Port: 80}, {Name: "https", Port: 443}, {Name: "", Port: 8000},
	}}}
	b := backends{
		services: map[string]*corev1.Service{"ns/web": web, "ns/bare": {}},
		slices: map[string][]*discoveryv1.EndpointSlice{
			"ns/web": {endpointSlice(map[string]int32{"http": 8080, "https": 8443, "": 9000}, [3]string{"10.1.0.1", "ns", "web-0"})},
			// No service: slices alone.
			"ns/ghost": {endpointSlice(map[string]int32{"http": 8080}, [3]string{"10.1.0.1", "ns", "web-0"})},
			"ns/noref": {endpointSlice(map[string]int32{"http": 8080}, [3]string{"10.1.0.1", "", ""})},
			"ns/away":  {endpointSlice(map[string]int32{"http": 8080}, [3]string{"10.1.0.1", "other", "web-0"})},
			"ns/nopod": {endpointSlice(map[string]int32{"http": 8080}, [3]string{"10.1.0.1", "ns", "gone"})},
			"ns/moved": {endpointSlice(map[string]int32{"http": 8080}, [3]string{"10.1.0.9", "ns", "web-0"})},
			"ns/loop":  {endpointSlice(map[string]int32{"http": 8080}, [3]string{"127.0.0.1", "ns", "loop"})},
			"ns/mixed": {endpointSlice(map[string]int32{"http": 8080},
				[3]string{"10.1.0.9", "ns", "web-0"}, [3]string{"10.1.0.2", "ns", "web-1"}, [3]string{"127.0.0.1", "ns", "loop"})},
		},
		pods: map[string]*corev1.Pod{
			"ns/web-0":    podAt("ns", "web-0", "10.1.0.1"),
			"ns/web-1":    podAt("ns", "web-1", "fd00::2", "10.1.0.2"),
			"ns/loop":     podAt("ns", "loop", "127.0.0.1"),
			"other/web-0": podAt("other", "web-0", "10.1.0.1"),
		},
	}
	h := WithServiceProxy(Services(nil, nil), b, corev1.IPv4Protocol).Hooks.(serviceProxyHooks)
	unavailable := func(msg string) string { return fmt.Sprintf("503 ServiceUnavailable %s", msg) }
	cases := []struct {
		name, id string
		want     string // the URL, or the error's code, reason and message
	}{
		// By port name, number or neither; a scheme.
		{line(), "web:http", "//10.1.0.1:8080"},
		{line(), "web:80", "//10.1.0.1:8080"},
		{line(), "web:+80", "//10.1.0.1:8080"},
		{line(), "https:web:https", "https://10.1.0.1:8443"},
		{line(), "https:web:443", "https://10.1.0.1:8443"},
		{line(), "http:web:http", "http://10.1.0.1:8080"},
		{line(), "web", "//10.1.0.1:9000"},
		{line(), "web:", "//10.1.0.1:9000"},
		{line(), "web:8000", "//10.1.0.1:9000"},
		// Ids that do not parse.
		{line(), "ftp:web:80", `400 BadRequest invalid service request "ftp:web:80"`},
		{line(), "a:b:c:d", `400 BadRequest invalid service request "a:b:c:d"`},
		{line(), ":80", `400 BadRequest invalid service request ":80"`},
		// Two parts are a name and a port, whatever they say.
		{line(), "https:web", unavailable(`no endpoints available for service "https"`)},
		// A port number the Service does not have; one of a Service that
		// does not exist; a name no slice has.
		{line(), "web:8080", unavailable(`no service port 8080 found for service "web"`)},
		{line(), "web:-1", unavailable(`no service port -1 found for service "web"`)},
		{line(), "missing:80", `404 NotFound services "missing" not found`},
		{line(), "web:metrics", unavailable(`no endpoints available for service "web"`)},
		// A Service without slices, and slices without a Service.
		{line(), "bare", unavailable(`no endpoints available for service "bare"`)},
		{line(), "bare:80", unavailable(`no service port 80 found for service "bare"`)},
		{line(), "ghost:http", "//10.1.0.1:8080"},
		{line(), "missing", unavailable(`no endpoints available for service "missing"`)},
		// Endpoints that are not a pod's of the namespace at its IP, or
		// whose IP is loopback.
		{line(), "noref:http", unavailable(`no endpoints available for service "noref"`)},
		{line(), "away:http", unavailable(`no endpoints available for service "away"`)},
		{line(), "nopod:http", unavailable(`no endpoints available for service "nopod"`)},
		{line(), "moved:http", unavailable(`no endpoints available for service "moved"`)},
		{line(), "loop:http", unavailable(`no endpoints available for service "loop"`)},
		{line(), "mixed:http", "//10.1.0.2:8080"},
		{line(), "broken:http", `500 InternalError Internal error occurred: cache is gone`},
	}
	for _, tc := range cases {
		u, err := h.ProxyLocation(context.Background(), "ns", tc.id)
		got := ""
		if err != nil {
			var st apierrors.APIStatus
			if !errors.As(err, &st) {
				t.Errorf("%s: %q: error %v is no Status", tc.name, tc.id, err)
				continue
			}
			s := st.Status()
			got = fmt.Sprintf("%d %s %s", s.Code, s.Reason, s.Message)
		} else {
			got = u.String()
		}
		if got != tc.want {
			t.Errorf("%s: %q: got %s, want %s", tc.name, tc.id, got, tc.want)
		}
	}
}

func TestServiceProxyDiscovery(t *testing.T) {
	d := WithServiceProxy(Services(nil, nil), backends{}, corev1.IPv4Protocol)
	other := d.Versions[0].Subresources.Other
	if len(other) != 1 || other[0].Name != "proxy" || !other[0].Connect || other[0].Kind.Kind != "ServiceProxyOptions" {
		t.Errorf("subresources %+v, want services/proxy", other)
	}
	if len(Services(nil, nil).Versions[0].Subresources.Other) != 0 {
		t.Error("WithServiceProxy changed the definition it was given")
	}
	if px, ok := d.Hooks.(registry.Proxier); !ok || !px.Proxies("proxy") || px.Proxies("status") {
		t.Error("the hooks do not proxy services/proxy")
	}
}
