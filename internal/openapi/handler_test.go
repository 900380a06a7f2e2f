package openapi

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	openapiv3 "github.com/google/gnostic-models/openapiv3"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/runtime/schema"
	cgdiscovery "k8s.io/client-go/discovery"
	"k8s.io/client-go/openapi3"
	"k8s.io/client-go/rest"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/crdserver/crdserver/internal/registry"
)

// dig walks a decoded JSON value by map keys and list indexes.
func dig(v any, path ...string) any {
	for _, p := range path {
		switch x := v.(type) {
		case map[string]any:
			v = x[p]
		case []any:
			var i int
			if _, err := fmt.Sscan(p, &i); err != nil || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("decoding %.200s: %v", b, err)
	}
	return m
}

func sortedKeys(v any) []string {
	m, _ := v.(map[string]any)
	return slices.Sorted(maps.Keys(m))
}

func TestIndex(t *testing.T) {
	srv, _, _ := newTestServer(t, testDefinitions())
	resp, body := get(t, srv.URL+"/openapi/v3", nil)
	// kube-apiserver's index has no declared type: its JSON sniffs as text.
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Fatalf("status %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	index := decode(t, body)
	wantKeys := []string{"api/v1", "apis/example.com/v1alpha1", "apis/stable.example.com/v1", "apis/stable.example.com/v1beta1"}
	if got := sortedKeys(index["paths"]); !slices.Equal(got, wantKeys) {
		t.Fatalf("index paths = %q, want %q", got, wantKeys)
	}
	for _, key := range wantKeys {
		u, _ := dig(index, "paths", key, "serverRelativeURL").(string)
		if !strings.HasPrefix(u, "/openapi/v3/"+key+"?hash=") {
			t.Errorf("%s: serverRelativeURL %q", key, u)
			continue
		}
		resp, _ := get(t, srv.URL+u, nil)
		hash := u[strings.Index(u, "hash=")+5:]
		if resp.StatusCode != 200 {
			t.Errorf("%s: status %d", key, resp.StatusCode)
		}
		if got := resp.Header.Get("Etag"); got != `"`+hash+`"` {
			t.Errorf("%s: Etag %s, want the hash %s", key, got, hash)
		}
		if got := resp.Header.Get("Cache-Control"); got != "public, immutable" {
			t.Errorf("%s: Cache-Control %q", key, got)
		}
		if resp.Header.Get("Expires") == "" {
			t.Errorf("%s: no Expires", key)
		}
	}
}

func TestCachingHeaders(t *testing.T) {
	srv, _, _ := newTestServer(t, testDefinitions())
	for _, path := range []string{"/openapi/v2", "/openapi/v3", "/openapi/v3/apis/stable.example.com/v1", "/openapi/v3/api/v1"} {
		t.Run(path, func(t *testing.T) {
			resp, _ := get(t, srv.URL+path, nil)
			etag := resp.Header.Get("Etag")
			if resp.StatusCode != 200 || etag == "" {
				t.Fatalf("status %d, Etag %q", resp.StatusCode, etag)
			}
			if cc := resp.Header.Get("Cache-Control"); cc != "no-cache, private" {
				t.Errorf("Cache-Control without hash = %q", cc)
			}
			resp, body := get(t, srv.URL+path, map[string]string{"If-None-Match": etag})
			if resp.StatusCode != http.StatusNotModified || len(body) != 0 {
				t.Errorf("If-None-Match: status %d, %d bytes", resp.StatusCode, len(body))
			}
		})
	}

	// An old hash redirects to the current one.
	resp, _ := get(t, srv.URL+"/openapi/v3/apis/stable.example.com/v1?hash=0123", nil)
	if resp.StatusCode != http.StatusMovedPermanently {
		t.Fatalf("stale hash: status %d", resp.StatusCode)
	}
	loc := resp.Header.Get("Location")
	if !strings.HasPrefix(loc, "/openapi/v3/apis/stable.example.com/v1?hash=") || strings.HasSuffix(loc, "=0123") {
		t.Errorf("Location %q", loc)
	}
}

func TestNotFound(t *testing.T) {
	srv, _, _ := newTestServer(t, testDefinitions())
	// As kube-apiserver 1.37: a v3 group-version it lacks is an empty 404,
	// any other path a plain-text one.
	for _, path := range []string{
		"/openapi/v3/apis/nope.example.com/v1",
		"/openapi/v3/apis/stable.example.com",
		"/openapi/v3/apis/stable.example.com/v2alpha1", // not served
		"/openapi/v3/api/v2",
		"/openapi/v3/apis/stable.example.com/v1/extra",
	} {
		resp, body := get(t, srv.URL+path, nil)
		if resp.StatusCode != 404 || len(body) != 0 {
			t.Errorf("%s: status %d body %q, want an empty 404", path, resp.StatusCode, body)
		}
	}
	for _, path := range []string{"/openapi/v4", "/openapi"} {
		resp, body := get(t, srv.URL+path, nil)
		if resp.StatusCode != 404 || string(body) != "404 page not found\n" {
			t.Errorf("%s: status %d body %q, want a plain 404", path, resp.StatusCode, body)
		}
	}
	resp, _ := get(t, srv.URL+"/openapi/v3/api/v1", map[string]string{"Accept": "text/html"})
	if resp.StatusCode != http.StatusNotAcceptable {
		t.Errorf("Accept text/html: status %d", resp.StatusCode)
	}
}

// opsWant lists, per path, each method's x-kubernetes-action.
type opsWant map[string]map[string]string

func TestV3Documents(t *testing.T) {
	srv, _, _ := newTestServer(t, testDefinitions())
	ct := "/apis/stable.example.com/v1/namespaces/{namespace}/crontabs"
	tests := []struct {
		key     string
		gvk     schema.GroupVersionKind
		model   string
		ops     opsWant
		schemas []string
	}{{
		key: "api/v1", gvk: schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, model: "io.k8s.api.core.v1.Namespace",
		ops: opsWant{
			// No deletecollection: namespaces do not serve it.
			"/api/v1/namespaces":                 {"get": "list", "post": "post"},
			"/api/v1/namespaces/{name}":          {"get": "get", "put": "put", "patch": "patch", "delete": "delete"},
			"/api/v1/namespaces/{name}/status":   {"get": "get", "put": "put", "patch": "patch"},
			"/api/v1/namespaces/{name}/finalize": {"put": "put"},
		},
		schemas: []string{
			"io.k8s.api.core.v1.Namespace", "io.k8s.api.core.v1.NamespaceCondition", "io.k8s.api.core.v1.NamespaceList",
			"io.k8s.api.core.v1.NamespaceSpec", "io.k8s.api.core.v1.NamespaceStatus",
			"io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions", "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1",
			"io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta", "io.k8s.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry",
			"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference",
			"io.k8s.apimachinery.pkg.apis.meta.v1.Patch", "io.k8s.apimachinery.pkg.apis.meta.v1.Preconditions",
			"io.k8s.apimachinery.pkg.apis.meta.v1.ShardInfo",
			"io.k8s.apimachinery.pkg.apis.meta.v1.Status", "io.k8s.apimachinery.pkg.apis.meta.v1.StatusCause",
			"io.k8s.apimachinery.pkg.apis.meta.v1.StatusDetails", "io.k8s.apimachinery.pkg.apis.meta.v1.Time",
		},
	}, {
		key: "apis/stable.example.com/v1", gvk: schema.GroupVersionKind{Group: "stable.example.com", Version: "v1", Kind: "CronTab"},
		model: "com.example.stable.v1.CronTab",
		ops: opsWant{
			"/apis/stable.example.com/v1/crontabs": {"get": "list"},
			ct:                                     {"get": "list", "post": "post", "delete": "deletecollection"},
			ct + "/{name}":                         {"get": "get", "put": "put", "patch": "patch", "delete": "delete"},
			ct + "/{name}/status":                  {"get": "get", "put": "put", "patch": "patch"},
			ct + "/{name}/scale":                   {"get": "get", "put": "put", "patch": "patch"},
			"/apis/stable.example.com/v1/widgets":  {"get": "list", "post": "post", "delete": "deletecollection"},
			"/apis/stable.example.com/v1/widgets/{name}": {"get": "get", "put": "put", "patch": "patch", "delete": "delete"},
		},
		schemas: []string{
			"com.example.stable.v1.CronTab", "com.example.stable.v1.CronTabList",
			"com.example.stable.v1.Widget", "com.example.stable.v1.WidgetList",
			"io.k8s.api.autoscaling.v1.Scale", "io.k8s.api.autoscaling.v1.ScaleSpec", "io.k8s.api.autoscaling.v1.ScaleStatus",
			"io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions", "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1",
			"io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta", "io.k8s.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry",
			"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference",
			"io.k8s.apimachinery.pkg.apis.meta.v1.Patch", "io.k8s.apimachinery.pkg.apis.meta.v1.Preconditions",
			"io.k8s.apimachinery.pkg.apis.meta.v1.ShardInfo",
			"io.k8s.apimachinery.pkg.apis.meta.v1.Status", "io.k8s.apimachinery.pkg.apis.meta.v1.StatusCause",
			"io.k8s.apimachinery.pkg.apis.meta.v1.StatusDetails", "io.k8s.apimachinery.pkg.apis.meta.v1.Time",
		},
	}, {
		key: "apis/stable.example.com/v1beta1", gvk: schema.GroupVersionKind{Group: "stable.example.com", Version: "v1beta1", Kind: "CronTab"},
		model: "com.example.stable.v1beta1.CronTab",
		ops: opsWant{
			"/apis/stable.example.com/v1beta1/crontabs":                               {"get": "list"},
			"/apis/stable.example.com/v1beta1/namespaces/{namespace}/crontabs":        {"get": "list", "post": "post", "delete": "deletecollection"},
			"/apis/stable.example.com/v1beta1/namespaces/{namespace}/crontabs/{name}": {"get": "get", "put": "put", "patch": "patch", "delete": "delete"},
		},
	}, {
		key: "apis/example.com/v1alpha1", gvk: schema.GroupVersionKind{Group: "example.com", Version: "v1alpha1", Kind: "Gadget"},
		model: "com.example.v1alpha1.Gadget",
		ops: opsWant{
			"/apis/example.com/v1alpha1/gadgets":                               {"get": "list"},
			"/apis/example.com/v1alpha1/namespaces/{namespace}/gadgets":        {"get": "list", "post": "post", "delete": "deletecollection"},
			"/apis/example.com/v1alpha1/namespaces/{namespace}/gadgets/{name}": {"get": "get", "put": "put", "patch": "patch", "delete": "delete"},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			resp, body := get(t, srv.URL+"/openapi/v3/"+tt.key, nil)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			doc := decode(t, body)
			if doc["openapi"] != "3.0.0" {
				t.Errorf("openapi = %v", doc["openapi"])
			}
			if got, want := sortedKeys(doc["paths"]), slices.Sorted(maps.Keys(tt.ops)); !slices.Equal(got, want) {
				t.Errorf("paths = %q\nwant %q", got, want)
			}
			for path, methods := range tt.ops {
				item, _ := dig(doc, "paths", path).(map[string]any)
				for method, action := range methods {
					op, _ := item[method].(map[string]any)
					if op == nil {
						t.Errorf("%s %s: missing", method, path)
						continue
					}
					if op[extAction] != action {
						t.Errorf("%s %s: action %v, want %s", method, path, op[extAction], action)
					}
					wantKind := tt.gvk.Kind
					if strings.Contains(path, "/widgets") {
						wantKind = "Widget"
					}
					gvk, _ := op[extGVK].(map[string]any)
					if gvk["group"] != tt.gvk.Group || gvk["version"] != tt.gvk.Version || gvk["kind"] != wantKind {
						t.Errorf("%s %s: gvk %v", method, path, gvk)
					}
					// The parameters the operation takes: the path
					// item's (those all its operations share) and its own.
					params := map[string]bool{}
					ps, _ := dig(op, "parameters").([]any)
					shared, _ := item["parameters"].([]any)
					for _, p := range append(slices.Clone(shared), ps...) {
						pm := p.(map[string]any)
						if pm["in"] == "query" {
							params[pm["name"].(string)] = true
						}
					}
					if method == "post" || method == "put" || method == "patch" {
						for _, name := range []string{"dryRun", "fieldManager", "fieldValidation"} {
							if !params[name] {
								t.Errorf("%s %s: no %s parameter", method, path, name)
							}
						}
					}
					if (method == "patch") != params["force"] {
						t.Errorf("%s %s: force parameter %v", method, path, params["force"])
					}
					if action == "list" && !(params["watch"] && params["labelSelector"] && params["limit"]) {
						t.Errorf("%s %s: list parameters %v", method, path, params)
					}
					if dig(op, "responses", "200", "content", "application/json", "schema", "$ref") == nil {
						t.Errorf("%s %s: no 200 response schema", method, path)
					}
				}
				for method := range item {
					if _, ok := methods[method]; !ok && method != "parameters" {
						t.Errorf("%s %s: unexpected operation", method, path)
					}
				}
			}
			schemas, _ := dig(doc, "components", "schemas").(map[string]any)
			if tt.schemas != nil {
				if got := sortedKeys(schemas); !slices.Equal(got, tt.schemas) {
					t.Errorf("schemas = %q\nwant %q", got, tt.schemas)
				}
			}
			// Every reference resolves within the document.
			for _, ref := range collectRefs(doc, nil) {
				if _, ok := schemas[ref]; !ok {
					t.Errorf("unresolved reference %s", ref)
				}
			}
			// The object's schema carries its GVK, as kubectl explain looks
			// it up, and describes metadata through ObjectMeta (unless it
			// has no schema at all).
			obj, _ := schemas[tt.model].(map[string]any)
			if obj == nil {
				t.Fatalf("no model %s", tt.model)
			}
			wantGVK := []any{map[string]any{"group": tt.gvk.Group, "version": tt.gvk.Version, "kind": tt.gvk.Kind}}
			if !reflect.DeepEqual(obj[extGVK], wantGVK) {
				t.Errorf("%s %s = %v", tt.model, extGVK, obj[extGVK])
			}
			if tt.gvk.Kind != "Gadget" {
				if ref := dig(obj, "properties", "metadata", "allOf", "0", "$ref"); ref != v3RefPrefix+objectMetaModel {
					t.Errorf("metadata ref = %v", ref)
				}
				if dig(obj, "properties", "apiVersion", "type") != "string" || dig(obj, "properties", "kind", "type") != "string" {
					t.Errorf("apiVersion/kind not described: %v", obj["properties"])
				}
			}
		})
	}
}

func TestV3CustomResourceSchema(t *testing.T) {
	srv, _, _ := newTestServer(t, testDefinitions())
	_, body := get(t, srv.URL+"/openapi/v3/apis/stable.example.com/v1", nil)
	doc := decode(t, body)
	ct := dig(doc, "components", "schemas", "com.example.stable.v1.CronTab")
	spec := dig(ct, "properties", "spec")
	// v3 is lossless: nullable, anyOf, validations stay; int-or-string is unfolded.
	checks := []struct {
		name string
		got  any
		want any
	}{
		{"nullable kept", dig(spec, "properties", "note", "nullable"), true},
		{"anyOf kept", len(dig(spec, "properties", "choice", "anyOf").([]any)), 2},
		{"int-or-string unfolded", dig(spec, "properties", "port", "anyOf"), []any{map[string]any{"type": "integer"}, map[string]any{"type": "string"}}},
		{"required kept", dig(spec, "required"), []any{"cronSpec", "note"}},
		{"validations kept", dig(ct, "x-kubernetes-validations", "0", "rule"), "self.spec.replicas <= 10"},
		{"embedded apiVersion", dig(spec, "properties", "template", "properties", "apiVersion", "type"), "string"},
		{"embedded metadata", dig(spec, "properties", "template", "properties", "metadata", "allOf", "0", "$ref"), v3RefPrefix + objectMetaModel},
		{"embedded required", dig(spec, "properties", "template", "required"), []any{"kind", "apiVersion"}},
		{"preserved properties kept", dig(spec, "properties", "extra", "properties", "known", "type"), "string"},
		{"description kept", dig(ct, "description"), "A CronTab runs an image on a schedule."},
		{"list items", dig(doc, "components", "schemas", "com.example.stable.v1.CronTabList", "properties", "items", "items", "$ref"), v3RefPrefix + "com.example.stable.v1.CronTab"},
		{"list gvk", dig(doc, "components", "schemas", "com.example.stable.v1.CronTabList", extGVK, "0", "kind"), "CronTabList"},
		{"scale ref", dig(doc, "paths", "/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}/scale", "get", "responses", "200", "content", "application/json", "schema", "$ref"), v3RefPrefix + scaleModel},
		{"patch body", sortedKeys(dig(doc, "paths", "/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}", "patch", "requestBody", "content")),
			[]string{"application/apply-patch+yaml", "application/json-patch+json", "application/merge-patch+json"}},
		{"widget root", dig(doc, "components", "schemas", "com.example.stable.v1.Widget", extPreserve), true},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: got %#v, want %#v", c.name, c.got, c.want)
		}
	}

	_, body = get(t, srv.URL+"/openapi/v3/api/v1", nil)
	doc = decode(t, body)
	patch := sortedKeys(dig(doc, "paths", "/api/v1/namespaces/{name}", "patch", "requestBody", "content"))
	if !slices.Contains(patch, "application/strategic-merge-patch+json") {
		t.Errorf("namespaces patch content types %q lack strategic merge patch", patch)
	}
}

func TestV2(t *testing.T) {
	srv, _, _ := newTestServer(t, testDefinitions())
	resp, body := get(t, srv.URL+"/openapi/v2", map[string]string{"Accept": "application/json"})
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if strings.Contains(string(body), "#/components/") {
		t.Error("v2 document refers to #/components/")
	}
	doc := decode(t, body)
	if doc["swagger"] != "2.0" {
		t.Errorf("swagger = %v", doc["swagger"])
	}
	defs, _ := doc["definitions"].(map[string]any)
	for _, ref := range collectRefs(doc, nil) {
		if _, ok := defs[ref]; !ok {
			t.Errorf("unresolved reference %s", ref)
		}
	}
	for _, name := range []string{
		"io.k8s.api.core.v1.Namespace", "com.example.stable.v1.CronTab", "com.example.stable.v1beta1.CronTab",
		"com.example.stable.v1.Widget", "com.example.v1alpha1.Gadget", "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
	} {
		if defs[name] == nil {
			t.Errorf("no definition %s", name)
		}
	}
	paths, _ := doc["paths"].(map[string]any)
	for _, p := range []string{"/api/v1/namespaces/{name}", "/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}", "/apis/stable.example.com/v1beta1/crontabs"} {
		if paths[p] == nil {
			t.Errorf("no path %s", p)
		}
	}
	patch := dig(paths, "/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}", "patch")
	var names []string
	for _, p := range dig(patch, "parameters").([]any) {
		names = append(names, p.(map[string]any)["name"].(string))
	}
	if !slices.Equal(names, []string{"body", "dryRun", "fieldManager", "fieldValidation", "force"}) {
		t.Errorf("v2 patch parameters %q", names)
	}
	if dig(patch, "parameters", "0", "schema", "$ref") != v2RefPrefix+patchModel {
		t.Errorf("v2 patch body %v", dig(patch, "parameters", "0"))
	}

	ct := defs["com.example.stable.v1.CronTab"]
	spec := dig(ct, "properties", "spec")
	checks := []struct {
		name string
		got  any
		want any
	}{
		{"metadata is a plain ref", dig(ct, "properties", "metadata"), map[string]any{"$ref": v2RefPrefix + objectMetaModel, "description": descMetadata}},
		{"nullable loses type", dig(spec, "properties", "note"), map[string]any{}},
		{"nullable array loses items", dig(spec, "properties", "tags"), map[string]any{}},
		{"nullable not required", dig(spec, "required"), []any{"cronSpec"}},
		{"anyOf dropped", dig(spec, "properties", "choice"), map[string]any{"type": "string"}},
		{"int-or-string left as is", dig(spec, "properties", "port"), map[string]any{"x-kubernetes-int-or-string": true}},
		{"preserve drops properties and object type", dig(spec, "properties", "extra"), map[string]any{extPreserve: true}},
		{"embedded metadata", dig(spec, "properties", "template", "properties", "metadata", "$ref"), v2RefPrefix + objectMetaModel},
		{"preserved embedded spec", dig(spec, "properties", "template", "properties", "spec"), map[string]any{extPreserve: true}},
		{"additionalProperties kept", dig(spec, "properties", "labels", "additionalProperties"), map[string]any{"type": "string"}},
		{"validations kept", dig(ct, "x-kubernetes-validations", "0", "rule"), "self.spec.replicas <= 10"},
		{"root preserve is a bare object", defs["com.example.stable.v1.Widget"], map[string]any{
			"type": "object", extGVK: []any{map[string]any{"group": "stable.example.com", "version": "v1", "kind": "Widget"}}}},
		{"no schema is a bare object", defs["com.example.v1alpha1.Gadget"], map[string]any{
			"type": "object", extGVK: []any{map[string]any{"group": "example.com", "version": "v1alpha1", "kind": "Gadget"}}}},
		{"built-in refs unwrapped", dig(defs, "io.k8s.api.core.v1.Namespace", "properties", "spec", "$ref"), v2RefPrefix + "io.k8s.api.core.v1.NamespaceSpec"},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: got %#v, want %#v", c.name, c.got, c.want)
		}
	}

	// client-go reads v2 as protobuf.
	dc := cgdiscovery.NewDiscoveryClientForConfigOrDie(&rest.Config{Host: srv.URL})
	pb, err := dc.OpenAPISchema()
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, d := range pb.GetDefinitions().GetAdditionalProperties() {
		if d.GetName() == "com.example.stable.v1.CronTab" {
			found = true
		}
	}
	if !found || pb.GetSwagger() != "2.0" {
		t.Errorf("protobuf v2: swagger %q, CronTab found %v", pb.GetSwagger(), found)
	}
}

