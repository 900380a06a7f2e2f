package handler_test

import (
	"testing"
)

// Gets are served from the watch cache with a get's resourceVersion
// semantics; each sees the write acknowledged just before it.
func TestGetResourceVersions(t *testing.T) {
	e := newEnv(t)
	if r := e.do(req{method: "POST", path: "/api/v1/namespaces", body: ns("getrv")}); r.code != 201 {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	r := e.do(req{method: "PATCH", path: "/api/v1/namespaces/getrv", body: `{"metadata":{"labels":{"a":"b"}}}`, contentType: "application/merge-patch+json"})
	if r.code != 200 {
		t.Fatalf("patch: %d %s", r.code, r.body)
	}
	rv := str(r.obj(t), "metadata", "resourceVersion")
	for _, q := range []string{"", "?resourceVersion=", "?resourceVersion=" + rv, "?resourceVersion=1"} {
		g := e.do(req{method: "GET", path: "/api/v1/namespaces/getrv" + q})
		if g.code != 200 || str(g.obj(t), "metadata", "resourceVersion") != rv || str(g.obj(t), "metadata", "labels", "a") != "b" {
			t.Errorf("GET%s: %d %s, want resourceVersion %s", q, g.code, g.body, rv)
		}
	}
	// "0" may be served from the cache as it is; it has the patch by now
	// since the consistent gets above waited for it.
	if g := e.do(req{method: "GET", path: "/api/v1/namespaces/getrv?resourceVersion=0"}); g.code != 200 || str(g.obj(t), "metadata", "resourceVersion") != rv {
		t.Errorf("GET rv=0: %d %s", g.code, g.body)
	}
	for _, c := range []struct {
		query  string
		code   int
		reason string
		msg    string
	}{
		{"", 404, "NotFound", `namespaces "missing" not found`},
		{"?resourceVersion=0", 404, "NotFound", `namespaces "missing" not found`},
		{"?resourceVersion=" + rv, 404, "NotFound", `namespaces "missing" not found`},
		// Upstream's watch cache fails to parse it and the error reaches
		// the client as it is: a 500 without a reason.
		{"?resourceVersion=abc", 500, "", `resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax`},
	} {
		g := e.do(req{method: "GET", path: "/api/v1/namespaces/missing" + c.query})
		st := g.status(t)
		if g.code != c.code || string(st.Reason) != c.reason || st.Message != c.msg {
			t.Errorf("GET missing%s: %d %s %q, want %d %s %q", c.query, g.code, st.Reason, st.Message, c.code, c.reason, c.msg)
		}
	}
}
