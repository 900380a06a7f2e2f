package crd

import (
	"fmt"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdserver/crdserver/internal/registry"
	"github.com/crdserver/crdserver/internal/schema"
)

var _ registry.Warner = Hooks{}

// Warnings are what upstream's CRD strategy warns of once a write is
// valid (its WarningsOnCreate and WarningsOnUpdate): each format its
// schemas use that validation ignores, then each kind of non-scalar item
// a list with x-kubernetes-list-type: set holds. An update warns only of
// what the stored CRD did not have already. A write of the status
// subresource warns of nothing, as upstream's status strategy.
func (Hooks) Warnings(obj, old map[string]any, sub string) []string {
	if sub != "" {
		return nil
	}
	c, err := decode(obj)
	if err != nil {
		return nil
	}
	formats, sets := unrecognizedFormats(&c.Spec), nonScalarSets(&c.Spec)
	if old != nil {
		if o, err := decode(old); err == nil {
			formats = notIn(formats, unrecognizedFormats(&o.Spec))
			sets = notIn(sets, nonScalarSets(&o.Spec))
		}
	}
	out := make([]string, 0, len(formats)+len(sets))
	for _, f := range formats {
		out = append(out, fmt.Sprintf("unrecognized format %q", f))
	}
	for _, t := range sets {
		out = append(out, fmt.Sprintf("x-kubernetes-list-type: set for items of type %q is not supported by server-side apply or CEL validation rules", t))
	}
	return out
}

// unrecognizedFormats lists the formats validation ignores in spec's
// schemas, in the order schemaHas visits them, as often as they occur.
func unrecognizedFormats(spec *apiextensionsv1.CustomResourceDefinitionSpec) []string {
	var out []string
	for _, s := range versionSchemas(spec) {
		schemaHas(s, func(s *apiextensionsv1.JSONSchemaProps) bool {
			if s.Format != "" && !schema.RecognizedFormat(s.Format, s.Type) {
				out = append(out, s.Format)
			}
			return false
		})
	}
	return out
}

// nonScalarSets lists the types ("array", "object") of the items of the
// set lists in spec's schemas, sorted, once each.
func nonScalarSets(spec *apiextensionsv1.CustomResourceDefinitionSpec) []string {
	var out []string
	for _, s := range versionSchemas(spec) {
		schemaHas(s, func(s *apiextensionsv1.JSONSchemaProps) bool {
			if s.XListType == nil || *s.XListType != "set" || s.Items == nil || s.Items.Schema == nil {
				return false
			}
			if t := s.Items.Schema.Type; t == "array" || t == "object" {
				out = append(out, t)
			}
			return false
		})
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// versionSchemas are the openAPIV3Schemas of spec's versions, in order.
// Upstream walks a schema every version shares once (its internal form
// holds it once); the handler sends each warning once, so walking every
// copy says the same.
func versionSchemas(spec *apiextensionsv1.CustomResourceDefinitionSpec) []*apiextensionsv1.JSONSchemaProps {
	var out []*apiextensionsv1.JSONSchemaProps
	for _, v := range spec.Versions {
		if v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
			out = append(out, v.Schema.OpenAPIV3Schema)
		}
	}
	return out
}

// notIn is l without the elements of old, in order.
func notIn(l, old []string) []string {
	return slices.DeleteFunc(l, func(s string) bool { return slices.Contains(old, s) })
}
