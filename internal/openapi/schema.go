package openapi

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	metav1beta1 "k8s.io/apimachinery/pkg/apis/meta/v1beta1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/registry"
)

// The descriptions upstream's CRD OpenAPI builder gives the metadata of a
// custom resource and of its list: those of PartialObjectMetadata and
// PartialObjectMetadataList (meta.k8s.io/v1beta1).
var (
	descMetadata = metav1beta1.PartialObjectMetadata{}.SwaggerDoc()["metadata"]
	descListMeta = metav1beta1.PartialObjectMetadataList{}.SwaggerDoc()["metadata"]
)

func gvkExtension(gvk schema.GroupVersionKind) []any {
	return []any{map[string]any{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind}}
}

// The descriptions upstream's CRD builder gives apiVersion and kind of an
// embedded resource, in place of TypeMeta's. They are literals in the
// builder, not any type's documentation.
const (
	descEmbeddedAPIVersion = "apiVersion defines the versioned schema of this representation of an object. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"
	descEmbeddedKind       = "kind is a string value representing the type of this object. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"
)

// refProperty is a property whose schema is a model, described: in v3 a
// reference with siblings is an allOf with one $ref, in v2 a plain $ref
// beside the description.
func refProperty(model, description string, v2 bool) map[string]any {
	if v2 {
		return map[string]any{"$ref": v2RefPrefix + model, "description": description}
	}
	return map[string]any{
		"allOf":       []any{map[string]any{"$ref": v3RefPrefix + model}},
		"description": description,
	}
}

// typeMetaProperties sets apiVersion and kind in props to TypeMeta's
// schemas of them, as upstream does for custom resources and their lists.
func typeMetaProperties(props map[string]any) {
	for _, p := range []string{"apiVersion", "kind"} {
		props[p] = maps.Clone(lib().typeMeta[p].(map[string]any))
	}
}

// objectSchema returns the v3 schema of a resource version's objects. For a
// built-in it is the library's model (shared: callers must not modify it).
// For a custom resource it is Version.OpenAPISchema with int-or-string
// fields unfolded and the rest upstream's CRD builder adds (completeObject);
// a version without a schema, or with a non-structural one, is a bare
// object.
func objectSchema(v *registry.Version, gvk schema.GroupVersionKind) (map[string]any, error) {
	if name, ok := lib().byGVK[gvk]; ok {
		return lib().models[name], nil
	}
	s, err := customSchema(v, gvk)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return bareObject(v, gvk), nil
	}
	unfoldIntOrString(s)
	completeObject(s, v, gvk, false)
	return s, nil
}

// objectSchemaV2 returns the v2 schema of a custom resource version's
// objects, made as upstream's CRD builder makes it: Version.OpenAPISchema
// converted to v2 (toV2), then completed. A root that preserves unknown
// fields is a bare object, as upstream publishes it, because kubectl would
// otherwise reject fields the schema does not list.
func objectSchemaV2(v *registry.Version, gvk schema.GroupVersionKind) (map[string]any, error) {
	s, err := customSchema(v, gvk)
	if err != nil {
		return nil, err
	}
	if s == nil || s[extPreserve] == true {
		return bareObject(v, gvk), nil
	}
	s = toV2(s)
	completeObject(s, v, gvk, true)
	return s, nil
}

// customSchema decodes the schema of a custom resource version; it is nil
// when the version has none, or a non-structural one.
func customSchema(v *registry.Version, gvk schema.GroupVersionKind) (map[string]any, error) {
	var s map[string]any
	if len(v.OpenAPISchema) > 0 && !v.NonStructural {
		if err := json.Unmarshal(v.OpenAPISchema, &s); err != nil {
			return nil, fmt.Errorf("decoding the OpenAPI schema of %s: %w", gvk, err)
		}
	}
	return s, nil
}

// bareObject is the model of a custom resource without a schema: kubectl
// must not assume anything about its fields, so not even metadata is
// described.
func bareObject(v *registry.Version, gvk schema.GroupVersionKind) map[string]any {
	s := map[string]any{"type": "object", extGVK: gvkExtension(gvk)}
	addSelectableFields(s, v)
	return s
}

// completeObject adds to s, a custom resource's schema in v3 or v2 form,
// what upstream's CRD builder adds: the embedded resources' properties,
// metadata as a reference to ObjectMeta, apiVersion and kind, the group
// version kind and the selectable fields. It modifies s.
func completeObject(s map[string]any, v *registry.Version, gvk schema.GroupVersionKind, v2 bool) {
	addEmbeddedProperties(s, v2)
	props, _ := s["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
		s["properties"] = props
	}
	props["metadata"] = refProperty(objectMetaModel, descMetadata, v2)
	typeMetaProperties(props)
	s[extGVK] = gvkExtension(gvk)
	addSelectableFields(s, v)
}

