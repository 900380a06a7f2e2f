package handler_test

import (
	"strings"
	"testing"
)

// A write that leaves the object as it reads writes nothing, unless
// storage holds it in another form: an object stored before its schema
// gained a default reads with the default, and replacing it with what it
// reads stores the default (as upstream, which defaults what it reads from
// storage, writes whenever the encoded result differs from the stored
// bytes). The next such write changes nothing.
func TestNoOpWrites(t *testing.T) {
	e := newCronTabEnv(t)
	const path = cronTabs + "/m1"
	rv := func(r resp) string { return str(r.obj(t), "metadata", "resourceVersion") }

	got := e.do(req{method: "GET", path: path})
	r := e.do(req{method: "PUT", path: path, body: string(got.body)})
	if r.code != 200 || rv(r) != rv(got) {
		t.Fatalf("replacing m1 with itself: %d, resourceVersion %s → %s", r.code, rv(got), rv(r))
	}
	r = e.do(req{method: "PATCH", path: path, body: `{"spec":{"replicas":1}}`, contentType: "application/merge-patch+json"})
	if r.code != 200 || rv(r) != rv(got) {
		t.Fatalf("a merge patch setting what is set: %d, resourceVersion %s → %s", r.code, rv(got), rv(r))
	}

	// The schema gains a default for spec.image.
	crdPath := "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/crontabs.stable.example.com"
	crd := e.do(req{method: "GET", path: crdPath})
	changed := strings.Replace(string(crd.body), `"replicas":{"type":"integer"}},"type":"object"}`, `"image":{"default":"nginx","type":"string"},"replicas":{"type":"integer"}},"type":"object"}`, 1)
	if changed == string(crd.body) {
		t.Fatalf("the CRD's spec schema is not where the test looks: %s", crd.body)
	}
	if r := e.do(req{method: "PUT", path: crdPath, body: changed}); r.code != 200 {
		t.Fatalf("adding a default: %d %s", r.code, r.body)
	}
	for i := 0; ; i++ {
		if got = e.do(req{method: "GET", path: path}); str(got.obj(t), "spec", "image") == "nginx" {
			break
		}
		if i == 300 {
			t.Fatalf("m1 never read with the new default: %s", got.body)
		}
		sleep()
	}

	r = e.do(req{method: "PUT", path: path, body: string(got.body)})
	if r.code != 200 || rv(r) == rv(got) || str(r.obj(t), "spec", "image") != "nginx" {
		t.Fatalf("replacing m1, stored without the default, with what it reads: %d, resourceVersion %s → %s: %s", r.code, rv(got), rv(r), r.body)
	}
	written := r
	if got := e.do(req{method: "GET", path: path}); rv(got) != rv(written) {
		t.Errorf("after the write, m1 reads at %s, the write answered %s", rv(got), rv(written))
	}
	r = e.do(req{method: "PUT", path: path, body: string(written.body)})
	if r.code != 200 || rv(r) != rv(written) {
		t.Errorf("replacing m1 with itself once stored with the default: %d, resourceVersion %s → %s", r.code, rv(written), rv(r))
	}
}
