package openapi

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	generated "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1beta1 "k8s.io/apimachinery/pkg/apis/meta/v1beta1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiserveropenapi "k8s.io/apiserver/pkg/endpoints/openapi"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	builderutil "k8s.io/kube-openapi/pkg/builder3/util"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// upstreamModels returns the generated definitions as upstream's OpenAPI
// builders publish them, decoded: in v3 with references that have siblings
// wrapped in allOf (kube-openapi's builder3), in v2 without defaults
// (upstream's v2 handlers prune them).
func upstreamModels(t *testing.T, v2 bool) map[string]any {
	t.Helper()
	prefix := v3RefPrefix
	if v2 {
		prefix = v2RefPrefix
	}
	defs := generated.GetOpenAPIDefinitions(func(name string) spec.Ref { return spec.MustCreateRef(prefix + name) })
	out := make(map[string]any, len(defs))
	for name, def := range defs {
		s := &def.Schema
		if _, ok := s.Extensions[common.ExtensionV2Schema]; ok {
			continue // not used by the library (v3Model refuses them)
		}
		if !v2 {
			s = builderutil.WrapRefs(s)
		}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if v2 {
			pruneDefaults(m)
		}
		if gvk, ok := generatedGVKs[name]; ok {
			m[extGVK] = []any{map[string]any{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind}}
		}
		out[name] = m
	}
	return out
}

// TestMetaModelsAreUpstreams compares every served model that upstream
// takes from the generated definitions (the meta types, autoscaling/v1
// Scale, the CustomResourceDefinition models) with what upstream's
// builders make of those definitions, in v3 and v2. DeleteOptions is
// compared without its group version kinds, which each document lists
// otherwise (TestDeleteOptionsKinds).
func TestMetaModelsAreUpstreams(t *testing.T) {
	srv, _, _ := newTestServer(t, withCRD())
	served := map[string]map[string]any{} // v3 models of every document
	for _, path := range []string{"api/v1", "apis/stable.example.com/v1", "apis/apiextensions.k8s.io/v1"} {
		_, body := get(t, srv.URL+"/openapi/v3/"+path, nil)
		schemas, _ := dig(decode(t, body), "components", "schemas").(map[string]any)
		for name, s := range schemas {
			served[name], _ = s.(map[string]any)
		}
	}
	_, body := get(t, srv.URL+"/openapi/v2", map[string]string{"Accept": "application/json"})
	servedV2, _ := decode(t, body)["definitions"].(map[string]any)

	for _, form := range []struct {
		name   string
		served map[string]any
		want   map[string]any
	}{
		{"v3", toAnyMap(served), upstreamModels(t, false)},
		{"v2", servedV2, upstreamModels(t, true)},
	} {
		compared := 0
		for name, want := range form.want {
			got, ok := form.served[name]
			if !ok {
				continue
			}
			compared++
			if name == deleteOptionsModel {
				delete(got.(map[string]any), extGVK)
			}
			if !reflect.DeepEqual(got, want) {
				g, _ := json.Marshal(got)
				w, _ := json.Marshal(want)
				t.Errorf("%s model %s:\n got %s\nwant %s", form.name, name, g, w)
			}
		}
		// The meta types, Scale and the CRD models.
		for _, name := range []string{objectMetaModel, listMetaModel, statusModel, deleteOptionsModel, patchModel, scaleModel,
			metaV1 + "ManagedFieldsEntry", metaV1 + "OwnerReference", metaV1 + "Time", metaV1 + "FieldsV1", crdModel} {
			if _, ok := form.served[name]; !ok {
				t.Errorf("%s: model %s not served", form.name, name)
			}
		}
		t.Logf("%s: %d models compared", form.name, compared)
	}

	// A few descriptions spelled out, taken from the types' SwaggerDoc: the
	// QA report's kubectl explain ct.metadata.labels and
	// ct.metadata.managedFields.
	om, mf := metav1.ObjectMeta{}.SwaggerDoc(), metav1.ManagedFieldsEntry{}.SwaggerDoc()
	for _, c := range []struct {
		path []string
		want string
	}{
		{[]string{objectMetaModel, "properties", "labels", "description"}, om["labels"]},
		{[]string{objectMetaModel, "properties", "managedFields", "description"}, om["managedFields"]},
		{[]string{objectMetaModel, "properties", "name", "description"}, om["name"]},
		{[]string{objectMetaModel, "description"}, om[""]},
		{[]string{metaV1 + "ManagedFieldsEntry", "description"}, mf[""]},
		{[]string{metaV1 + "ManagedFieldsEntry", "properties", "fieldsV1", "description"}, mf["fieldsV1"]},
	} {
		if got := dig(toAnyMap(served), c.path...); got != c.want || c.want == "" {
			t.Errorf("%v = %q, want %q", c.path, got, c.want)
		}
	}
}

// pruneDefaults removes the defaults of s and of the schemas below it, as
// kube-openapi's handler.PruneDefaults does to upstream's v2 documents.
func pruneDefaults(s map[string]any) {
	delete(s, "default")
	forEachSchemaBelow(s, pruneDefaults)
}

