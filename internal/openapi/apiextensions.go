package openapi

import (
	"encoding/json"
	"fmt"
	"slices"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	generated "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// The models taken from the definitions apiextensions-apiserver generates
// from the Go types: the built-in CustomResourceDefinition resource, whose
// schema is too large and too tied to the Go types to keep by hand
// (JSONSchemaProps alone has some fifty fields and refers to itself), and the
// meta types every document refers to (ObjectMeta, ListMeta, Status, Patch,
// …; DeleteOptions is builtin.json's, which lists its kinds) and
// autoscaling/v1 Scale. They are the same
// source upstream's CRD OpenAPI builder publishes, so descriptions, formats,
// defaults and list-type and patch-strategy extensions are upstream's.
var (
	crdModel     = apiextensionsv1.CustomResourceDefinition{}.OpenAPIModelName()
	crdListModel = apiextensionsv1.CustomResourceDefinitionList{}.OpenAPIModelName()
	// The legacy v1beta1 CRD API, which crdserver still serves.
	crdV1beta1Model     = apiextensionsv1beta1.CustomResourceDefinition{}.OpenAPIModelName()
	crdV1beta1ListModel = apiextensionsv1beta1.CustomResourceDefinitionList{}.OpenAPIModelName()
	typeMetaModel       = metav1.TypeMeta{}.OpenAPIModelName()

	// generatedRoots are the models taken from the generated definitions
	// whatever refers to them; what they refer to is taken too.
	generatedRoots = []string{crdModel, crdListModel, crdV1beta1Model, crdV1beta1ListModel, objectMetaModel, listMetaModel, statusModel, patchModel, scaleModel}

	// generatedGVKs are the x-kubernetes-group-version-kind extensions
	// upstream adds to generated models it publishes, taken from the scheme
	// its definition namer is built from (for a CRD, client-go's). Status
	// is registered unversioned. DeleteOptions, registered in every group
	// version, is builtin.json's model with kube-apiserver's list, which
	// each document narrows (deleteOptionsV3).
	generatedGVKs = map[string]schema.GroupVersionKind{
		crdModel:     apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"),
		crdListModel: apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinitionList"),

		crdV1beta1Model:     apiextensionsv1beta1.SchemeGroupVersion.WithKind("CustomResourceDefinition"),
		crdV1beta1ListModel: apiextensionsv1beta1.SchemeGroupVersion.WithKind("CustomResourceDefinitionList"),
		statusModel:         metav1.Unversioned.WithKind("Status"),
		scaleModel:          autoscalingv1.SchemeGroupVersion.WithKind("Scale"),
	}
)

// generatedModels returns, in the library's form (OpenAPI v3, references to
// #/components/schemas/), the generatedRoots and every model they or the
// models of have refer to, transitively, that have does not hold; and the
// properties upstream gives every object for its TypeMeta (apiVersion and
// kind), which are not a model of their own.
//
// It costs a few milliseconds (BenchmarkGeneratedModels): the generated
// code builds the definitions of every type it knows (129, a third of the
// time), and each model used goes through JSON. It is done once, when the
// library is first used.
func generatedModels(have map[string]map[string]any) (models map[string]map[string]any, typeMeta map[string]any, err error) {
	defs := generated.GetOpenAPIDefinitions(func(name string) spec.Ref {
		return spec.MustCreateRef(v3RefPrefix + name)
	})
	queue := slices.Clone(generatedRoots)
	for _, s := range have {
		queue = collectRefs(s, queue)
	}
	models = map[string]map[string]any{}
	for len(queue) > 0 {
		name := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		if _, ok := have[name]; ok {
			continue
		}
		if _, ok := models[name]; ok {
			continue
		}
		s, err := v3Model(defs, name)
		if err != nil {
			return nil, nil, err
		}
		models[name] = s
		queue = collectRefs(s, queue)
	}
	for name, gvk := range generatedGVKs {
		if s, ok := models[name]; ok {
			s[extGVK] = gvkExtension(gvk)
		}
	}
	tm, err := v3Model(defs, typeMetaModel)
	if err != nil {
		return nil, nil, err
	}
	typeMeta, _ = tm["properties"].(map[string]any)
	for _, p := range []string{"apiVersion", "kind"} {
		if _, ok := typeMeta[p].(map[string]any); !ok {
			return nil, nil, fmt.Errorf("the OpenAPI definition of %s has no property %s", typeMetaModel, p)
		}
	}
	return models, typeMeta, nil
}

// v3Model converts the generated definition of name to a decoded v3 schema.
func v3Model(defs map[string]common.OpenAPIDefinition, name string) (map[string]any, error) {
	def, ok := defs[name]
	if !ok {
		return nil, fmt.Errorf("no generated OpenAPI definition of %s", name)
	}
	// A type whose v2 and v3 schemas differ carries its v2 schema in an
	// extension; none of the types used does, and the library derives v2
	// from v3 by its own rules, so such a type would need handling here.
	if _, ok := def.Schema.Extensions[common.ExtensionV2Schema]; ok {
		return nil, fmt.Errorf("the OpenAPI definition of %s has a separate v2 schema, which is not supported", name)
	}
	// MarshalJSON directly: json.Marshal would check and compact its output
	// again.
	b, err := def.Schema.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("encoding the OpenAPI definition of %s: %w", name, err)
	}
	var s map[string]any
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("decoding the OpenAPI definition of %s: %w", name, err)
	}
	wrapRefs(s)
	return s, nil
}

// wrapRefs rewrites, in s and the schemas below it, every reference that has
// siblings (a description, a default) into an allOf holding the bare
// reference, as upstream's v3 documents do: in OpenAPI 3.0 the siblings of a
// $ref are ignored. toV2 turns them back. It modifies s.
func wrapRefs(s map[string]any) {
	if ref, ok := s["$ref"].(string); ok && len(s) > 1 {
		delete(s, "$ref")
		allOf, _ := s["allOf"].([]any)
		s["allOf"] = append([]any{map[string]any{"$ref": ref}}, allOf...)
	}
	forEachSchemaBelow(s, wrapRefs)
}

// forEachSchemaBelow calls f on every schema directly below s: properties,
// items (one schema or a list), additionalProperties, allOf, anyOf, oneOf and
// not. Unlike forEachSubschema it includes the junctors, and it never takes a
// property's name for a keyword (JSONSchemaProps has properties named $ref
// and items).
func forEachSchemaBelow(s map[string]any, f func(map[string]any)) {
	each := func(v any) {
		switch x := v.(type) {
		case map[string]any:
			f(x)
		case []any:
			for _, e := range x {
				if m, ok := e.(map[string]any); ok {
					f(m)
				}
			}
		}
	}
	if props, ok := s["properties"].(map[string]any); ok {
		for _, p := range props {
			each(p)
		}
	}
	for _, k := range []string{"items", "additionalProperties", "allOf", "anyOf", "oneOf", "not"} {
		each(s[k])
	}
}
