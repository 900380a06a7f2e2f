// Package cel compiles and evaluates the x-kubernetes-validations rules of
// a CustomResourceDefinition version's schema: once per version when the
// CRD is served (Compile), and once per CRD write to report compile and
// cost errors at the rule's field path (Check).
//
// Types, values, cost estimation and the function library are the
// Kubernetes CEL library's (k8s.io/apiserver/pkg/cel/...), so a rule
// types, costs and evaluates exactly as it does in kube-apiserver. What is
// ours is the schema adapter, built once per version with every node's
// children ready (upstream rebuilds maps on each access), and the walk
// that evaluates rules, which only descends where rules are.
package cel

import (
	"encoding/json"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apiserver/pkg/cel/common"
)

// node adapts one JSONSchemaProps to the CEL library's common.Schema. It
// is immutable once built and every accessor is a field read, because
// the library calls them on each value it wraps during evaluation.
type node struct {
	p        *apiextensionsv1.JSONSchemaProps
	typ      string
	props    map[string]common.Schema
	items    *node
	addl     *addl
	allOf    []common.Schema
	oneOf    []common.Schema
	anyOf    []common.Schema
	not      *node
	def      any
	enum     []any
	rules    []common.ValidationRule
	listType string
	mapType  string
	// withMeta is the node with apiVersion, kind and metadata.name and
	// generateName declared, as rules see an embedded resource or the
	// root; built with the node for those, nil for others.
	withMeta *node
}

type addl struct {
	s      *node
	allows bool
}

func (a *addl) Schema() common.Schema {
	if a.s == nil {
		return nil
	}
	return a.s
}
func (a *addl) Allows() bool { return a.allows }

type rule struct {
	r *apiextensionsv1.ValidationRule
}

func (r rule) Rule() string              { return r.r.Rule }
func (r rule) Message() string           { return r.r.Message }
func (r rule) MessageExpression() string { return r.r.MessageExpression }
func (r rule) FieldPath() string         { return r.r.FieldPath }

// newNode adapts p and everything below it.
func newNode(p *apiextensionsv1.JSONSchemaProps) *node {
	if p == nil {
		return nil
	}
	n := &node{p: p, typ: p.Type}
	if p.XListType != nil {
		n.listType = *p.XListType
	}
	if p.XMapType != nil {
		n.mapType = *p.XMapType
	}
	if p.Properties != nil {
		n.props = make(map[string]common.Schema, len(p.Properties))
		for k := range p.Properties {
			v := p.Properties[k]
			n.props[k] = newNode(&v)
		}
	}
	if p.Items != nil && p.Items.Schema != nil {
		n.items = newNode(p.Items.Schema)
	}
	if p.AdditionalProperties != nil {
		n.addl = &addl{allows: p.AdditionalProperties.Allows, s: newNode(p.AdditionalProperties.Schema)}
	}
	n.allOf = nodes(p.AllOf)
	n.oneOf = nodes(p.OneOf)
	n.anyOf = nodes(p.AnyOf)
	n.not = newNode(p.Not)
	if p.Default != nil {
		_ = json.Unmarshal(p.Default.Raw, &n.def)
	}
	for _, e := range p.Enum {
		var v any
		if json.Unmarshal(e.Raw, &v) == nil {
			n.enum = append(n.enum, v)
		}
	}
	for i := range p.XValidations {
		n.rules = append(n.rules, rule{&p.XValidations[i]})
	}
	if p.XEmbeddedResource {
		n.withMeta = n.typeAndObjectMeta()
	}
	return n
}

func nodes(ps []apiextensionsv1.JSONSchemaProps) []common.Schema {
	var out []common.Schema
	for i := range ps {
		out = append(out, newNode(&ps[i]))
	}
	return out
}

