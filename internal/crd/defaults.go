package crd

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/schema"
)

// checkDefaults checks, as upstream does when a CRD is written, that every
// default in a structural schema is pruned (has no field the schema drops)
// and valid against the schema of its node. p is the schema's path.
func checkDefaults(s *apiextensionsv1.JSONSchemaProps, p *field.Path) field.ErrorList {
	if s == nil {
		return nil
	}
	var errs field.ErrorList
	if s.Default != nil {
		errs = append(errs, checkDefault(s, p.Child("default"))...)
	}
	if s.Items != nil && s.Items.Schema != nil {
		errs = append(errs, checkDefaults(s.Items.Schema, p.Child("items"))...)
	}
	for k, sub := range s.Properties {
		errs = append(errs, checkDefaults(&sub, p.Child("properties").Key(k))...)
	}
	return errs
}

// defaultKey names the default inside the wrapper object it is checked in.
const defaultKey = "default"

// checkDefault checks that one node's default is pruned, by wrapping node
// and value as the only property of an object, and valid against the node
// (schema.ValidateDefault), and reports at the default's path.
func checkDefault(node *apiextensionsv1.JSONSchemaProps, p *field.Path) field.ErrorList {
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
	errs = append(errs, verrs...)
	return errs
}
