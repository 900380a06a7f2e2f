package endpoints

import (
	"runtime"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// line names a case by the line it is written on.
func line() string {
	_, _, l, _ := runtime.Caller(1)
	return "line " + strconv.Itoa(l)
}

func ptr[T any](v T) *T { return &v }

// slice is an EndpointSlice of family with one port and endpoints, each
// given as its addresses and readiness ("ready", "unready" or "" for
// unset).
func slice(family discoveryv1.AddressType, portName *string, port int32, eps ...[]string) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{AddressType: family, Ports: []discoveryv1.EndpointPort{{Name: portName, Port: &port}}}
	for _, e := range eps {
		ep := discoveryv1.Endpoint{Addresses: e[1:]}
		switch e[0] {
		case "ready":
			ep.Conditions.Ready = ptr(true)
		case "unready":
			ep.Conditions.Ready = ptr(false)
		}
		s.Endpoints = append(s.Endpoints, ep)
	}
	return s
}

func TestPick(t *testing.T) {
	v4, v6 := discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6
	notAt := func(addr string) func(*discoveryv1.Endpoint) bool {
		return func(ep *discoveryv1.Endpoint) bool { return ep.Addresses[0] != addr }
	}
	cases := []struct {
		name   string
		slices []*discoveryv1.EndpointSlice
		port   string
		family corev1.IPFamily
		accept func(*discoveryv1.Endpoint) bool
		// want are the addresses it may pick, each at least once in
		// many tries; none: it picks none.
		want []string
	}{
		{name: line()},
		{name: line(), slices: []*discoveryv1.EndpointSlice{slice(v4, ptr("http"), 8080, []string{"", "10.0.0.1"})}, port: "http",
			want: []string{"10.0.0.1:8080"}},
		// The port by name; a port without one is the unnamed port.
		{name: line(), slices: []*discoveryv1.EndpointSlice{slice(v4, ptr("http"), 8080, []string{"", "10.0.0.1"})}, port: "metrics"},
		{name: line(), slices: []*discoveryv1.EndpointSlice{slice(v4, ptr("http"), 8080, []string{"", "10.0.0.1"})}, port: ""},
		{name: line(), slices: []*discoveryv1.EndpointSlice{slice(v4, nil, 8080, []string{"", "10.0.0.1"})}, port: "",
			want: []string{"10.0.0.1:8080"}},
		{name: line(), slices: []*discoveryv1.EndpointSlice{slice(v4, ptr(""), 8080, []string{"", "10.0.0.1"})}, port: "",
			want: []string{"10.0.0.1:8080"}},
		// Unready endpoints are skipped; readiness unset is ready.
		{name: line(), slices: []*discoveryv1.EndpointSlice{slice(v4, ptr("http"), 80, []string{"unready", "10.0.0.1"})}, port: "http"},
		{name: line(), slices: []*discoveryv1.EndpointSlice{slice(v4, ptr("http"), 80,
			[]string{"unready", "10.0.0.1"}, []string{"ready", "10.0.0.2"}, []string{"", "10.0.0.3"})}, port: "http",
			want: []string{"10.0.0.2:80", "10.0.0.3:80"}},
		// Only the first address of an endpoint; none is no endpoint.
		{name: line(), slices: []*discoveryv1.EndpointSlice{slice(v4, ptr("http"), 80, []string{"", "10.0.0.1", "10.0.0.2"}, []string{""})}, port: "http",
			want: []string{"10.0.0.1:80"}},
		// What accept refuses is skipped.
		{name: line(), slices: []*discoveryv1.EndpointSlice{slice(v4, ptr("http"), 80, []string{"", "10.0.0.1"}, []string{"", "10.0.0.2"})}, port: "http",
			accept: notAt("10.0.0.1"), want: []string{"10.0.0.2:80"}},
		{name: line(), slices: []*discoveryv1.EndpointSlice{slice(v4, ptr("http"), 80, []string{"", "10.0.0.1"})}, port: "http",
			accept: notAt("10.0.0.1")},
		// The family's slices first, when they have the port; IPv6 hosts
		// are bracketed.
		{name: line(), slices: []*discoveryv1.EndpointSlice{
			slice(v4, ptr("http"), 80, []string{"", "10.0.0.1"}), slice(v6, ptr("http"), 80, []string{"", "fd00::1"}),
		}, port: "http", family: corev1.IPv6Protocol, want: []string{"[fd00::1]:80"}},
		{name: line(), slices: []*discoveryv1.EndpointSlice{
			slice(v6, ptr("http"), 80, []string{"", "fd00::1"}), slice(v4, ptr("http"), 80, []string{"", "10.0.0.1"}),
		}, port: "http", family: corev1.IPv4Protocol, want: []string{"10.0.0.1:80"}},
		{name: line(), slices: []*discoveryv1.EndpointSlice{
			slice(v6, ptr("http"), 80, []string{"unready", "fd00::1"}), slice(v4, ptr("http"), 80, []string{"", "10.0.0.1"}),
		}, port: "http", family: corev1.IPv6Protocol, want: []string{"10.0.0.1:80"}},
		// Slices of one family in any order.
		{name: line(), slices: []*discoveryv1.EndpointSlice{
			slice(v4, ptr("http"), 80, []string{"", "10.0.0.1"}), slice(v4, ptr("http"), 81, []string{"", "10.0.0.2"}),
		}, port: "http", family: corev1.IPv4Protocol, want: []string{"10.0.0.1:80", "10.0.0.2:81"}},
	}
	for _, tc := range cases {
		seen := map[string]int{}
		for range 200 {
			addr, ok := Pick(tc.slices, tc.port, tc.family, tc.accept)
			if ok != (addr != "") {
				t.Fatalf("%s: picked %q, ok %v", tc.name, addr, ok)
			}
			if ok {
				seen[addr]++
			}
		}
		if len(tc.want) == 0 && len(seen) > 0 {
			t.Errorf("%s: picked %v, want none", tc.name, seen)
		}
		for _, w := range tc.want {
			if seen[w] == 0 {
				t.Errorf("%s: never picked %s (picked %v)", tc.name, w, seen)
			}
			delete(seen, w)
		}
		if len(seen) > 0 {
			t.Errorf("%s: picked %v, which it may not", tc.name, seen)
		}
	}
}

func TestPickKeepsOrder(t *testing.T) {
	a := slice(discoveryv1.AddressTypeIPv6, ptr("http"), 80, []string{"", "fd00::1"})
	b := slice(discoveryv1.AddressTypeIPv4, ptr("http"), 80, []string{"", "10.0.0.1"})
	slices := []*discoveryv1.EndpointSlice{a, b}
	for range 20 {
		Pick(slices, "http", corev1.IPv4Protocol, nil)
		if slices[0] != a || slices[1] != b {
			t.Fatal("the caller's slices were reordered")
		}
	}
}
