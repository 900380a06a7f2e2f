package openapi

import (
	"encoding/json"
	"net/http"
	"reflect"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/registry"
)

func mustJSON(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return m
}

func TestToV2(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain", `{"type":"string","description":"d","maxLength":3}`, `{"type":"string","description":"d","maxLength":3}`},
		{"junctors dropped", `{"type":"string","allOf":[{"minLength":1}],"anyOf":[{"enum":["a"]}],"oneOf":[{"enum":["b"]}],"not":{"enum":["c"]}}`, `{"type":"string"}`},
		{"nullable", `{"type":"object","nullable":true,"properties":{"a":{"type":"string"}},"description":"d"}`, `{"description":"d"}`},
		{"nullable false dropped", `{"type":"string","nullable":false}`, `{"type":"string"}`},
		{"nullable array", `{"type":"array","nullable":true,"items":{"type":"string"}}`, `{}`},
		{"nullable property not required", `{"type":"object","required":["a","b"],"properties":{"a":{"type":"string","nullable":true},"b":{"type":"string"}}}`,
			`{"type":"object","required":["b"],"properties":{"a":{},"b":{"type":"string"}}}`},
		{"all required nullable", `{"type":"object","required":["a"],"properties":{"a":{"type":"string","nullable":true}}}`,
			`{"type":"object","properties":{"a":{}}}`},
		{"nullable additionalProperties clears required", `{"type":"object","required":["a"],"additionalProperties":{"type":"string","nullable":true}}`,
			`{"type":"object","additionalProperties":{}}`},
		{"preserve unknown object", `{"type":"object","x-kubernetes-preserve-unknown-fields":true,"properties":{"a":{"type":"string"}}}`,
			`{"x-kubernetes-preserve-unknown-fields":true}`},
		{"preserve unknown array", `{"type":"array","x-kubernetes-preserve-unknown-fields":true,"items":{"type":"string"}}`,
			`{"x-kubernetes-preserve-unknown-fields":true}`},
		{"array without items", `{"type":"array"}`, `{}`},
		{"nested", `{"type":"object","properties":{"a":{"type":"array","items":{"type":"object","properties":{"b":{"type":"string","nullable":true}}}},"m":{"type":"object","additionalProperties":{"anyOf":[{"type":"integer"}],"x-kubernetes-int-or-string":true}}}}`,
			`{"type":"object","properties":{"a":{"type":"array","items":{"type":"object","properties":{"b":{}}}},"m":{"type":"object","additionalProperties":{"x-kubernetes-int-or-string":true}}}}`},
		{"described reference", `{"allOf":[{"$ref":"#/components/schemas/a.B"}],"description":"d","default":{}}`,
			`{"$ref":"#/definitions/a.B","description":"d"}`},
		{"bare reference", `{"$ref":"#/components/schemas/a.B"}`, `{"$ref":"#/definitions/a.B"}`},
		{"defaults pruned", `{"type":"object","default":{"a":"x"},"properties":{"a":{"type":"string","default":"x"}}}`,
			`{"type":"object","properties":{"a":{"type":"string"}}}`},
		{"a property named default", `{"type":"object","properties":{"default":{"type":"string"}}}`,
			`{"type":"object","properties":{"default":{"type":"string"}}}`},
		{"extensions kept", `{"type":"object","x-kubernetes-validations":[{"rule":"true"}],"x-kubernetes-list-type":"map"}`,
			`{"type":"object","x-kubernetes-validations":[{"rule":"true"}],"x-kubernetes-list-type":"map"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := mustJSON(t, tt.in)
			got := toV2(in)
			if want := mustJSON(t, tt.want); !reflect.DeepEqual(got, want) {
				g, _ := json.Marshal(got)
				t.Errorf("toV2(%s) =\n%s\nwant\n%s", tt.in, g, tt.want)
			}
			if !reflect.DeepEqual(in, mustJSON(t, tt.in)) {
				t.Errorf("toV2 modified its input")
			}
		})
	}
}

func TestUnfoldIntOrString(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"unfolded", `{"x-kubernetes-int-or-string":true}`,
			`{"x-kubernetes-int-or-string":true,"anyOf":[{"type":"integer"},{"type":"string"}]}`},
		{"already spelled out", `{"x-kubernetes-int-or-string":true,"anyOf":[{"type":"integer"},{"type":"string"}]}`,
			`{"x-kubernetes-int-or-string":true,"anyOf":[{"type":"integer"},{"type":"string"}]}`},
		{"other anyOf goes into allOf", `{"x-kubernetes-int-or-string":true,"anyOf":[{"maximum":3},{"pattern":"^a"}]}`,
			`{"x-kubernetes-int-or-string":true,"anyOf":[{"maximum":3},{"pattern":"^a"}],"allOf":[{"anyOf":[{"type":"integer"},{"type":"string"}]}]}`},
		{"nested", `{"type":"object","properties":{"p":{"type":"array","items":{"x-kubernetes-int-or-string":true}}}}`,
			`{"type":"object","properties":{"p":{"type":"array","items":{"x-kubernetes-int-or-string":true,"anyOf":[{"type":"integer"},{"type":"string"}]}}}}`},
	}
	for _, tt := range tests {
		got := mustJSON(t, tt.in)
		unfoldIntOrString(got)
		if want := mustJSON(t, tt.want); !reflect.DeepEqual(got, want) {
			g, _ := json.Marshal(got)
			t.Errorf("%s: got %s, want %s", tt.name, g, tt.want)
		}
	}
}

func TestModelName(t *testing.T) {
	tests := []struct {
		gvk  schema.GroupVersionKind
		want string
	}{
		{schema.GroupVersionKind{Group: "stable.example.com", Version: "v1", Kind: "CronTab"}, "com.example.stable.v1.CronTab"},
		{schema.GroupVersionKind{Group: "example.com", Version: "v1alpha1", Kind: "GadgetList"}, "com.example.v1alpha1.GadgetList"},
		{schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, "io.k8s.api.core.v1.Namespace"},
		{schema.GroupVersionKind{Version: "v1", Kind: "NamespaceList"}, "io.k8s.api.core.v1.NamespaceList"},
		{schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}, scaleModel},
	}
	for _, tt := range tests {
		if got := modelName(tt.gvk); got != tt.want {
			t.Errorf("modelName(%v) = %q, want %q", tt.gvk, got, tt.want)
		}
	}
}

func TestOperationNames(t *testing.T) {
	tests := []struct{ group, want string }{
		{"", "core"},
		{"stable.example.com", "stableExampleCom"},
		{"my-group.example.com", "myGroupExampleCom"},
		{"apiextensions.k8s.io", "apiextensionsK8sIo"},
	}
	for _, tt := range tests {
		if got := groupIdentifier(tt.group); got != tt.want {
			t.Errorf("groupIdentifier(%q) = %q, want %q", tt.group, got, tt.want)
		}
	}
	def := &registry.Definition{Group: "stable.example.com", Resource: "crontabs", Kind: "CronTab", ListKind: "CronTabList", Scope: registry.Namespaced}
	v := &registry.Version{Name: "v1", Served: true, Subresources: registry.Subresources{Status: true}}
	gvk := schema.GroupVersionKind{Group: "stable.example.com", Version: "v1", Kind: "CronTab"}
	var ids []string
	for _, p := range resourcePaths(def, v, gvk, "m", "l") {
		for _, op := range p.ops {
			ids = append(ids, op.id)
		}
	}
	want := []string{
		"listStableExampleComV1CronTabForAllNamespaces",
		"listStableExampleComV1NamespacedCronTab", "createStableExampleComV1NamespacedCronTab", "deleteStableExampleComV1CollectionNamespacedCronTab",
		"readStableExampleComV1NamespacedCronTab", "replaceStableExampleComV1NamespacedCronTab", "deleteStableExampleComV1NamespacedCronTab", "patchStableExampleComV1NamespacedCronTab",
		"readStableExampleComV1NamespacedCronTabStatus", "replaceStableExampleComV1NamespacedCronTabStatus", "patchStableExampleComV1NamespacedCronTabStatus",
	}
	if !reflect.DeepEqual(ids, want) {
		t.Errorf("operation IDs =\n%q\nwant\n%q", ids, want)
	}
}

func TestNegotiate(t *testing.T) {
	offers := []string{mimeJSON, mimeV2ProtobufOld, mimeV2Protobuf}
	tests := []struct {
		accept string
		want   string
		ok     bool
	}{
		{"", mimeJSON, true},
		{"*/*", mimeJSON, true},
		{"application/json", mimeJSON, true},
		{"application/com.github.proto-openapi.spec.v2@v1.0+protobuf", mimeV2ProtobufOld, true},
		{"application/com.github.proto-openapi.spec.v2.v1.0+protobuf", mimeV2Protobuf, true},
		{"application/json;q=0.5, application/com.github.proto-openapi.spec.v2.v1.0+protobuf", mimeV2Protobuf, true},
		{"text/html, application/*;q=0.1", mimeJSON, true},
		{"text/html", "", false},
		// A quality of zero counts, as in upstream's handler.
		{"application/json;q=0", mimeJSON, true},
		{"APPLICATION/JSON", "", false},
	}
	for _, tt := range tests {
		got, ok := codec.NegotiateOffer(tt.accept, offers)
		if got != tt.want || ok != tt.ok {
			t.Errorf("negotiate(%q) = %q, %v; want %q, %v", tt.accept, got, ok, tt.want, tt.ok)
		}
	}
}

// TestConcurrentSwaps reads every document while the registry changes; run
// with -race.
func TestConcurrentSwaps(t *testing.T) {
	srv, reg, _ := newTestServer(t, testDefinitions())
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 10; j++ {
				for _, p := range []string{"/openapi/v3", "/openapi/v3/apis/stable.example.com/v1", "/openapi/v2"} {
					resp, err := http.Get(srv.URL + p)
					if err != nil {
						t.Error(err)
						return
					}
					resp.Body.Close()
					if resp.StatusCode != 200 {
						t.Errorf("%s: status %d", p, resp.StatusCode)
					}
				}
			}
		}()
	}
	for i := 0; i < 10; i++ {
		defs := testDefinitions()
		if i%2 == 0 {
			defs[1].Versions[1].OpenAPISchema = []byte(`{"type":"object"}`)
		}
		reg.Swap(defs)
	}
	wg.Wait()
}
