package builtin

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// The cells upstream's printers give Endpoints, EndpointSlices and policy
// bindings: at most three addresses and how many more, <none> or <unset>
// for nothing, a binding's param as namespace/name, */name or its
// selector.
func TestEndpointAndBindingCells(t *testing.T) {
	for _, tc := range []struct {
		name  string
		row   func(map[string]any) []any
		obj   string
		cells []any // without name and age
	}{
		{"endpoints", endpointsHooks{stored: newStored[corev1.Endpoints]("Endpoints", "v1")}.TableRow,
			`{metadata: {name: a}, subsets: [{addresses: [{ip: 10.0.0.1}, {ip: 10.0.0.2}], ports: [{port: 80}, {port: 443}]}]}`,
			[]any{"10.0.0.1:80,10.0.0.2:80,10.0.0.1:443 + 1 more..."}},
		{"endpoints without ports", endpointsHooks{stored: newStored[corev1.Endpoints]("Endpoints", "v1")}.TableRow,
			`{metadata: {name: a}, subsets: [{addresses: [{ip: 10.0.0.1}]}]}`, []any{"10.0.0.1"}},
		{"endpoints without subsets", endpointsHooks{stored: newStored[corev1.Endpoints]("Endpoints", "v1")}.TableRow,
			`{metadata: {name: a}}`, []any{"<none>"}},
		{"endpointslice", endpointSliceHooks{newStored[discoveryv1.EndpointSlice]("EndpointSlice", "v1")}.TableRow,
			`{metadata: {name: a}, addressType: IPv4, ports: [{port: 80}, {name: https}], endpoints: [{addresses: [10.0.0.1, 10.0.0.2]}, {addresses: [10.0.0.3, 10.0.0.4, 10.0.0.5]}]}`,
			[]any{"IPv4", "80,https", "10.0.0.1,10.0.0.2,10.0.0.3 + 2 more..."}},
		{"empty endpointslice", endpointSliceHooks{newStored[discoveryv1.EndpointSlice]("EndpointSlice", "v1")}.TableRow,
			`{metadata: {name: a}, addressType: IPv6}`, []any{"IPv6", "<unset>", "<unset>"}},
		{"binding, namespaced param", bindingHooks{}.TableRow, `{metadata: {name: a}, spec: {policyName: p, paramRef: {name: cfg, namespace: team}}}`, []any{"p", "team/cfg"}},
		{"binding, param by name", bindingHooks{}.TableRow, `{metadata: {name: a}, spec: {policyName: p, paramRef: {name: cfg}}}`, []any{"p", "*/cfg"}},
		{"binding, param by selector", mutatingBindingHooks{}.TableRow, `{metadata: {name: a}, spec: {policyName: p, paramRef: {selector: {matchLabels: {tier: web}}}}}`, []any{"p", "tier=web"}},
		{"binding without param", mutatingBindingHooks{}.TableRow, `{metadata: {name: a}, spec: {policyName: p}}`, []any{"p", "<unset>"}},
	} {
		cells := tc.row(decodeYAML(t, tc.obj))
		if got := cells[1 : len(cells)-1]; !reflect.DeepEqual(got, tc.cells) {
			t.Errorf("%s: cells %q, want %q", tc.name, got, tc.cells)
		}
	}
}