// addSelectableFields lists v's selectable fields, in their declared order,
// on the model s, unless there are none.
func addSelectableFields(s map[string]any, v *registry.Version) {
	if len(v.SelectableFields) == 0 {
		return
	}
	fields := make([]any, len(v.SelectableFields))
	for i, f := range v.SelectableFields {
		fields[i] = map[string]any{"fieldPath": f}
	}
	s[extSelectable] = fields
}

// listSchema returns the v3 schema of a custom resource's list kind.
func listSchema(def *registry.Definition, v *registry.Version, listGVK schema.GroupVersionKind, itemModel string) map[string]any {
	if name, ok := lib().byGVK[listGVK]; ok {
		return lib().models[name]
	}
	props := map[string]any{
		"items": map[string]any{
			"type":        "array",
			"description": "List of " + def.Resource + ". More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md",
			"items":       map[string]any{"$ref": v3RefPrefix + itemModel},
		},
		"metadata": refProperty(listMetaModel, descListMeta, false),
	}
	typeMetaProperties(props)
	s := map[string]any{
		"type":        "object",
		"description": listGVK.Kind + " is a list of " + def.Kind,
		"required":    []any{"items"},
		"properties":  props,
		extGVK:        gvkExtension(listGVK),
	}
	addSelectableFields(s, v)
	return s
}

// forEachSubschema calls f on the schemas directly below s that describe
// values (properties, items, additionalProperties), not on value
// validations (allOf, anyOf, oneOf, not) nor on data such as defaults.
func forEachSubschema(s map[string]any, f func(map[string]any)) {
	if props, ok := s["properties"].(map[string]any); ok {
		for _, p := range props {
			if m, ok := p.(map[string]any); ok {
				f(m)
			}
		}
	}
	if m, ok := s["items"].(map[string]any); ok {
		f(m)
	}
	if m, ok := s["additionalProperties"].(map[string]any); ok {
		f(m)
	}
}

// unfoldIntOrString adds the anyOf of integer and string that upstream
// publishes for x-kubernetes-int-or-string fields, unless the schema already
// spells it out. It modifies s.
func unfoldIntOrString(s map[string]any) {
	if s["x-kubernetes-int-or-string"] == true && !isIntOrStringAnyOf(s["anyOf"]) && !firstAllOfIsIntOrString(s["allOf"]) {
		pattern := []any{map[string]any{"type": "integer"}, map[string]any{"type": "string"}}
		if s["anyOf"] == nil {
			s["anyOf"] = pattern
		} else {
			allOf, _ := s["allOf"].([]any)
			s["allOf"] = append([]any{map[string]any{"anyOf": pattern}}, allOf...)
		}
	}
	forEachSubschema(s, unfoldIntOrString)
}

func isIntOrStringAnyOf(v any) bool {
	l, ok := v.([]any)
	if !ok || len(l) != 2 {
		return false
	}
	a, _ := l[0].(map[string]any)
	b, _ := l[1].(map[string]any)
	return len(a) == 1 && a["type"] == "integer" && len(b) == 1 && b["type"] == "string"
}

func firstAllOfIsIntOrString(v any) bool {
	l, ok := v.([]any)
	if !ok || len(l) == 0 {
		return false
	}
	first, _ := l[0].(map[string]any)
	return isIntOrStringAnyOf(first["anyOf"])
}

// addEmbeddedProperties describes apiVersion, kind and metadata of every
// x-kubernetes-embedded-resource object below s and requires apiVersion and
// kind, as upstream's CRD builder does; in v2 not of one that preserves
// unknown fields, for which kubectl would then refuse any other field. It
// modifies s.
func addEmbeddedProperties(s map[string]any, v2 bool) {
	forEachSubschema(s, func(sub map[string]any) { addEmbeddedProperties(sub, v2) })
	if s["x-kubernetes-embedded-resource"] != true || v2 && s[extPreserve] == true {
		return
	}
	props, _ := s["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
		s["properties"] = props
	}
	typeMetaProperties(props)
	for p, desc := range map[string]string{"apiVersion": descEmbeddedAPIVersion, "kind": descEmbeddedKind} {
		props[p].(map[string]any)["description"] = desc
	}
	props["metadata"] = refProperty(objectMetaModel, descMetadata, v2)
	required, _ := s["required"].([]any)
	for _, f := range []string{"kind", "apiVersion"} {
		if !slices.Contains(required, any(f)) {
			required = append(required, f)
		}
	}
	s["required"] = required
}

