package handler_test

import (
	"strings"
	"testing"
)

// componentstatuses are made on each read (registry.Reader): a list has
// no resourceVersion, there is nothing to watch or write, and only the
// routes upstream has carry its deprecation warning.
func TestComputedReads(t *testing.T) {
	e := newEnv(t)
	const warning = `299 - "v1 ComponentStatus is deprecated in v1.19+"`
	for _, c := range []struct {
		name         string
		r            req
		code         int
		warns        bool
		inBody       string
		notInBody    string
		reason, text string
	}{
		{name: "get", r: req{method: "GET", path: "/api/v1/componentstatuses/scheduler"}, code: 200, warns: true,
			inBody: `"name":"scheduler"`, notInBody: "resourceVersion"},
		{name: "list", r: req{method: "GET", path: "/api/v1/componentstatuses"}, code: 200, warns: true,
			inBody: `"kind":"ComponentStatusList"`, notInBody: "resourceVersion"},
		{name: "list by name", r: req{method: "GET", path: "/api/v1/componentstatuses?fieldSelector=metadata.name%3Dnone"}, code: 200, warns: true,
			inBody: `"items":[]`},
		{name: "table", r: req{method: "GET", path: "/api/v1/componentstatuses/controller-manager", accept: "application/json;as=Table;v=v1;g=meta.k8s.io"}, code: 200, warns: true,
			inBody: `"cells":["controller-manager","Unhealthy"`},
		{name: "missing", r: req{method: "GET", path: "/api/v1/componentstatuses/nosuch"}, code: 404, warns: true,
			reason: "NotFound", text: `componentstatus "nosuch" not found`},
		{name: "watch", r: req{method: "GET", path: "/api/v1/componentstatuses?watch=1"}, code: 405, warns: true,
			reason: "MethodNotAllowed", text: `watch is not supported on resources of kind "componentstatuses"`},
		{name: "create", r: req{method: "POST", path: "/api/v1/componentstatuses", body: `{"apiVersion":"v1","kind":"ComponentStatus","metadata":{"name":"x"}}`}, code: 405,
			reason: "MethodNotAllowed", text: "the server does not allow this method on the requested resource"},
	} {
		r := e.do(c.r)
		if r.code != c.code {
			t.Errorf("%s: %d %s, want %d", c.name, r.code, r.body, c.code)
			continue
		}
		if got := strings.Join(r.header.Values("Warning"), ","); (got == warning) != c.warns {
			t.Errorf("%s: Warning %q, want it: %v", c.name, got, c.warns)
		}
		if c.inBody != "" && !strings.Contains(string(r.body), c.inBody) || c.notInBody != "" && strings.Contains(string(r.body), c.notInBody) {
			t.Errorf("%s: body %s, want %q in it and %q not", c.name, r.body, c.inBody, c.notInBody)
		}
		if c.reason != "" {
			if st := r.status(t); string(st.Reason) != c.reason || st.Message != c.text {
				t.Errorf("%s: %s %q, want %s %q", c.name, st.Reason, st.Message, c.reason, c.text)
			}
		}
	}
}