// typeAndObjectMeta returns n, or a copy of it that declares apiVersion
// and kind as strings and metadata as an object of name (at most 253
// characters, or the schema's own smaller maxLength) and generateName (one
// less), which is all of an object's own identity a rule may read.
func (n *node) typeAndObjectMeta() *node {
	md, _ := n.props["metadata"].(*node)
	if isType(n.props["kind"], "string") && isType(n.props["apiVersion"], "string") &&
		md != nil && md.typ == "object" && md.props != nil &&
		isType(md.props["name"], "string") && isType(md.props["generateName"], "string") {
		return n
	}
	c := *n
	c.props = make(map[string]common.Schema, len(n.props)+3)
	for k, v := range n.props {
		c.props[k] = v
	}
	c.props["kind"] = &node{typ: "string", p: &apiextensionsv1.JSONSchemaProps{Type: "string"}}
	c.props["apiVersion"] = &node{typ: "string", p: &apiextensionsv1.JSONSchemaProps{Type: "string"}}
	var name, generateName *apiextensionsv1.JSONSchemaProps
	if md != nil {
		name = propOf(md, "name")
		generateName = propOf(md, "generateName")
	}
	meta := &node{typ: "object", p: &apiextensionsv1.JSONSchemaProps{Type: "object"}, props: map[string]common.Schema{
		"name":         cappedString(name, int64(validation.DNS1123SubdomainMaxLength)),
		"generateName": cappedString(generateName, int64(validation.DNS1123SubdomainMaxLength-1)),
	}}
	c.props["metadata"] = meta
	c.withMeta = &c
	return &c
}

func propOf(n *node, k string) *apiextensionsv1.JSONSchemaProps {
	if c, ok := n.props[k].(*node); ok {
		return c.p
	}
	return nil
}

func cappedString(p *apiextensionsv1.JSONSchemaProps, max int64) *node {
	if p != nil && p.MaxLength != nil && *p.MaxLength < max {
		max = *p.MaxLength
	}
	return &node{typ: "string", p: &apiextensionsv1.JSONSchemaProps{Type: "string", MaxLength: &max}}
}

func isType(s common.Schema, t string) bool {
	return s != nil && s.Type() == t
}

var _ common.Schema = (*node)(nil)

func (n *node) Type() string   { return n.typ }
func (n *node) Format() string { return n.p.Format }
func (n *node) Items() common.Schema {
	if n.items == nil {
		return nil
	}
	return n.items
}
func (n *node) Properties() map[string]common.Schema { return n.props }
func (n *node) AdditionalProperties() common.SchemaOrBool {
	if n.addl == nil {
		return nil
	}
	return n.addl
}
func (n *node) Default() any                          { return n.def }
func (n *node) Pattern() string                       { return n.p.Pattern }
func (n *node) Minimum() *float64                     { return n.p.Minimum }
func (n *node) IsExclusiveMinimum() bool              { return n.p.ExclusiveMinimum }
func (n *node) Maximum() *float64                     { return n.p.Maximum }
func (n *node) IsExclusiveMaximum() bool              { return n.p.ExclusiveMaximum }
func (n *node) MultipleOf() *float64                  { return n.p.MultipleOf }
func (n *node) MinItems() *int64                      { return n.p.MinItems }
func (n *node) MaxItems() *int64                      { return n.p.MaxItems }
func (n *node) MinLength() *int64                     { return n.p.MinLength }
func (n *node) MaxLength() *int64                     { return n.p.MaxLength }
func (n *node) MinProperties() *int64                 { return n.p.MinProperties }
func (n *node) MaxProperties() *int64                 { return n.p.MaxProperties }
func (n *node) Required() []string                    { return n.p.Required }
func (n *node) Enum() []any                           { return n.enum }
func (n *node) Nullable() bool                        { return n.p.Nullable }
func (n *node) UniqueItems() bool                     { return n.p.UniqueItems }
func (n *node) AllOf() []common.Schema                { return n.allOf }
func (n *node) OneOf() []common.Schema                { return n.oneOf }
func (n *node) AnyOf() []common.Schema                { return n.anyOf }
func (n *node) IsXIntOrString() bool                  { return n.p.XIntOrString }
func (n *node) IsXEmbeddedResource() bool             { return n.p.XEmbeddedResource }
func (n *node) XListType() string                     { return n.listType }
func (n *node) XListMapKeys() []string                { return n.p.XListMapKeys }
func (n *node) XMapType() string                      { return n.mapType }
func (n *node) XValidations() []common.ValidationRule { return n.rules }
func (n *node) WithTypeAndObjectMeta() common.Schema {
	if n.withMeta != nil {
		return n.withMeta
	}
	return n.typeAndObjectMeta()
}
func (n *node) IsXPreserveUnknownFields() bool {
	return n.p.XPreserveUnknownFields != nil && *n.p.XPreserveUnknownFields
}
func (n *node) Not() common.Schema {
	if n.not == nil {
		return nil
	}
	return n.not
}
