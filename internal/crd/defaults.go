package crd

import (
	"context"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/cel"
	"github.com/crdserver/crdserver/internal/schema"
)

// checkDefaults checks, as upstream does when a CRD is written, that every
// default in a structural schema is pruned (has no field the schema drops)
// and valid against the schema of its node and the rules at and below it.
// s is the root of a CRD's schema; p is its path.
func checkDefaults(s *apiextensionsv1.JSONSchemaProps, p *field.Path) field.ErrorList {
	return checkDefaultsBelow(s, true, p)
}

// checkDefaultsBelow is checkDefaults for any node; root: s is the
// schema's root, whose values are resources.
func checkDefaultsBelow(s *apiextensionsv1.JSONSchemaProps, root bool, p *field.Path) field.ErrorList {
	if s == nil {
		return nil
	}
	var errs field.ErrorList
	if s.Default != nil {
		errs = append(errs, checkDefault(s, root, p.Child("default"))...)
	}
	if s.Items != nil && s.Items.Schema != nil {
		errs = append(errs, checkDefaultsBelow(s.Items.Schema, false, p.Child("items"))...)
	}
	for k, sub := range s.Properties {
		errs = append(errs, checkDefaultsBelow(&sub, false, p.Child("properties").Key(k))...)
	}
	return errs
}

// defaultKey names the default inside the wrapper object it is checked in.
const defaultKey = "default"

// checkDefault checks that one node's default is pruned, by wrapping node
// and value as the only property of an object, and valid against the node
// (schema.ValidateDefault) and, when it is, against the node's rules
// (cel.ValidateDefault); it reports at the default's path. root: node is
// the schema's root.
func checkDefault(node *apiextensionsv1.JSONSchemaProps, root bool, p *field.Path) field.ErrorList {
	if root && !node.XEmbeddedResource {
		// A default at the root is a whole resource, checked as an
		// embedded one: it needs apiVersion and kind, and keeps metadata.
		c := *node
		c.XEmbeddedResource = true
		node = &c
	}
	var value any
	if err := utiljson.Unmarshal(node.Default.Raw, &value); err != nil {
		return field.ErrorList{field.Invalid(p, string(node.Default.Raw), "must be valid JSON")}
	}
	n := *node
	n.Default = nil
	wrapper := &apiextensionsv1.JSONSchemaProps{
		Type:       "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{defaultKey: n},
	}
	s, err := schema.Compile(wrapper)
	if err != nil {
		return field.ErrorList{field.Invalid(p, string(node.Default.Raw), err.Error())}
	}
	obj := map[string]any{defaultKey: value}
	var errs field.ErrorList
	original := runtime.DeepCopyJSONValue(value)
	if pruned := s.Prune(obj); len(pruned) > 0 {
		errs = append(errs, field.Invalid(p, original, "must not have unknown fields"))
	}
	verrs, err := schema.ValidateDefault(node, p, original)
	if err != nil {
		return append(errs, field.Invalid(p, string(node.Default.Raw), err.Error()))
	}
	if len(verrs) > 0 {
		return append(errs, verrs...)
	}
	return append(errs, cel.ValidateDefault(context.Background(), node, node.XEmbeddedResource, original, p)...)
}
