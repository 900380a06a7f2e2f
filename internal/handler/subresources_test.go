package handler_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// Every subresource that discovery lists with update or patch is served
// for them: a merge patch (or a PUT, for one that takes no patch) of a
// missing object is that object's 404,
// never the 404 of a path nothing serves. (A built-in's own subresource
// is written only when its hooks say they update it; one they do not
// know must not be written whole.)
func TestUpdatableSubresourcesServed(t *testing.T) {
	e := newEnv(t)
	type resource struct {
		Name       string
		Namespaced bool
		Verbs      []string
	}
	resources := func(path string) []resource {
		r := e.do(req{method: "GET", path: path})
		var list struct{ Resources []resource }
		if r.code != 200 || json.Unmarshal(r.body, &list) != nil {
			t.Fatalf("GET %s: %d %s", path, r.code, r.body)
		}
		return list.Resources
	}
	paths := []string{"/api/v1"}
	r := e.do(req{method: "GET", path: "/apis"})
	var groups struct {
		Groups []struct {
			Versions []struct{ GroupVersion string }
		}
	}
	if r.code != 200 || json.Unmarshal(r.body, &groups) != nil {
		t.Fatalf("GET /apis: %d %s", r.code, r.body)
	}
	for _, g := range groups.Groups {
		for _, v := range g.Versions {
			paths = append(paths, "/apis/"+v.GroupVersion)
		}
	}
	checked := 0
	for _, gv := range paths {
		for _, res := range resources(gv) {
			parent, sub, ok := strings.Cut(res.Name, "/")
			if !ok || sub == "proxy" || !slices.Contains(res.Verbs, "patch") && !slices.Contains(res.Verbs, "update") {
				continue
			}
			path := gv + "/" + parent + "/no-such-object/" + sub
			if res.Namespaced {
				path = gv + "/namespaces/default/" + parent + "/no-such-object/" + sub
			}
			write := req{method: "PATCH", path: path, body: "{}", contentType: "application/merge-patch+json"}
			if !slices.Contains(res.Verbs, "patch") {
				write = req{method: "PUT", path: path, body: `{"metadata":{"name":"no-such-object"}}`}
			}
			r := e.do(write)
			var st struct{ Details struct{ Name string } }
			if r.code != 404 || json.Unmarshal(r.body, &st) != nil || st.Details.Name != "no-such-object" {
				t.Errorf("PATCH %s: %d %s, want the object's 404", path, r.code, r.body)
			}
			checked++
		}
	}
	if checked < 5 {
		t.Errorf("%d updatable subresources checked; discovery lists more (status, scale, resize, approval, finalize, ...)", checked)
	}
}
