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
// and valid against the schema of its node and the rules at and below it;
// a default inside the apiVersion, kind or metadata of a resource must
// make them valid instead of being pruned. s is the root of a CRD's
// schema; p is its path.
func checkDefaults(s *apiextensionsv1.JSONSchemaProps, p *field.Path) field.ErrorList {
	return checkDefaultsBelow(s, true, nil, p)
}

// metaStep is one step from a resource down into its apiVersion, kind or
// metadata: a property, or a list's item.
type metaStep struct {
	key  string
	item bool
}

// checkDefaultsBelow is checkDefaults for any node. root: s is the
// schema's root, whose values are resources; meta: the steps to s from
// the resource whose apiVersion, kind or metadata holds it (nil
// elsewhere).
func checkDefaultsBelow(s *apiextensionsv1.JSONSchemaProps, root bool, meta []metaStep, p *field.Path) field.ErrorList {
	if s == nil {
		return nil
	}
	resource := root || s.XEmbeddedResource
	var errs field.ErrorList
	switch {
	case s.Default == nil:
	case meta != nil:
		errs = append(errs, checkMetaDefault(s, meta, p.Child("default"))...)
	default:
		errs = append(errs, checkDefault(s, root, p.Child("default"))...)
	}
	below := func(st metaStep) []metaStep {
		switch {
		case resource && (st.key == "apiVersion" || st.key == "kind" || st.key == "metadata"):
			return []metaStep{st}
		case resource || meta == nil:
			return nil
		}
		return append(meta[:len(meta):len(meta)], st)
	}
	if s.Items != nil && s.Items.Schema != nil {
		errs = append(errs, checkDefaultsBelow(s.Items.Schema, false, below(metaStep{item: true}), p.Child("items"))...)
	}
	for k, sub := range s.Properties {
		errs = append(errs, checkDefaultsBelow(&sub, false, below(metaStep{key: k}), p.Child("properties").Key(k))...)
	}
	return errs
}

// checkMetaDefault checks a default inside the apiVersion, kind or
// metadata of a resource, meta being the steps to it: placed in an
// otherwise empty resource of its own (apiVersion validation/v1, kind
// Validation), it must make their values valid, else it is refused for
// that alone; then it must be valid against its node and the node's
// rules. Such a default is not checked for pruning.
func checkMetaDefault(node *apiextensionsv1.JSONSchemaProps, meta []metaStep, p *field.Path) field.ErrorList {
	var value any
	if err := utiljson.Unmarshal(node.Default.Raw, &value); err != nil {
		return field.ErrorList{field.Invalid(p, string(node.Default.Raw), "must be valid JSON")}
	}
	around := runtime.DeepCopyJSONValue(value)
	for i := len(meta) - 1; i >= 0; i-- {
		if meta[i].item {
			around = []any{around}
		} else {
			around = map[string]any{meta[i].key: around}
		}
	}
	obj := around.(map[string]any)
	if _, ok := obj["apiVersion"]; !ok {
		obj["apiVersion"] = "validation/v1"
	}
	if _, ok := obj["kind"]; !ok {
		obj["kind"] = "Validation"
	}
	if errs := schema.ValidateResourceMeta(nil, obj); len(errs) > 0 {
		return field.ErrorList{field.Invalid(p, value, "must result in valid metadata: "+errs.ToAggregate().Error())}
	}
	return validDefault(node, value, p)
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
	return append(errs, validDefault(node, original, p)...)
}

// validDefault checks value, the default of node, against node
// (schema.ValidateDefault) and, when it is valid there, against the rules
// at and below node (cel.ValidateDefault). p is the default's path.
func validDefault(node *apiextensionsv1.JSONSchemaProps, value any, p *field.Path) field.ErrorList {
	errs, err := schema.ValidateDefault(node, p, value)
	if err != nil {
		return field.ErrorList{field.Invalid(p, string(node.Default.Raw), err.Error())}
	}
	if len(errs) > 0 {
		return errs
	}
	return cel.ValidateDefault(context.Background(), node, node.XEmbeddedResource, value, p)
}
