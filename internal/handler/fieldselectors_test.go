package handler_test

import "testing"

// Namespaces are selected by status.phase and services by spec.type and
// spec.clusterIP, as upstream's field label conversions allow.
func TestBuiltinFieldSelectors(t *testing.T) {
	e := newEnv(t)
	if r := e.do(req{method: "POST", path: "/api/v1/namespaces", body: ns("sel")}); r.code != 201 {
		t.Fatalf("create namespace: %d %s", r.code, r.body)
	}
	svc := `{"apiVersion":"v1","kind":"Service","metadata":{"name":"web"},"spec":{"type":"ClusterIP","clusterIP":"None","ports":[{"port":80}]}}`
	if r := e.do(req{method: "POST", path: "/api/v1/namespaces/sel/services", body: svc}); r.code != 201 {
		t.Fatalf("create service: %d %s", r.code, r.body)
	}
	for _, tc := range []struct {
		path string
		want int
	}{
		{"/api/v1/namespaces?fieldSelector=status.phase%3DActive,metadata.name%3Dsel", 1},
		{"/api/v1/namespaces?fieldSelector=status.phase%3DTerminating", 0},
		{"/api/v1/namespaces/sel/services?fieldSelector=spec.type%3DClusterIP", 1},
		{"/api/v1/namespaces/sel/services?fieldSelector=spec.clusterIP%3DNone", 1},
		{"/api/v1/namespaces/sel/services?fieldSelector=spec.type%3DNodePort", 0},
	} {
		r := e.do(req{method: "GET", path: tc.path})
		items, _ := r.obj(t)["items"].([]any)
		if r.code != 200 || len(items) != tc.want {
			t.Errorf("%s: %d, %d items, want %d", tc.path, r.code, len(items), tc.want)
		}
	}
}
