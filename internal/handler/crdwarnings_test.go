package handler_test

import (
	"fmt"
	"slices"
	"testing"
)

// TestCRDWarnings: CRD writes are answered with the warnings of
// upstream's CRD strategy, after the request's own (a deprecated
// version), once each; updates warn of what they add; the status
// subresource of nothing.
func TestCRDWarnings(t *testing.T) {
	e := newEnv(t)
	const crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	const crd = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
	 "metadata":{"name":"gauges.warn.example.com"},
	 "spec":{"group":"warn.example.com","scope":"Namespaced","names":{"plural":"gauges","kind":"Gauge"},
	  "versions":[{"name":"v1","served":true,"storage":true,"subresources":{"status":{}},
	   "schema":{"openAPIV3Schema":{"type":"object","format":"root","properties":{
	    "spec":{"type":"object","properties":{"when":{"type":"string","format":"date-time"},
	     "tags":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"object","x-kubernetes-map-type":"atomic","format":"root"}}}}}}}}]}}`
	const addFormat = `[{"op":"add","path":"/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/%s",
	 "value":{"type":"string","format":"%s"}}]`
	setWarning := `299 - "x-kubernetes-list-type: set for items of type \"object\" is not supported by server-side apply or CEL validation rules"`
	for _, tc := range []struct {
		name string
		req  req
		code int
		want []string
	}{
		{"dry-run create", req{method: "POST", path: crds + "?dryRun=All", body: crd}, 201,
			[]string{`299 - "unrecognized format \"root\""`, setWarning}},
		{"create", req{method: "POST", path: crds, body: crd}, 201,
			[]string{`299 - "unrecognized format \"root\""`, setWarning}},
		{"update adding a format", req{method: "PATCH", path: crds + "/gauges.warn.example.com", contentType: "application/json-patch+json",
			body: fmt.Sprintf(addFormat, "a", "new")}, 200, []string{`299 - "unrecognized format \"new\""`}},
		{"update repeating a stored format", req{method: "PATCH", path: crds + "/gauges.warn.example.com", contentType: "application/json-patch+json",
			body: fmt.Sprintf(addFormat, "b", "root")}, 200, nil},
		{"status", req{method: "PATCH", path: crds + "/gauges.warn.example.com/status", contentType: "application/json-patch+json",
			body: fmt.Sprintf(addFormat, "c", "status")}, 200, nil},
		{"v1beta1", req{method: "POST", path: "/apis/apiextensions.k8s.io/v1beta1/customresourcedefinitions",
			body: `{"apiVersion":"apiextensions.k8s.io/v1beta1","kind":"CustomResourceDefinition","metadata":{"name":"olds.warn.example.com"},
			 "spec":{"group":"warn.example.com","scope":"Namespaced","names":{"plural":"olds","kind":"Old"},
			  "versions":[{"name":"v1","served":true,"storage":true},{"name":"v2","served":true,"storage":false}],
			  "validation":{"openAPIV3Schema":{"type":"object","format":"beta"}}}}`}, 201,
			[]string{`299 - "apiextensions.k8s.io/v1beta1 CustomResourceDefinition is deprecated in v1.16+, unavailable in v1.22+; use apiextensions.k8s.io/v1 CustomResourceDefinition"`,
				`299 - "unrecognized format \"beta\""`}},
	} {
		r := e.do(tc.req)
		if got := r.header.Values("Warning"); r.code != tc.code || !slices.Equal(got, tc.want) {
			t.Errorf("%s: %d, warnings %q, want %d, %q\n%s", tc.name, r.code, got, tc.code, tc.want, r.body)
		}
	}
}
