package openapi

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	openapiv2 "github.com/google/gnostic-models/openapiv2"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	cgdiscovery "k8s.io/client-go/discovery"
	"k8s.io/client-go/openapi3"
	"k8s.io/client-go/rest"
	"k8s.io/kube-openapi/pkg/util/proto"

	"github.com/crdserver/crdserver/internal/registry"
)

var crdGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

// crdDefinition mirrors the built-in customresourcedefinitions resource
// (internal/crd, which this package may not import).
func crdDefinition() *registry.Definition {
	return &registry.Definition{
		Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Singular: "customresourcedefinition",
		Kind: "CustomResourceDefinition", ListKind: "CustomResourceDefinitionList",
		ShortNames: []string{"crd", "crds"}, Scope: registry.Cluster,
		Versions: []registry.Version{{Name: "v1", Served: true, Storage: true, Subresources: registry.Subresources{Status: true}}},
		Hooks:    strategicHooks{},
	}
}

func withCRD() []*registry.Definition {
	return append(testDefinitions(), crdDefinition())
}

const (
	apiextV1 = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1."
	metaV1   = "io.k8s.apimachinery.pkg.apis.meta.v1."
)

// TestCRDModelsV3 checks the v3 document of apiextensions.k8s.io/v1 against
// what upstream publishes: the full, recursive schema with its extensions,
// references wrapped in allOf where they carry a description or default.
func TestCRDModelsV3(t *testing.T) {
	srv, _, _ := newTestServer(t, withCRD())
	resp, body := get(t, srv.URL+"/openapi/v3/apis/apiextensions.k8s.io/v1", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	doc := decode(t, body)
	schemas, _ := dig(doc, "components", "schemas").(map[string]any)
	for _, ref := range collectRefs(doc, nil) {
		if _, ok := schemas[ref]; !ok {
			t.Errorf("unresolved reference %s", ref)
		}
	}
	// The meta types are the library's, one copy each.
	for name := range schemas {
		if !strings.HasPrefix(name, apiextV1) && !strings.HasPrefix(name, metaV1) {
			t.Errorf("unexpected model %s", name)
		}
	}
	ref := func(model string) []any { return []any{map[string]any{"$ref": v3RefPrefix + model}} }
	tests := []struct {
		path []string
		want any
	}{
		{[]string{apiextV1 + "CustomResourceDefinition", extGVK}, []any{map[string]any{"group": "apiextensions.k8s.io", "version": "v1", "kind": "CustomResourceDefinition"}}},
		{[]string{apiextV1 + "CustomResourceDefinitionList", extGVK}, []any{map[string]any{"group": "apiextensions.k8s.io", "version": "v1", "kind": "CustomResourceDefinitionList"}}},
		{[]string{apiextV1 + "CustomResourceDefinition", "required"}, []any{"spec"}},
		{[]string{apiextV1 + "CustomResourceDefinition", "properties", "metadata", "allOf"}, ref(metaV1 + "ObjectMeta")},
		{[]string{apiextV1 + "CustomResourceDefinition", "properties", "spec", "allOf"}, ref(apiextV1 + "CustomResourceDefinitionSpec")},
		{[]string{apiextV1 + "CustomResourceDefinition", "properties", "spec", "default"}, map[string]any{}},
		{[]string{apiextV1 + "CustomResourceDefinitionList", "properties", "items", "items", "$ref"}, v3RefPrefix + apiextV1 + "CustomResourceDefinition"},
		{[]string{apiextV1 + "CustomResourceDefinitionList", "properties", "metadata", "allOf"}, ref(metaV1 + "ListMeta")},
		{[]string{apiextV1 + "CustomResourceDefinitionSpec", "properties", "versions", "x-kubernetes-list-type"}, "atomic"},
		{[]string{apiextV1 + "CustomResourceDefinitionSpec", "properties", "versions", "items", "$ref"}, v3RefPrefix + apiextV1 + "CustomResourceDefinitionVersion"},
		{[]string{apiextV1 + "CustomResourceDefinitionNames", "properties", "shortNames", "x-kubernetes-list-type"}, "atomic"},
		{[]string{apiextV1 + "CustomResourceDefinitionStatus", "properties", "conditions", "x-kubernetes-list-map-keys"}, []any{"type"}},
		{[]string{apiextV1 + "CustomResourceDefinitionStatus", "properties", "conditions", "x-kubernetes-list-type"}, "map"},
		{[]string{apiextV1 + "CustomResourceDefinitionCondition", "properties", "lastTransitionTime", "allOf"}, ref(metaV1 + "Time")},
		{[]string{apiextV1 + "CustomResourceValidation", "properties", "openAPIV3Schema", "allOf"}, ref(apiextV1 + "JSONSchemaProps")},
		// JSONSchemaProps refers to itself, and has properties named like
		// keywords, which must stay properties.
		{[]string{apiextV1 + "JSONSchemaProps", "properties", "properties", "additionalProperties", "$ref"}, v3RefPrefix + apiextV1 + "JSONSchemaProps"},
		{[]string{apiextV1 + "JSONSchemaProps", "properties", "$ref", "type"}, "string"},
		{[]string{apiextV1 + "JSONSchemaProps", "properties", "items", "$ref"}, v3RefPrefix + apiextV1 + "JSONSchemaPropsOrArray"},
		{[]string{apiextV1 + "JSONSchemaProps", "properties", "default", "allOf"}, ref(apiextV1 + "JSON")},
		{[]string{apiextV1 + "JSONSchemaProps", "properties", "x-kubernetes-validations", "x-kubernetes-patch-merge-key"}, "rule"},
		// Types that are any JSON value have no type.
		{[]string{apiextV1 + "JSON", "type"}, nil},
		{[]string{apiextV1 + "JSONSchemaPropsOrArray", "type"}, nil},
	}
	for _, tt := range tests {
		got := dig(schemas, tt.path...)
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(tt.want)
		if string(g) != string(w) {
			t.Errorf("%s = %s, want %s", strings.Join(tt.path, " "), g, w)
		}
	}
	if d, _ := dig(schemas, apiextV1+"JSONSchemaProps", "description").(string); d == "" {
		t.Error("JSONSchemaProps has no description")
	}
	// In v3 a reference's siblings are ignored, so none may have any.
	var check func(v any)
	check = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if _, ok := x["$ref"].(string); ok && len(x) > 1 {
				t.Errorf("reference with siblings: %v", x)
			}
			for _, c := range x {
				check(c)
			}
		case []any:
			for _, c := range x {
				check(c)
			}
		}
	}
	check(schemas)
	// kubectl reads the protobuf form.
	resp, _ = get(t, srv.URL+"/openapi/v3/apis/apiextensions.k8s.io/v1", map[string]string{"Accept": mimeV3Protobuf})
	if resp.StatusCode != 200 {
		t.Errorf("protobuf: status %d", resp.StatusCode)
	}
}

