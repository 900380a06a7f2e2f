package openapi

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdserver/crdserver/internal/registry"
)

// TestParametersAreUpstreams checks the query parameters of a custom
// resource's paths against what upstream's CRD builder makes of the metav1
// option types: their descriptions are the types' SwaggerDoc (read here,
// not copied), each operation's are sorted by name, and those every
// operation of a path takes are on the path item.
func TestParametersAreUpstreams(t *testing.T) {
	srv, _, _ := newTestServer(t, withCRD())
	_, body := get(t, srv.URL+"/openapi/v3/apis/stable.example.com/v1", nil)
	v3 := dig(decode(t, body), "paths")
	_, body = get(t, srv.URL+"/openapi/v2", map[string]string{"Accept": "application/json"})
	v2 := decode(t, body)["paths"]

	const (
		all  = "/apis/stable.example.com/v1/crontabs"
		coll = "/apis/stable.example.com/v1/namespaces/{namespace}/crontabs"
		obj  = coll + "/{name}"
	)
	list, get, create := metav1.ListOptions{}.SwaggerDoc(), metav1.GetOptions{}.SwaggerDoc(), metav1.CreateOptions{}.SwaggerDoc()
	update, patch, del := metav1.UpdateOptions{}.SwaggerDoc(), metav1.PatchOptions{}.SwaggerDoc(), metav1.DeleteOptions{}.SwaggerDoc()
	for _, c := range []struct {
		doc          any
		path, method string // method "" for the path item's parameters
		name, typ    string
		want         string
	}{
		{v3, all, "", "labelSelector", "string", list["labelSelector"]},
		{v3, all, "", "sendInitialEvents", "boolean", list["sendInitialEvents"]},
		{v3, coll, "get", "limit", "integer", list["limit"]},
		{v3, coll, "delete", "continue", "string", list["continue"]},
		{v3, coll, "post", "fieldManager", "string", create["fieldManager"]},
		{v3, obj, "get", "resourceVersion", "string", get["resourceVersion"]},
		{v3, obj, "put", "fieldValidation", "string", update["fieldValidation"]},
		{v3, obj, "patch", "fieldManager", "string", patch["fieldManager"]},
		{v3, obj, "patch", "force", "boolean", patch["force"]},
		{v3, obj, "delete", "propagationPolicy", "string", del["propagationPolicy"]},
		{v3, obj + "/status", "patch", "dryRun", "string", patch["dryRun"]},
		{v2, all, "", "timeoutSeconds", "integer", list["timeoutSeconds"]},
		{v2, obj, "patch", "fieldManager", "string", patch["fieldManager"]},
		{v2, obj, "delete", "gracePeriodSeconds", "integer", del["gracePeriodSeconds"]},
	} {
		ps := params(c.doc, c.path, c.method)
		i := slices.IndexFunc(ps, func(p map[string]any) bool { return p["name"] == c.name })
		if i < 0 || c.want == "" {
			t.Errorf("%s %s: no %s parameter (or no SwaggerDoc for it)", c.method, c.path, c.name)
			continue
		}
		p := ps[i]
		typ := p["type"] // v2
		if typ == nil {
			typ = dig(p, "schema", "type")
		}
		if p["description"] != c.want || p["in"] != "query" || typ != c.typ {
			t.Errorf("%s %s: %s = %v, want %s in query described %q", c.method, c.path, c.name, p, c.typ, c.want)
		}
	}

	// Names, in upstream's order; the body is a v2 parameter like the rest.
	names := func(doc any, path, method string) []string {
		var out []string
		for _, p := range params(doc, path, method) {
			out = append(out, p["name"].(string))
		}
		return out
	}
	listNames := []string{"allowWatchBookmarks", "continue", "fieldSelector", "labelSelector", "limit",
		"resourceVersion", "resourceVersionMatch", "sendInitialEvents", "shardSelector", "timeoutSeconds", "watch"}
	for _, c := range []struct {
		doc          any
		path, method string
		want         []string
	}{
		{v3, all, "", slices.Insert(slices.Clone(listNames), 5, "pretty")},
		{v3, all, "get", nil},
		{v3, coll, "", []string{"namespace", "pretty"}},
		{v3, coll, "get", listNames},
		{v3, coll, "delete", listNames},
		{v3, obj, "", []string{"name", "namespace", "pretty"}},
		{v3, obj, "delete", []string{"dryRun", "gracePeriodSeconds", "ignoreStoreReadErrorWithClusterBreakingPotential", "orphanDependents", "propagationPolicy"}},
		{v3, obj, "patch", []string{"dryRun", "fieldManager", "fieldValidation", "force"}},
		{v2, obj, "", []string{"name", "namespace", "pretty"}},
		{v2, obj, "put", []string{"body", "dryRun", "fieldManager", "fieldValidation"}},
		{v2, obj, "delete", []string{"body", "dryRun", "gracePeriodSeconds", "ignoreStoreReadErrorWithClusterBreakingPotential", "orphanDependents", "propagationPolicy"}},
		{v2, coll, "delete", listNames},
	} {
		if got := names(c.doc, c.path, c.method); !slices.Equal(got, c.want) {
			t.Errorf("%s %s: parameters %q\nwant %q", c.method, c.path, got, c.want)
		}
	}
	// Upstream's CRD builder gives deletecollection no body, and an
	// optional body no required flag.
	if b := dig(v3, coll, "delete", "requestBody"); b != nil {
		t.Errorf("deletecollection request body %v", b)
	}
	if b := params(v2, obj, "delete")[0]; b["in"] != "body" || b["required"] != nil {
		t.Errorf("v2 delete body %v", b)
	}
	// Every parameter has a description.
	for _, doc := range []any{v3, v2} {
		for path, item := range doc.(map[string]any) {
			for method := range item.(map[string]any) {
				if method == "parameters" {
					method = ""
				}
				for _, p := range params(doc, path, method) {
					if p["in"] != "body" && p["description"] == "" {
						t.Errorf("%s %s: %s has no description", method, path, p["name"])
					}
				}
			}
		}
	}
}

