package handler_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// A write through pods/resize is the whole pod until it is prepared:
// its managedFields record what the patch changed (the image too, as
// kube-apiserver 1.37's do), and only then is it kept to the containers'
// resources, a new generation. A PUT through it is the same; a change of
// QoS class is refused.
func TestResize(t *testing.T) {
	e := newEnv(t)
	const pod = "/api/v1/namespaces/default/pods/web"
	if r := e.do(req{method: "POST", path: "/api/v1/namespaces/default/pods", body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","labels":{"app":"web"}},` +
		`"spec":{"containers":[{"name":"app","image":"nginx","resources":{"requests":{"cpu":"100m"},"limits":{"cpu":"200m"}}}]}}`}); r.code != 201 {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	type container struct {
		Image     string
		Resources struct{ Requests, Limits map[string]string }
	}
	type podObj struct {
		Metadata struct {
			Generation    int64
			Labels        map[string]string
			ManagedFields []struct {
				Manager, Subresource string
				FieldsV1             json.RawMessage
			}
		}
		Spec struct{ Containers []container }
	}
	read := func(r resp) podObj {
		t.Helper()
		var p podObj
		if err := json.Unmarshal(r.body, &p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	r := e.do(req{method: "PATCH", path: pod + "/resize?fieldManager=resizer", contentType: "application/strategic-merge-patch+json",
		body: `{"metadata":{"labels":{"app":"other"}},"spec":{"containers":[{"name":"app","image":"nginx:2","resources":{"requests":{"cpu":"150m"},"limits":{"cpu":"300m"}}}]}}`})
	if r.code != 200 {
		t.Fatalf("resize: %d %s", r.code, r.body)
	}
	p := read(r)
	c := p.Spec.Containers[0]
	if c.Image != "nginx" || p.Metadata.Labels["app"] != "web" || c.Resources.Requests["cpu"] != "150m" || c.Resources.Limits["cpu"] != "300m" || p.Metadata.Generation != 2 {
		t.Errorf("after the resize: image %q, labels %v, resources %+v, generation %d; want the resources changed alone, generation 2",
			c.Image, p.Metadata.Labels, c.Resources, p.Metadata.Generation)
	}
	var resizer string
	for _, m := range p.Metadata.ManagedFields {
		if m.Manager == "resizer" && m.Subresource == "resize" {
			resizer = string(m.FieldsV1)
		}
	}
	for _, f := range []string{`"f:image"`, `"f:labels"`, `"f:cpu"`} {
		if !strings.Contains(resizer, f) {
			t.Errorf("the resizer's fields %s lack %s", resizer, f)
		}
	}
	r = e.do(req{method: "PUT", path: pod + "/resize", body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"default","labels":{"x":"y"}},` +
		`"spec":{"containers":[{"name":"app","image":"busybox","resources":{"requests":{"cpu":"120m"},"limits":{"cpu":"240m"}}}]}}`})
	if r.code != 200 {
		t.Fatalf("PUT resize: %d %s", r.code, r.body)
	}
	if p := read(r); p.Spec.Containers[0].Image != "nginx" || p.Metadata.Labels["app"] != "web" || p.Spec.Containers[0].Resources.Limits["cpu"] != "240m" || p.Metadata.Generation != 3 {
		t.Errorf("after the PUT: %s", r.body)
	}
	r = e.do(req{method: "PATCH", path: pod + "/resize", contentType: "application/merge-patch+json",
		body: `{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"240m"},"limits":{"cpu":"240m","memory":"1Gi"}}}]}}`})
	if r.code != 422 || !strings.Contains(string(r.body), "Pod QOS Class may not change as a result of resizing") {
		t.Errorf("a resize to Guaranteed: %d %s", r.code, r.body)
	}
}