func TestCRDModelsV2(t *testing.T) {
	srv, _, _ := newTestServer(t, withCRD())
	_, body := get(t, srv.URL+"/openapi/v2", map[string]string{"Accept": "application/json"})
	doc := decode(t, body)
	defs, _ := doc["definitions"].(map[string]any)
	for _, ref := range collectRefs(doc, nil) {
		if _, ok := defs[ref]; !ok {
			t.Errorf("unresolved reference %s", ref)
		}
	}
	tests := []struct {
		path []string
		want any
	}{
		// v2 keeps the description beside a plain $ref, as upstream does.
		{[]string{apiextV1 + "CustomResourceDefinition", "properties", "spec", "$ref"}, v2RefPrefix + apiextV1 + "CustomResourceDefinitionSpec"},
		{[]string{apiextV1 + "CustomResourceDefinition", "properties", "spec", "description"}, "spec describes how the user wants the resources to appear"},
		{[]string{apiextV1 + "JSONSchemaProps", "properties", "properties", "additionalProperties", "$ref"}, v2RefPrefix + apiextV1 + "JSONSchemaProps"},
		{[]string{apiextV1 + "JSONSchemaProps", "properties", "allOf", "items", "$ref"}, v2RefPrefix + apiextV1 + "JSONSchemaProps"},
		{[]string{apiextV1 + "CustomResourceDefinitionList", extGVK, "0", "kind"}, "CustomResourceDefinitionList"},
	}
	for _, tt := range tests {
		got := dig(defs, tt.path...)
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(tt.want)
		if string(g) != string(w) {
			t.Errorf("%s = %s, want %s", strings.Join(tt.path, " "), g, w)
		}
	}
}