// params returns the parameters of a path item (method "") or of one of
// its operations.
func params(doc any, path, method string) []map[string]any {
	keys := []string{path, "parameters"}
	if method != "" {
		keys = []string{path, method, "parameters"}
	}
	list, _ := dig(doc, keys...).([]any)
	out := make([]map[string]any, 0, len(list))
	for _, p := range list {
		out = append(out, p.(map[string]any))
	}
	return out
}

// TestCreateOnlyHasNoListModel: a resource that is only created (an access
// review) has no list operation, so its documents have no list model and
// none of what only a list refers to, as upstream's have none.
func TestCreateOnlyHasNoListModel(t *testing.T) {
	srv, _, _ := newTestServer(t, []*registry.Definition{{
		Group: "review.example.com", Resource: "checks", Singular: "check", Kind: "Check", ListKind: "CheckList",
		Scope: registry.Cluster, Verbs: []string{"create"},
		Versions: []registry.Version{{Name: "v1", Served: true, Storage: true, OpenAPISchema: []byte(`{"type":"object"}`)}},
	}})
	_, body := get(t, srv.URL+"/openapi/v3/apis/review.example.com/v1", nil)
	v3, _ := dig(decode(t, body), "components", "schemas").(map[string]any)
	_, body = get(t, srv.URL+"/openapi/v2", map[string]string{"Accept": "application/json"})
	v2, _ := decode(t, body)["definitions"].(map[string]any)
	for form, models := range map[string]map[string]any{"v3": v3, "v2": v2} {
		if _, ok := models["com.example.review.v1.Check"]; !ok {
			t.Errorf("%s: no model of Check", form)
		}
		for _, name := range []string{"com.example.review.v1.CheckList", listMetaModel} {
			if _, ok := models[name]; ok {
				t.Errorf("%s: model %s, which no operation answers with", form, name)
			}
		}
	}
}