func toAnyMap(m map[string]map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// TestCustomResourceMetaIsUpstreams checks what upstream's CRD builder
// adds to a custom resource's schema and its list's: apiVersion and kind as
// TypeMeta's generated definition has them, metadata a reference described
// as PartialObjectMetadata's (PartialObjectMetadataList's for the list), in
// v3 wrapped in allOf, in v2 a plain $ref; the same for an embedded
// resource's metadata, with apiVersion and kind described in the builder's
// own words, but in v2 for an embedded resource that preserves unknown
// fields, which is left as it is. The list and its items are described in
// the builder's words too.
func TestCustomResourceMetaIsUpstreams(t *testing.T) {
	srv, _, _ := newTestServer(t, withCRD())
	_, body := get(t, srv.URL+"/openapi/v3/apis/stable.example.com/v1", nil)
	v3 := dig(decode(t, body), "components", "schemas")
	_, body = get(t, srv.URL+"/openapi/v2", map[string]string{"Accept": "application/json"})
	v2 := decode(t, body)["definitions"]

	typeMeta := dig(upstreamModels(t, false), typeMetaModel, "properties")
	objDesc := metav1beta1.PartialObjectMetadata{}.SwaggerDoc()["metadata"]
	listDesc := metav1beta1.PartialObjectMetadataList{}.SwaggerDoc()["metadata"]
	wrapped := func(model, desc string) any {
		return map[string]any{"allOf": []any{map[string]any{"$ref": v3RefPrefix + model}}, "description": desc}
	}
	plain := func(model, desc string) any {
		return map[string]any{"$ref": v2RefPrefix + model, "description": desc}
	}
	const ct, ctList = "com.example.stable.v1.CronTab", "com.example.stable.v1.CronTabList"
	template := []string{ct, "properties", "spec", "properties", "template", "properties"}
	raw := []string{ct, "properties", "spec", "properties", "raw"}
	embedded := func(desc string) any {
		return map[string]any{"type": "string", "description": desc}
	}
	const (
		embeddedAPIVersion = "apiVersion defines the versioned schema of this representation of an object. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"
		embeddedKind       = "kind is a string value representing the type of this object. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"
		listItems          = "List of crontabs. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md"
	)
	for _, c := range []struct {
		name string
		got  any
		want any
	}{
		{"v3 apiVersion", dig(v3, ct, "properties", "apiVersion"), dig(typeMeta, "apiVersion")},
		{"v3 kind", dig(v3, ct, "properties", "kind"), dig(typeMeta, "kind")},
		{"v3 metadata", dig(v3, ct, "properties", "metadata"), wrapped(objectMetaModel, objDesc)},
		{"v3 list apiVersion", dig(v3, ctList, "properties", "apiVersion"), dig(typeMeta, "apiVersion")},
		{"v3 list metadata", dig(v3, ctList, "properties", "metadata"), wrapped(listMetaModel, listDesc)},
		{"v3 list", dig(v3, ctList, "description"), "CronTabList is a list of CronTab"},
		{"v3 list items", dig(v3, ctList, "properties", "items", "description"), listItems},
		{"v3 embedded metadata", dig(v3, append(template, "metadata")...), wrapped(objectMetaModel, objDesc)},
		{"v3 embedded apiVersion", dig(v3, append(template, "apiVersion")...), embedded(embeddedAPIVersion)},
		{"v3 embedded kind", dig(v3, append(template, "kind")...), embedded(embeddedKind)},
		{"v3 embedded preserving", dig(v3, append(raw, "required")...), []any{"kind", "apiVersion"}},
		{"v2 embedded apiVersion", dig(v2, append(template, "apiVersion")...), embedded(embeddedAPIVersion)},
		{"v2 embedded metadata", dig(v2, append(template, "metadata")...), plain(objectMetaModel, objDesc)},
		{"v2 embedded preserving", dig(v2, raw...), map[string]any{"x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true, "required": []any{"kind"}}},
		{"v2 list items", dig(v2, ctList, "properties", "items", "description"), listItems},
		{"v2 apiVersion", dig(v2, ct, "properties", "apiVersion"), dig(typeMeta, "apiVersion")},
		{"v2 kind", dig(v2, ct, "properties", "kind"), dig(typeMeta, "kind")},
		{"v2 metadata", dig(v2, ct, "properties", "metadata"), plain(objectMetaModel, objDesc)},
		{"v2 list metadata", dig(v2, ctList, "properties", "metadata"), plain(listMetaModel, listDesc)},
	} {
		if c.want == nil || !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.name, c.got, c.want)
		}
	}
	if d, _ := dig(typeMeta, "apiVersion", "description").(string); d != (metav1.TypeMeta{}).SwaggerDoc()["apiVersion"] {
		t.Errorf("TypeMeta's generated apiVersion description %q differs from its SwaggerDoc", d)
	}
}

// TestBuiltinDescriptions checks that the models of builtin.json carry
// their types' SwaggerDoc.
func TestBuiltinDescriptions(t *testing.T) {
	l := lib()
	ns, status := corev1.Namespace{}.SwaggerDoc(), corev1.NamespaceStatus{}.SwaggerDoc()
	for _, c := range []struct {
		path []string
		want string
	}{
		{[]string{"io.k8s.api.core.v1.Namespace", "description"}, ns[""]},
		{[]string{"io.k8s.api.core.v1.Namespace", "properties", "metadata", "description"}, ns["metadata"]},
		{[]string{"io.k8s.api.core.v1.Namespace", "properties", "kind", "description"}, metav1.TypeMeta{}.SwaggerDoc()["kind"]},
	} {
		if got := dig(toAnyMap(l.models), c.path...); got != c.want || c.want == "" {
			t.Errorf("%v = %q, want %q", c.path, got, c.want)
		}
	}
	// An enum's values, and its description followed by what each value
	// means (from the Go comments of its constants), as kube-apiserver
	// serves them and its published documents leave out.
	phase := []string{"io.k8s.api.core.v1.NamespaceStatus", "properties", "phase"}
	wantDesc := status["phase"] + "\n\nPossible enum values:\n - `\"Active\"` means the namespace is available for use in the system\n - `\"Terminating\"` means the namespace is undergoing graceful termination"
	if got := dig(toAnyMap(l.models), append(phase, "description")...); got != wantDesc {
		t.Errorf("%v description = %q, want %q", phase, got, wantDesc)
	}
	if got := dig(toAnyMap(l.models), append(phase, "enum")...); !reflect.DeepEqual(got, []any{"Active", "Terminating"}) {
		t.Errorf("%v enum = %v, want [Active Terminating]", phase, got)
	}
	// builtin.json holds no model the generated definitions have: those are
	// taken from there, but for those with a v2 form of their own and the
	// kinds it is made for, whose published models say which kind they
	// are (autoscaling/v1's HorizontalPodAutoscaler).
	defs := generated.GetOpenAPIDefinitions(func(name string) spec.Ref { return spec.MustCreateRef(v3RefPrefix + name) })
	for name, m := range mustLoadLibrary(builtinJSON) {
		if def, ok := defs[name]; ok && def.Schema.Extensions[common.ExtensionV2Schema] == nil && m[extGVK] == nil {
			t.Errorf("builtin.json holds %s, which the generated definitions have", name)
		}
	}
}

// TestDeleteOptionsKinds checks the x-kubernetes-group-version-kind list of
// DeleteOptions in each document: in a built-in group version's, that
// group version's and core v1's, as kube-apiserver narrows them; in a
// custom resource's, every group version of client-go's scheme, as
// upstream's CRD builder names the model; in v2, every group version of
// kube-apiserver's scheme, which has those of client-go and more.
func TestDeleteOptionsKinds(t *testing.T) {
	srv, _, _ := newTestServer(t, withCRD())
	kinds := func(gvs ...schema.GroupVersion) []any {
		out := []any{}
		for _, gv := range gvs {
			out = append(out, map[string]any{"group": gv.Group, "version": gv.Version, "kind": "DeleteOptions"})
		}
		return out
	}
	_, ext := apiserveropenapi.NewDefinitionNamer(clientgoscheme.Scheme).GetDefinitionName(deleteOptionsModel)
	b, err := json.Marshal(ext[extGVK])
	if err != nil {
		t.Fatal(err)
	}
	var clientGo []any
	if err := json.Unmarshal(b, &clientGo); err != nil || len(clientGo) < 40 {
		t.Fatalf("client-go's scheme lists %d group versions of DeleteOptions (%v), want dozens", len(clientGo), err)
	}
	core := schema.GroupVersion{Version: "v1"}
	for _, c := range []struct {
		doc  string
		want []any
	}{
		{"api/v1", kinds(core)},
		{"apis/apiextensions.k8s.io/v1", kinds(core, schema.GroupVersion{Group: "apiextensions.k8s.io", Version: "v1"})},
		{"apis/stable.example.com/v1", clientGo},
	} {
		_, body := get(t, srv.URL+"/openapi/v3/"+c.doc, nil)
		got := dig(decode(t, body), "components", "schemas", deleteOptionsModel, extGVK)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: DeleteOptions kinds %v, want %v", c.doc, got, c.want)
		}
	}

	_, body := get(t, srv.URL+"/openapi/v2", map[string]string{"Accept": "application/json"})
	v2, _ := dig(decode(t, body), "definitions", deleteOptionsModel, extGVK).([]any)
	for _, gvk := range clientGo {
		if !slices.ContainsFunc(v2, func(x any) bool { return reflect.DeepEqual(x, gvk) }) {
			t.Errorf("v2: DeleteOptions kinds lack client-go's %v", gvk)
		}
	}
	for _, g := range clientGoLacks {
		if !slices.ContainsFunc(v2, func(x any) bool { return x.(map[string]any)["group"] == g }) {
			t.Errorf("v2: DeleteOptions kinds lack group %s", g)
		}
	}
}