// oneOfTypes reports whether v, a oneOf, only lists JSON types. Structural
// schemas (CRDs') may not say a type inside a junctor, so only built-in
// models have such a oneOf.
func oneOfTypes(v any) bool {
	list, _ := v.([]any)
	for _, b := range list {
		m, _ := b.(map[string]any)
		if _, ok := m["type"].(string); !ok || len(m) != 1 {
			return false
		}
	}
	return len(list) > 0
}

// toV2 converts a v3 schema to the OpenAPI v2 form, returning a new schema
// and leaving s alone. References move to #/definitions/ and a single-$ref
// allOf (our v3 way of describing a reference) becomes a plain $ref. The rest
// is upstream's lossy conversion of CRD schemas, which keeps kubectl's v2
// validation from rejecting valid objects: allOf, anyOf, oneOf and not are
// dropped; a nullable schema loses type, items and properties (v2 cannot say
// null is allowed) and leaves its parent's required list; a schema that
// preserves unknown fields loses items and properties, and its type when
// that is object; an array without items loses its type. Defaults are
// dropped too, from every model, built-in or custom, as upstream's v2
// documents drop them (handler.PruneDefaults in kube-openapi).
func toV2(s map[string]any) map[string]any {
	out := maps.Clone(s)
	delete(out, "default")
	if ref, ok := singleRef(out["allOf"]); ok {
		out["$ref"] = ref
		delete(out, "allOf")
	}
	if ref, ok := out["$ref"].(string); ok && len(ref) > len(v3RefPrefix) && ref[:len(v3RefPrefix)] == v3RefPrefix {
		out["$ref"] = v2RefPrefix + ref[len(v3RefPrefix):]
	}
	if _, typed := out["type"]; !typed && oneOfTypes(out["oneOf"]) {
		// Upstream's Quantity and IntOrString: v3 lists their JSON
		// types, v2 (which has no oneOf) calls them strings.
		out["type"] = "string"
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf", "not"} {
		delete(out, k)
	}
	if out["nullable"] == true {
		delete(out, "type")
		delete(out, "items")
		delete(out, "properties")
	}
	delete(out, "nullable")
	preserve := out[extPreserve] == true
	if preserve {
		delete(out, "items")
		delete(out, "properties")
	}
	if _, ok := out["items"]; !ok && out["type"] == "array" {
		delete(out, "type")
	}
	if preserve && out["type"] == "object" {
		delete(out, "type")
	}

	// Required fields that may be null cannot be required in v2.
	if required, ok := out["required"].([]any); ok {
		props, _ := out["properties"].(map[string]any)
		if ap, ok := out["additionalProperties"].(map[string]any); ok && ap["nullable"] == true {
			required = nil
		}
		required = slices.DeleteFunc(slices.Clone(required), func(f any) bool {
			name, _ := f.(string)
			p, _ := props[name].(map[string]any)
			return p["nullable"] == true
		})
		if len(required) == 0 {
			delete(out, "required")
		} else {
			out["required"] = required
		}
	}

	if props, ok := out["properties"].(map[string]any); ok {
		converted := make(map[string]any, len(props))
		for k, p := range props {
			if m, ok := p.(map[string]any); ok {
				converted[k] = toV2(m)
			} else {
				converted[k] = p
			}
		}
		out["properties"] = converted
	}
	if m, ok := out["items"].(map[string]any); ok {
		out["items"] = toV2(m)
	}
	if m, ok := out["additionalProperties"].(map[string]any); ok {
		out["additionalProperties"] = toV2(m)
	}
	return out
}

// singleRef reports whether an allOf is exactly one bare reference.
func singleRef(v any) (string, bool) {
	l, ok := v.([]any)
	if !ok || len(l) != 1 {
		return "", false
	}
	m, _ := l[0].(map[string]any)
	ref, ok := m["$ref"].(string)
	if !ok || len(m) != 1 {
		return "", false
	}
	return ref, true
}

// Models returns the v3 schemas describing objects of gvk at version v, as
// the OpenAPI documents publish them: the name of the object's model and
// every model it refers to, transitively, by name. Server-side apply builds
// its types from them, as upstream builds them from the same documents.
// The models are shared: callers must not modify them.
func Models(v *registry.Version, gvk schema.GroupVersionKind) (root string, models map[string]map[string]any, err error) {
	s, err := objectSchema(v, gvk)
	if err != nil {
		return "", nil, err
	}
	root = modelName(gvk)
	models = map[string]map[string]any{root: s}
	queue := collectRefs(s, nil)
	for len(queue) > 0 {
		name := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		if _, ok := models[name]; ok {
			continue
		}
		m, ok := lib().models[name]
		if !ok {
			return "", nil, fmt.Errorf("model %s refers to unknown model %s", root, name)
		}
		models[name] = m
		queue = collectRefs(m, queue)
	}
	return root, models, nil
}
