// Package schema compiles a CustomResourceDefinition version's
// openAPIV3Schema once into an immutable tree and runs the request-time
// pipeline on it: pruning of unknown fields, defaulting, and validation
// (OpenAPI keywords, list types, embedded resources) with upstream's
// messages, field paths and ratcheting. The structural check of a schema
// lives in the structural subpackage.
package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdserver/crdserver/internal/cel"
	"github.com/crdserver/crdserver/internal/registry"
)

// Schema is one CRD version's compiled schema. It is immutable once
// Compile returns and safe for concurrent use.
type Schema struct {
	root *node
	// rules are the x-kubernetes-validations rules, nil when there are none.
	rules *cel.Validator
	// pruneRoot is root marked as an embedded resource: the object keeps
	// apiVersion, kind and metadata whatever the schema says.
	pruneRoot *node
}

var _ registry.Schema = (*Schema)(nil)

// node is one compiled JSONSchemaProps. The structural parts (properties,
// additionalProperties, items and the x-kubernetes extensions) drive
// pruning and defaulting; the value validations and junctors drive
// validation only, as upstream's structural schema splits them.
type node struct {
	// types is the type list as upstream's validator sees it: one entry,
	// or ["integer","string"] for x-kubernetes-int-or-string.
	types     []string
	typeNames string // types joined by "," for messages
	typeMask  uint8
	// format is the format after upstream's stripping of formats that CRDs
	// do not support; formatCheck validates strings when it is known.
	format      string
	formatCheck func(string) bool

	props     map[string]*node
	propOrder []string // sorted, so validation reports in a stable order
	// defaultProps are the properties with a default, in propOrder.
	defaultProps []string
	// addl is additionalProperties' schema; addlSet says additionalProperties
	// was given at all (true without a schema prunes everything below).
	addl        *node
	addlSet     bool
	addlAllowed bool
	items       *node

	preserveUnknown bool
	embedded        bool
	intOrString     bool
	nullable        bool

	def    any
	hasDef bool

	enum       []any
	enumValues []string // upstream's rendering of enum for NotSupported

	pattern    *regexp.Regexp
	patternSrc string
	patternErr error

	maximum, minimum *float64
	exclMax, exclMin bool
	multipleOf       *float64
	rangeType        string // "integer"/"number" when one type, for range checks
	rangeFormat      string

	maxLength, minLength *int64
	maxItems, minItems   *int64
	maxProps, minProps   *int64
	uniqueItems          bool
	required             []string
	allOf, anyOf, oneOf  []*node
	not                  *node
	listType             string
	listMapKeys          []string
	mapType              string
	subtreeHasListType   bool // a set/map list at or below this node
	subtreeHasEmbedded   bool // an embedded resource at or below this node
}

const (
	maskObject uint8 = 1 << iota
	maskArray
	maskString
	maskInteger
	maskNumber
	maskBoolean
)

var typeMasks = map[string]uint8{
	"object": maskObject, "array": maskArray, "string": maskString,
	"integer": maskInteger, "number": maskNumber, "boolean": maskBoolean,
}

// Compile builds the tree for props. A nil props gives a schema that
// prunes everything but apiVersion, kind and metadata, as upstream does
// for a missing schema. Errors come only from malformed default or enum
// JSON; a pattern that does not compile is reported by validation with
// upstream's message, as CRD validation refuses such schemas anyway.
func Compile(props *apiextensionsv1.JSONSchemaProps) (*Schema, error) {
	return Recompile(nil, props)
}

// Recompile is Compile for the next version of a schema prev compiled
// (prev may be nil): CEL rules whose part of the schema did not change
// keep their compiled programs.
func Recompile(prev *Schema, props *apiextensionsv1.JSONSchemaProps) (*Schema, error) {
	n := &node{}
	if props != nil {
		var err error
		if n, err = compileNode(props, "", compileOpts{}); err != nil {
			return nil, err
		}
	}
	pr := *n
	pr.embedded = true
	var prevRules *cel.Validator
	if prev != nil {
		prevRules = prev.rules
	}
	return &Schema{root: n, pruneRoot: &pr, rules: cel.Update(prevRules, props)}, nil
}

// compileOpts are the ways a tree compiled for something other than a
// custom resource differs from Compile's.
type compileOpts struct {
	// untypedIntOrString leaves x-kubernetes-int-or-string nodes without
	// a type, as upstream's validator of defaults sees them (it is built
	// from the structural schema, where such nodes have none), so only
	// their anyOf/allOf constrain a default.
	untypedIntOrString bool
}