// The last-applied, edited and live forms of a CRD for the patch tests: the
// edit adds a short name and a property; the server added status and
// metadata.
const (
	crdOriginal = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"crontabs.stable.example.com"},
"spec":{"group":"stable.example.com","scope":"Namespaced","names":{"plural":"crontabs","singular":"crontab","kind":"CronTab","shortNames":["ct"]},
"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{"cronSpec":{"type":"string"}}}}}}}]}}`
	crdModified = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"crontabs.stable.example.com"},
"spec":{"group":"stable.example.com","scope":"Namespaced","names":{"plural":"crontabs","singular":"crontab","kind":"CronTab","shortNames":["ct","cts"]},
"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{"cronSpec":{"type":"string"},"image":{"type":"string"}}}}}}}]}}`
	crdCurrent = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"crontabs.stable.example.com","uid":"u","resourceVersion":"5","generation":1},
"spec":{"group":"stable.example.com","scope":"Namespaced","conversion":{"strategy":"None"},"names":{"plural":"crontabs","singular":"crontab","kind":"CronTab","listKind":"CronTabList","shortNames":["ct"]},
"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{"cronSpec":{"type":"string"}}}}}}}]},
"status":{"conditions":[{"type":"Established","status":"True","lastTransitionTime":"2026-01-01T00:00:00Z"}],"storedVersions":["v1"]}}`
)

// TestCRDApplyPatch computes the patch `kubectl apply` sends for an edited
// CRD the way kubectl does, from the v3 document and (its fallback) from the
// v2 one; with a bare object schema both failed, which kubectl printed as
// warnings.
func TestCRDApplyPatch(t *testing.T) {
	srv, _, _ := newTestServer(t, withCRD())
	dc := cgdiscovery.NewDiscoveryClientForConfigOrDie(&rest.Config{Host: srv.URL})
	wantPatch := func(t *testing.T, patch []byte) {
		t.Helper()
		var p map[string]any
		if err := json.Unmarshal(patch, &p); err != nil {
			t.Fatalf("patch %s: %v", patch, err)
		}
		if got := dig(p, "spec", "names", "shortNames"); !slices.Equal(toStrings(got), []string{"ct", "cts"}) {
			t.Errorf("patch %s: shortNames = %v", patch, got)
		}
		if dig(p, "spec", "versions", "0", "schema", "openAPIV3Schema", "properties", "spec", "properties", "image") == nil {
			t.Errorf("patch %s does not add the property", patch)
		}
		if dig(p, "status") != nil || dig(p, "spec", "conversion") != nil {
			t.Errorf("patch %s touches what the server set", patch)
		}
	}

	t.Run("v3", func(t *testing.T) {
		gv, err := openapi3.NewRoot(dc.OpenAPIV3()).GVSpec(crdGVK.GroupVersion())
		if err != nil {
			t.Fatal(err)
		}
		if err := supportsFieldValidation(gv, crdGVK); err != nil {
			t.Error(err)
		}
		var patch []byte
		found := false
		for _, s := range gv.Components.Schemas {
			var gvks []map[string]string
			if err := s.Extensions.GetObject(extGVK, &gvks); err != nil || len(gvks) != 1 || gvks[0]["kind"] != crdGVK.Kind {
				continue
			}
			found = true
			meta := strategicpatch.PatchMetaFromOpenAPIV3{Schema: s, SchemaList: gv.Components.Schemas}
			if patch, err = strategicpatch.CreateThreeWayMergePatch([]byte(crdOriginal), []byte(crdModified), []byte(crdCurrent), meta, false); err != nil {
				t.Fatalf("patch from v3: %v", err)
			}
		}
		if !found {
			t.Fatal("no model tagged with the CRD's GVK")
		}
		wantPatch(t, patch)
	})

	t.Run("v2", func(t *testing.T) {
		doc, err := dc.OpenAPISchema()
		if err != nil {
			t.Fatal(err)
		}
		models, err := proto.NewOpenAPIData(doc)
		if err != nil {
			t.Fatal(err)
		}
		s := models.LookupModel(apiextV1 + "CustomResourceDefinition")
		if s == nil {
			t.Fatal("no CRD model")
		}
		if !consumesStrategic(doc, crdGVK) {
			t.Error("v2 PATCH of CRDs does not consume strategic merge patches")
		}
		patch, err := strategicpatch.CreateThreeWayMergePatch([]byte(crdOriginal), []byte(crdModified), []byte(crdCurrent), strategicpatch.PatchMetaFromOpenAPI{Schema: s}, false)
		if err != nil {
			t.Fatalf("patch from v2: %v", err)
		}
		wantPatch(t, patch)
	})
}

func toStrings(v any) []string {
	l, _ := v.([]any)
	var out []string
	for _, x := range l {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

// consumesStrategic mirrors kubectl's v2 patch-type lookup: the PATCH
// operation tagged with gvk must consume strategic merge patches.
func consumesStrategic(doc *openapiv2.Document, gvk schema.GroupVersionKind) bool {
	for _, p := range doc.GetPaths().GetPath() {
		op := p.GetValue().GetPatch()
		for _, ex := range op.GetVendorExtension() {
			if ex.GetName() != extGVK {
				continue
			}
			y := ex.GetValue().GetYaml()
			if strings.Contains(y, "kind: "+gvk.Kind+"\n") && strings.Contains(y, "group: "+gvk.Group) {
				return slices.Contains(op.GetConsumes(), "application/strategic-merge-patch+json")
			}
		}
	}
	return false
}

// TestLibrary checks the library once built: every reference resolves
// (lib panics otherwise) and the CRD kinds are indexed.
func TestLibrary(t *testing.T) {
	l := lib()
	for _, kind := range []string{"CustomResourceDefinition", "CustomResourceDefinitionList"} {
		if got := l.byGVK[crdGVK.GroupVersion().WithKind(kind)]; got != apiextV1+kind {
			t.Errorf("model of %s = %q", kind, got)
		}
	}
	if got := modelName(crdGVK); got != apiextV1+"CustomResourceDefinition" {
		t.Errorf("modelName(%v) = %q", crdGVK, got)
	}
}

func TestWrapRefs(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"bare", `{"$ref":"#/a"}`, `{"$ref":"#/a"}`},
		{"described", `{"$ref":"#/a","description":"d","default":{}}`, `{"allOf":[{"$ref":"#/a"}],"description":"d","default":{}}`},
		{"existing allOf", `{"$ref":"#/a","allOf":[{"minProperties":1}]}`, `{"allOf":[{"$ref":"#/a"},{"minProperties":1}]}`},
		{"below", `{"properties":{"p":{"type":"array","items":{"$ref":"#/a","default":{}}},"m":{"additionalProperties":{"$ref":"#/a","description":"d"}}}}`,
			`{"properties":{"p":{"type":"array","items":{"allOf":[{"$ref":"#/a"}],"default":{}}},"m":{"additionalProperties":{"allOf":[{"$ref":"#/a"}],"description":"d"}}}}`},
		{"property named $ref", `{"properties":{"$ref":{"type":"string"}}}`, `{"properties":{"$ref":{"type":"string"}}}`},
	}
	for _, tt := range tests {
		got := mustJSON(t, tt.in)
		wrapRefs(got)
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(mustJSON(t, tt.want))
		if string(g) != string(w) {
			t.Errorf("%s: got %s, want %s", tt.name, g, w)
		}
	}
}

// BenchmarkLibrary measures building the library, which the first OpenAPI
// request pays: builtin.json plus the generated models, decoded and
// encoded.
func BenchmarkLibrary(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		models, _, err := loadModels()
		if err != nil {
			b.Fatal(err)
		}
		encodeLibrary(models)
	}
}

// BenchmarkGeneratedModels measures the generated models alone.
func BenchmarkGeneratedModels(b *testing.B) {
	have := mustLoadLibrary(builtinJSON)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := generatedModels(have); err != nil {
			b.Fatal(err)
		}
	}
}