func TestV3Protobuf(t *testing.T) {
	srv, _, _ := newTestServer(t, testDefinitions())
	for _, accept := range []string{mimeV3Protobuf, mimeV3ProtobufOld} {
		resp, body := get(t, srv.URL+"/openapi/v3/apis/stable.example.com/v1", map[string]string{"Accept": accept})
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != mimeV3Protobuf {
			t.Fatalf("Accept %s: status %d, Content-Type %q", accept, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		var doc openapiv3.Document
		if err := proto.Unmarshal(body, &doc); err != nil {
			t.Fatal(err)
		}
		if doc.GetOpenapi() != "3.0.0" || len(doc.GetComponents().GetSchemas().GetAdditionalProperties()) == 0 {
			t.Errorf("protobuf v3: %q with %d schemas", doc.GetOpenapi(), len(doc.GetComponents().GetSchemas().GetAdditionalProperties()))
		}
	}
}

// TestClientGo reads the documents through client-go's OpenAPI v3 client
// and checks the fieldValidation support the way kubectl's
// QueryParamVerifierV3 does: some PATCH operation tagged with the GVK must
// list the parameter.
func TestClientGo(t *testing.T) {
	srv, _, _ := newTestServer(t, testDefinitions())
	dc := cgdiscovery.NewDiscoveryClientForConfigOrDie(&rest.Config{Host: srv.URL})
	paths, err := dc.OpenAPIV3().Paths()
	if err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(maps.Keys(paths)); !slices.Equal(got, []string{"api/v1", "apis/example.com/v1alpha1", "apis/stable.example.com/v1", "apis/stable.example.com/v1beta1"}) {
		t.Errorf("Paths() = %q", got)
	}
	root := openapi3.NewRoot(dc.OpenAPIV3())
	for _, gvk := range []schema.GroupVersionKind{
		{Version: "v1", Kind: "Namespace"},
		{Group: "stable.example.com", Version: "v1", Kind: "CronTab"},
		{Group: "stable.example.com", Version: "v1beta1", Kind: "CronTab"},
		{Group: "stable.example.com", Version: "v1", Kind: "Widget"},
		{Group: "example.com", Version: "v1alpha1", Kind: "Gadget"},
	} {
		doc, err := root.GVSpec(gvk.GroupVersion())
		if err != nil {
			t.Fatalf("%s: %v", gvk, err)
		}
		if err := supportsFieldValidation(doc, gvk); err != nil {
			t.Errorf("%s: %v", gvk, err)
		}
		// kubectl explain finds the model by its GVK extension.
		var model *spec.Schema
		for _, s := range doc.Components.Schemas {
			var gvks []map[string]string
			if err := s.Extensions.GetObject(extGVK, &gvks); err == nil && len(gvks) == 1 &&
				gvks[0]["group"] == gvk.Group && gvks[0]["version"] == gvk.Version && gvks[0]["kind"] == gvk.Kind {
				model = s
			}
		}
		if model == nil {
			t.Errorf("%s: no model tagged with the GVK", gvk)
		}
	}
	if _, err := root.GVSpec(schema.GroupVersion{Group: "nope", Version: "v1"}); err == nil {
		t.Error("GVSpec of an unknown group version succeeded")
	}
}

// supportsFieldValidation mirrors cli-runtime's supportsQueryParamV3.
func supportsFieldValidation(doc *spec3.OpenAPI, gvk schema.GroupVersionKind) error {
	if doc == nil || doc.Paths == nil {
		return fmt.Errorf("invalid document")
	}
	for _, path := range doc.Paths.Paths {
		if path == nil || path.Patch == nil {
			continue
		}
		var got map[string]string
		if err := path.Patch.Extensions.GetObject(extGVK, &got); err != nil ||
			got["group"] != gvk.Group || got["version"] != gvk.Version || got["kind"] != gvk.Kind {
			continue
		}
		for _, p := range path.Patch.Parameters {
			if p.Name == "fieldValidation" && p.In == "query" {
				return nil
			}
		}
		return fmt.Errorf("PATCH without fieldValidation")
	}
	return fmt.Errorf("no PATCH operation for %s", gvk)
}

func TestIncrementalRebuild(t *testing.T) {
	_, reg, h := newTestServer(t, testDefinitions())
	first, err := h.current()
	if err != nil {
		t.Fatal(err)
	}

	// An identical swap rebuilds nothing and keeps the index.
	reg.Swap(testDefinitions())
	second, err := h.current()
	if err != nil {
		t.Fatal(err)
	}
	if second.generation == first.generation {
		t.Fatal("generation did not advance")
	}
	for key, d := range first.gvs {
		if second.gvs[key] != d {
			t.Errorf("%s rebuilt over an identical swap", key)
		}
	}
	if second.index != first.index {
		t.Error("index rebuilt over an identical swap")
	}

	// Changing the crontabs v1 schema rebuilds stable.example.com/v1 only;
	// adding a group builds it; everything else is reused.
	defs := testDefinitions()
	defs[1].Versions[1].OpenAPISchema = []byte(`{"type":"object","properties":{"spec":{"type":"object"}}}`)
	defs = append(defs, &registry.Definition{
		Group: "new.example.com", Resource: "things", Singular: "thing", Kind: "Thing", ListKind: "ThingList",
		Scope: registry.Cluster, Versions: []registry.Version{{Name: "v1", Served: true, Storage: true}},
	})
	reg.Swap(defs)
	third, err := h.current()
	if err != nil {
		t.Fatal(err)
	}
	for key, d := range second.gvs {
		changed := key == "apis/stable.example.com/v1"
		if (third.gvs[key] != d) != changed {
			t.Errorf("%s: rebuilt = %v, want %v", key, third.gvs[key] != d, changed)
		}
	}
	if third.gvs["apis/new.example.com/v1"] == nil {
		t.Error("new group version missing")
	}
	if third.gvs["apis/stable.example.com/v1"].etag == second.gvs["apis/stable.example.com/v1"].etag {
		t.Error("changed document kept its ETag")
	}

	// Removing a group drops it.
	reg.Swap(testDefinitions()[:2])
	fourth, err := h.current()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := fourth.gvs["apis/example.com/v1alpha1"]; ok {
		t.Error("removed group version still served")
	}
}

func TestBadSchemaLeavesResourceOut(t *testing.T) {
	defs := testDefinitions()
	defs[2].Versions[0].OpenAPISchema = []byte(`{not json`)
	srv, _, _ := newTestServer(t, defs)
	_, body := get(t, srv.URL+"/openapi/v3/apis/stable.example.com/v1", nil)
	doc := decode(t, body)
	if dig(doc, "components", "schemas", "com.example.stable.v1.Widget") != nil {
		t.Error("widget with a broken schema published")
	}
	if dig(doc, "components", "schemas", "com.example.stable.v1.CronTab") == nil {
		t.Error("crontab left out with the broken widget")
	}
}