func compileNode(p *apiextensionsv1.JSONSchemaProps, path string, o compileOpts) (*node, error) {
	n := &node{
		preserveUnknown: p.XPreserveUnknownFields != nil && *p.XPreserveUnknownFields,
		embedded:        p.XEmbeddedResource,
		intOrString:     p.XIntOrString,
		nullable:        p.Nullable,
		maximum:         p.Maximum,
		minimum:         p.Minimum,
		exclMax:         p.ExclusiveMaximum,
		exclMin:         p.ExclusiveMinimum,
		multipleOf:      p.MultipleOf,
		maxLength:       p.MaxLength,
		minLength:       p.MinLength,
		maxItems:        p.MaxItems,
		minItems:        p.MinItems,
		maxProps:        p.MaxProperties,
		minProps:        p.MinProperties,
		uniqueItems:     p.UniqueItems,
		required:        p.Required,
		listMapKeys:     p.XListMapKeys,
	}
	if p.Type != "" {
		n.types = []string{p.Type}
	}
	if p.XIntOrString && !o.untypedIntOrString {
		n.types = []string{"integer", "string"}
	}
	n.typeNames = strings.Join(n.types, ",")
	for _, t := range n.types {
		n.typeMask |= typeMasks[t]
	}
	if len(n.types) == 1 {
		switch n.types[0] {
		case "integer":
			n.rangeType = "integer"
			if p.Format == "int32" || p.Format == "int64" {
				n.rangeFormat = p.Format
			}
		case "number":
			n.rangeType = "number"
			if p.Format == "float" || p.Format == "double" {
				n.rangeFormat = p.Format
			}
		}
	}
	n.format = supportedFormat(p.Format, n.types)
	if n.format != "" {
		n.formatCheck = formatCheckers[strings.ReplaceAll(n.format, "-", "")]
	}
	if p.XListType != nil {
		n.listType = *p.XListType
	}
	if p.XMapType != nil {
		n.mapType = *p.XMapType
	}
	if p.Pattern != "" {
		n.patternSrc = p.Pattern
		n.pattern, n.patternErr = regexp.Compile(p.Pattern)
	}
	if p.Default != nil {
		v, err := decodeJSON(p.Default.Raw)
		if err != nil {
			return nil, fmt.Errorf("%sdefault: %w", path, err)
		}
		n.def, n.hasDef = v, true
	}
	for i, e := range p.Enum {
		v, err := decodeJSON(e.Raw)
		if err != nil {
			return nil, fmt.Errorf("%senum[%d]: %w", path, i, err)
		}
		n.enum = append(n.enum, v)
		if s, ok := v.(string); ok {
			n.enumValues = append(n.enumValues, s)
		} else {
			b, _ := json.Marshal(v)
			n.enumValues = append(n.enumValues, string(b))
		}
	}
	if len(p.Properties) > 0 {
		n.props = make(map[string]*node, len(p.Properties))
		for k := range p.Properties {
			prop := p.Properties[k]
			c, err := compileNode(&prop, path+"properties["+k+"].", o)
			if err != nil {
				return nil, err
			}
			n.props[k] = c
			n.propOrder = append(n.propOrder, k)
		}
		sort.Strings(n.propOrder)
		for _, k := range n.propOrder {
			if n.props[k].hasDef {
				n.defaultProps = append(n.defaultProps, k)
			}
		}
	}
	if ap := p.AdditionalProperties; ap != nil {
		n.addlSet = true
		n.addlAllowed = ap.Allows || ap.Schema != nil
		if ap.Schema != nil {
			c, err := compileNode(ap.Schema, path+"additionalProperties.", o)
			if err != nil {
				return nil, err
			}
			n.addl = c
		}
	}
	if p.Items != nil && p.Items.Schema != nil {
		c, err := compileNode(p.Items.Schema, path+"items.", o)
		if err != nil {
			return nil, err
		}
		n.items = c
	}
	var err error
	if n.allOf, err = compileList(p.AllOf, path+"allOf", o); err != nil {
		return nil, err
	}
	if n.anyOf, err = compileList(p.AnyOf, path+"anyOf", o); err != nil {
		return nil, err
	}
	if n.oneOf, err = compileList(p.OneOf, path+"oneOf", o); err != nil {
		return nil, err
	}
	if p.Not != nil {
		if n.not, err = compileNode(p.Not, path+"not.", o); err != nil {
			return nil, err
		}
	}
	n.subtreeHasListType = n.listType == "set" || n.listType == "map"
	n.subtreeHasEmbedded = n.embedded
	for _, c := range n.structuralChildren() {
		n.subtreeHasListType = n.subtreeHasListType || c.subtreeHasListType
		n.subtreeHasEmbedded = n.subtreeHasEmbedded || c.subtreeHasEmbedded
	}
	return n, nil
}

func compileList(ps []apiextensionsv1.JSONSchemaProps, path string, o compileOpts) ([]*node, error) {
	var out []*node
	for i := range ps {
		c, err := compileNode(&ps[i], fmt.Sprintf("%s[%d].", path, i), o)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// structuralChildren are the nodes pruning and defaulting descend into.
func (n *node) structuralChildren() []*node {
	var out []*node
	for _, k := range n.propOrder {
		out = append(out, n.props[k])
	}
	if n.addl != nil {
		out = append(out, n.addl)
	}
	if n.items != nil {
		out = append(out, n.items)
	}
	return out
}

// child returns the schema of an object's field as pruning, defaulting
// and ratcheting see it: the property, else additionalProperties' schema.
func (n *node) child(k string) (*node, bool) {
	if c, ok := n.props[k]; ok {
		return c, true
	}
	if n.addl != nil {
		return n.addl, true
	}
	return nil, false
}

// decodeJSON decodes a default or enum value the way request bodies are
// decoded: integers as int64, other numbers as float64.
func decodeJSON(raw []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return convertNumbers(v), nil
}

func convertNumbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i
		}
		f, _ := v.Float64()
		return f
	case map[string]any:
		for k, e := range v {
			v[k] = convertNumbers(e)
		}
	case []any:
		for i, e := range v {
			v[i] = convertNumbers(e)
		}
	}
	return v
}
