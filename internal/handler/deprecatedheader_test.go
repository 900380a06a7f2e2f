package handler_test

import (
	"slices"
	"testing"
)

// A deprecated version's own warning is a Warning header like any: its
// quotes and backslashes escaped, as upstream's recorder writes it.
func TestDeprecationWarningHeader(t *testing.T) {
	e := newEnv(t)
	const crd = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
	 "metadata":{"name":"olds.dw.example.com"},
	 "spec":{"group":"dw.example.com","scope":"Namespaced","names":{"plural":"olds","singular":"old","kind":"Old"},
	  "versions":[{"name":"v1","served":true,"storage":true,"deprecated":true,"deprecationWarning":"use \"v2\" \\ soon",
	   "schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`
	if r := e.do(req{method: "POST", path: "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", body: crd}); r.code != 201 {
		t.Fatalf("creating the CRD: %d %s", r.code, r.body)
	}
	for i := 0; ; i++ {
		r := e.do(req{method: "GET", path: "/apis/dw.example.com/v1/namespaces/default/olds"})
		if r.code == 200 {
			if got, want := r.header.Values("Warning"), []string{`299 - "use \"v2\" \\ soon"`}; !slices.Equal(got, want) {
				t.Errorf("Warning %q, want %q", got, want)
			}
			return
		}
		if i == 300 {
			t.Fatalf("olds are not served: %d %s", r.code, r.body)
		}
		sleep()
	}
}
