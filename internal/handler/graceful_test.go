package handler_test

import (
	"encoding/json"
	"testing"
)

// A pod is deleted gracefully, as upstream's pod strategy deletes it: on
// no node at once (marked first, so that watchers see the mark), bound
// to a node marked with its grace period until a delete shortens it to
// 0; a longer period changes nothing; a finalizer holds a pod marked
// with 0.
func TestGracefulDelete(t *testing.T) {
	e := newEnv(t)
	const pods = "/api/v1/namespaces/default/pods"
	create := func(body string) {
		t.Helper()
		if r := e.do(req{method: "POST", path: pods, body: body}); r.code != 201 {
			t.Fatalf("create: %d %s", r.code, r.body)
		}
	}
	grace := func(r resp) string {
		t.Helper()
		md, _ := r.obj(t)["metadata"].(map[string]any)
		if md["deletionTimestamp"] == nil {
			return "unmarked"
		}
		return jsonText(md["deletionGracePeriodSeconds"])
	}
	create(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"free"},"spec":{"containers":[{"name":"c","image":"x"}]}}`)
	create(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"bound"},"spec":{"nodeName":"n1","terminationGracePeriodSeconds":20,"containers":[{"name":"c","image":"x"}]}}`)
	create(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"held","finalizers":["example.com/hold"]},"spec":{"containers":[{"name":"c","image":"x"}]}}`)

	if r := e.do(req{method: "DELETE", path: pods + "/free"}); r.code != 200 || grace(r) != "0" {
		t.Errorf("delete free: %d %s", r.code, r.body)
	}
	if r := e.do(req{method: "GET", path: pods + "/free"}); r.code != 404 {
		t.Errorf("free after its delete: %d", r.code)
	}
	for _, c := range []struct{ query, want string }{
		{"", "20"}, {"", "20"}, {"?gracePeriodSeconds=30", "20"}, {"?gracePeriodSeconds=5", "5"},
	} {
		if r := e.do(req{method: "DELETE", path: pods + "/bound" + c.query}); r.code != 200 || grace(r) != c.want {
			t.Errorf("delete bound%s: %d, grace %s, want %s", c.query, r.code, grace(r), c.want)
		}
	}
	if r := e.do(req{method: "GET", path: pods + "/bound"}); r.code != 200 || grace(r) != "5" {
		t.Errorf("bound, marked: %d %s", r.code, r.body)
	}
	if r := e.do(req{method: "DELETE", path: pods + "/bound?gracePeriodSeconds=0"}); r.code != 200 || grace(r) != "0" {
		t.Errorf("delete bound with 0: %d %s", r.code, r.body)
	}
	if r := e.do(req{method: "GET", path: pods + "/bound"}); r.code != 404 {
		t.Errorf("bound after a delete with 0: %d", r.code)
	}
	if r := e.do(req{method: "DELETE", path: pods + "/held"}); r.code != 200 || grace(r) != "0" {
		t.Errorf("delete held: %d %s", r.code, r.body)
	}
	if r := e.do(req{method: "GET", path: pods + "/held"}); r.code != 200 || grace(r) != "0" {
		t.Errorf("held after its delete: %d %s", r.code, r.body)
	}
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
