package openapi

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/crdserver/crdserver/internal/registry"
)

// strategicHooks marks the namespaces fixture as a built-in with a Go type.
type strategicHooks struct{}

func (strategicHooks) PatchSchema() any { return struct{}{} }

const crontabV1Schema = `{
  "type": "object",
  "description": "A CronTab runs an image on a schedule.",
  "properties": {
    "spec": {
      "type": "object",
      "required": ["cronSpec", "note"],
      "properties": {
        "cronSpec": {"type": "string", "pattern": "^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$"},
        "image": {"type": "string"},
        "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
        "note": {"type": "string", "nullable": true},
        "port": {"x-kubernetes-int-or-string": true},
        "choice": {"type": "string", "anyOf": [{"enum": ["a"]}, {"enum": ["b"]}]},
        "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {"known": {"type": "string"}}},
        "template": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}},
        "raw": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true, "required": ["kind"]},
        "tags": {"type": "array", "nullable": true, "items": {"type": "string"}},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}}
      }
    },
    "status": {
      "type": "object",
      "properties": {"replicas": {"type": "integer"}, "labelSelector": {"type": "string"}}
    }
  },
  "x-kubernetes-validations": [{"rule": "self.spec.replicas <= 10", "message": "too many"}]
}`

const crontabV1beta1Schema = `{
  "type": "object",
  "properties": {"spec": {"type": "object", "properties": {"cronSpec": {"type": "string"}}}}
}`

// testDefinitions: the built-in namespaces, a namespaced CRD with three
// versions (one unserved) and status/scale, a cluster-scoped CRD whose root
// preserves unknown fields, and one without a schema.
func testDefinitions() []*registry.Definition {
	return []*registry.Definition{{
		Group: "", Resource: "namespaces", Singular: "namespace", Kind: "Namespace", ListKind: "NamespaceList",
		ShortNames: []string{"ns"}, Scope: registry.Cluster,
		Verbs: []string{"create", "delete", "get", "list", "patch", "update", "watch"},
		Versions: []registry.Version{{
			Name: "v1", Served: true, Storage: true,
			Subresources: registry.Subresources{
				Status: true,
				Other:  []registry.OtherSubresource{{Name: "finalize", Verbs: []string{"update"}}},
			},
		}},
		Hooks: strategicHooks{},
	}, {
		Group: "stable.example.com", Resource: "crontabs", Singular: "crontab", Kind: "CronTab", ListKind: "CronTabList",
		ShortNames: []string{"ct"}, Categories: []string{"all"}, Scope: registry.Namespaced,
		Versions: []registry.Version{
			{Name: "v1beta1", Served: true, OpenAPISchema: []byte(crontabV1beta1Schema)},
			{Name: "v1", Served: true, Storage: true, OpenAPISchema: []byte(crontabV1Schema),
				Subresources: registry.Subresources{
					Status: true,
					Scale:  &registry.Scale{SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas"},
				}},
			{Name: "v2alpha1", Served: false, OpenAPISchema: []byte(`{"type":"object"}`)},
		},
	}, {
		Group: "stable.example.com", Resource: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList",
		Scope: registry.Cluster,
		Versions: []registry.Version{{Name: "v1", Served: true, Storage: true,
			OpenAPISchema: []byte(`{"type":"object","x-kubernetes-preserve-unknown-fields":true}`)}},
	}, {
		Group: "example.com", Resource: "gadgets", Singular: "gadget", Kind: "Gadget", ListKind: "GadgetList",
		Scope:    registry.Namespaced,
		Versions: []registry.Version{{Name: "v1alpha1", Served: true, Storage: true}},
	}}
}

func newTestServer(t *testing.T, defs []*registry.Definition) (*httptest.Server, *registry.Registry, *Handler) {
	t.Helper()
	reg := registry.New(defs)
	h := New(reg)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, reg, h
}

// get fetches url without following redirects.
func get(t *testing.T, url string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}
