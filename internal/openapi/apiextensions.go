package openapi

import (
	"encoding/json"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	generated "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// The models of the built-in CustomResourceDefinition resource. Their schema
// is too large and too tied to the Go types to keep by hand in builtin.json
// (JSONSchemaProps alone has some fifty fields and refers to itself), so it
// is taken from the definitions apiextensions-apiserver generates from those
// types: the same source upstream publishes, descriptions and list-type and
// patch-strategy extensions included.
var (
	crdModel     = apiextensionsv1.CustomResourceDefinition{}.OpenAPIModelName()
	crdListModel = apiextensionsv1.CustomResourceDefinitionList{}.OpenAPIModelName()
)

// apiextensionsModels returns, in the library's form (OpenAPI v3, references
// to #/components/schemas/), the CustomResourceDefinition and
// CustomResourceDefinitionList models and every model they refer to,
// transitively, that have does not already hold. The models in have (the
// meta types of builtin.json) are kept, so that every document describes
// ObjectMeta and the like the same way.
//
// It costs a few milliseconds (BenchmarkAPIExtensionsModels): the generated
// code builds the definitions of every type it knows (129, a third of the
// time), and each model used goes through JSON. It is done once, when the
// library is first used.
func apiextensionsModels(have map[string]map[string]any) (map[string]map[string]any, error) {
	defs := generated.GetOpenAPIDefinitions(func(name string) spec.Ref {
		return spec.MustCreateRef(v3RefPrefix + name)
	})
	out := map[string]map[string]any{}
	queue := []string{crdModel, crdListModel}
	for len(queue) > 0 {
		name := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		if _, ok := have[name]; ok {
			continue
		}
		if _, ok := out[name]; ok {
			continue
		}
		s, err := v3Model(defs, name)
		if err != nil {
			return nil, err
		}
		out[name] = s
		queue = collectRefs(s, queue)
	}
	gv := schema.GroupVersion{Group: apiextensionsv1.GroupName, Version: "v1"}
	out[crdModel][extGVK] = gvkExtension(gv.WithKind("CustomResourceDefinition"))
	out[crdListModel][extGVK] = gvkExtension(gv.WithKind("CustomResourceDefinitionList"))
	return out, nil
}

// v3Model converts the generated definition of name to a decoded v3 schema.
func v3Model(defs map[string]common.OpenAPIDefinition, name string) (map[string]any, error) {
	def, ok := defs[name]
	if !ok {
		return nil, fmt.Errorf("no generated OpenAPI definition of %s", name)
	}
	// A type whose v2 and v3 schemas differ carries its v2 schema in an
	// extension; none of the CRD's types does, and the library derives v2
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
