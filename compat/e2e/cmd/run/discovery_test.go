package main

import (
	"encoding/json"
	"testing"
)

// TestComparableRootIndex checks that the root index is compared by the
// paths both servers serve: upstream's health checks crdserver does not
// run, and crdserver's versions beyond upstream, left out; the component
// pages, which both serve, kept.
func TestComparableRootIndex(t *testing.T) {
	for _, tc := range []struct{ server, paths, want string }{
		{"kube-apiserver",
			`["/api","/apis/","/apis/apps/v1","/apis/flowcontrol.apiserver.k8s.io","/apis/flowcontrol.apiserver.k8s.io/v1","/flagz","/healthz/etcd",
			"/healthz/poststarthook/rbac/bootstrap-roles","/livez/autoregister-completion","/metrics","/metrics/slis","/readyz/shutdown"]`,
			`["/api","/apis/","/apis/apps/v1","/apis/flowcontrol.apiserver.k8s.io","/apis/flowcontrol.apiserver.k8s.io/v1","/flagz","/healthz/etcd","/metrics","/metrics/slis","/readyz/shutdown"]`},
		{"crdserver",
			`["/api","/apis/apiextensions.k8s.io/v1","/apis/apiextensions.k8s.io/v1beta1","/readyz/poststarthook/rbac/bootstrap-roles","/version"]`,
			`["/api","/apis/apiextensions.k8s.io/v1","/version"]`},
	} {
		var doc any
		if err := json.Unmarshal([]byte(`{"paths":`+tc.paths+`}`), &doc); err != nil {
			t.Fatal(err)
		}
		got, _ := json.Marshal(comparableDiscovery(tc.server, doc))
		if want := `{"paths":` + tc.want + `}`; string(got) != want {
			t.Errorf("%s: %s, want %s", tc.server, got, want)
		}
	}
}
