package crd

import (
	"encoding/json"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func rawJSON(v any) *apiextensionsv1.JSON {
	b, _ := json.Marshal(v)
	return &apiextensionsv1.JSON{Raw: b}
}

func TestCheckDefaults(t *testing.T) {
	max, one, two, five := 10.0, 1.0, 2.0, 5.0
	two64, yes, set := int64(2), true, "set"
	spec := func(props map[string]apiextensionsv1.JSONSchemaProps) *apiextensionsv1.JSONSchemaProps {
		return &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"spec": {Type: "object", Properties: props},
		}}
	}
	cases := []struct {
		name   string
		schema *apiextensionsv1.JSONSchemaProps
		want   []string // "field: detail" substrings, in order
	}{
		{"valid defaults", spec(map[string]apiextensionsv1.JSONSchemaProps{
			"image":    {Type: "string", Default: rawJSON("busybox")},
			"replicas": {Type: "integer", Maximum: &max, Default: rawJSON(1)},
		}), nil},
		{"default above maximum", spec(map[string]apiextensionsv1.JSONSchemaProps{
			"replicas": {Type: "integer", Maximum: &max, Default: rawJSON(20)},
		}), []string{"openAPIV3Schema.properties[spec].properties[replicas].default: Invalid value: 20:  in body should be less than or equal to 10"}},
		// Upstream validates a default with its node as the validator's
		// root: messages name the value relative to the default, and
		// field paths join that name with a dot.
		{"nested default names fields relative to it", spec(map[string]apiextensionsv1.JSONSchemaProps{
			"a": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"b": {Type: "integer"}},
				Default: rawJSON(map[string]any{"b": "s"})},
		}), []string{`openAPIV3Schema.properties[spec].properties[a].default.b: Invalid value: "string": b in body must be of type integer: "string"`}},
		{"list default items are .[i]", spec(map[string]apiextensionsv1.JSONSchemaProps{
			"a": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "integer", Maximum: &two}},
				Default: rawJSON([]any{1, 5, "x"})},
		}), []string{
			"openAPIV3Schema.properties[spec].properties[a].default.[1]: Invalid value: 5: [1] in body should be less than or equal to 2",
			`openAPIV3Schema.properties[spec].properties[a].default.[2]: Invalid value: "string": [2] in body must be of type integer: "string"`,
		}},
		{"anyOf failing at the default", spec(map[string]apiextensionsv1.JSONSchemaProps{
			"a": {Type: "integer", AnyOf: []apiextensionsv1.JSONSchemaProps{{Minimum: &five}, {Maximum: &one}}, Default: rawJSON(3)},
		}), []string{
			`openAPIV3Schema.properties[spec].properties[a].default: Invalid value: "": "" must validate at least one schema (anyOf)`,
			"openAPIV3Schema.properties[spec].properties[a].default: Invalid value: 3:  in body should be greater than or equal to 5",
		}},
		{"format of a default", spec(map[string]apiextensionsv1.JSONSchemaProps{
			"a": {Type: "string", Format: "date", Default: rawJSON("notadate")},
		}), []string{`openAPIV3Schema.properties[spec].properties[a].default: Invalid value: "notadate":  in body must be of type date: "notadate"`}},
		{"min properties of a default", spec(map[string]apiextensionsv1.JSONSchemaProps{
			"o": {Type: "object", MinProperties: &two64, XPreserveUnknownFields: &yes, Default: rawJSON(map[string]any{"a": 1})},
		}), []string{"openAPIV3Schema.properties[spec].properties[o].default: Invalid value: 1:  in body should have at least 2 properties"}},
		// Upstream checks no list-type uniqueness in defaults, and its
		// validator of defaults gives int-or-string nodes no type.
		{"duplicate set items in a default pass", spec(map[string]apiextensionsv1.JSONSchemaProps{
			"a": {Type: "array", XListType: &set, Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string"}},
				Default: rawJSON([]any{"a", "a"})},
		}), nil},
		{"int-or-string default of another type passes", spec(map[string]apiextensionsv1.JSONSchemaProps{
			"a": {XIntOrString: true, Default: rawJSON(true)},
		}), nil},
		{"int-or-string default is checked by its anyOf", spec(map[string]apiextensionsv1.JSONSchemaProps{
			"a": {XIntOrString: true, AnyOf: []apiextensionsv1.JSONSchemaProps{{Type: "integer"}, {Type: "string"}}, Default: rawJSON(true)},
		}), []string{
			`openAPIV3Schema.properties[spec].properties[a].default: Invalid value: "": "" must validate at least one schema (anyOf)`,
			`openAPIV3Schema.properties[spec].properties[a].default: Invalid value: "boolean":  in body must be of type integer: "boolean"`,
		}},
		{"objects in a list default", spec(map[string]apiextensionsv1.JSONSchemaProps{
			"a": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
				Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"b": {Type: "integer"}}}},
				Default: rawJSON([]any{map[string]any{"b": 1}, map[string]any{"b": "x"}})},
		}), []string{`openAPIV3Schema.properties[spec].properties[a].default.[1].b: Invalid value: "string": [1].b in body must be of type integer: "string"`}},
		{"embedded resource errors come alone", spec(map[string]apiextensionsv1.JSONSchemaProps{
			"e": {Type: "object", XEmbeddedResource: true, XPreserveUnknownFields: &yes,
				Properties: map[string]apiextensionsv1.JSONSchemaProps{"x": {Type: "integer"}},
				Default:    rawJSON(map[string]any{"apiVersion": "v1", "x": "s"})},
		}), []string{"openAPIV3Schema.properties[spec].properties[e].default.kind: Required value"}},
		{"default of the wrong type", spec(map[string]apiextensionsv1.JSONSchemaProps{
			"image": {Type: "string", Default: rawJSON(5)},
		}), []string{"properties[image].default: Invalid value: \"integer\""}},
		{"default with unknown fields", spec(map[string]apiextensionsv1.JSONSchemaProps{
			"config": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"a": {Type: "string"}},
				Default: rawJSON(map[string]any{"a": "x", "b": "y"})},
		}), []string{`properties[config].default: Invalid value: {"a":"x","b":"y"}: must not have unknown fields`}},
		{"defaults inside items", spec(map[string]apiextensionsv1.JSONSchemaProps{
			"ports": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
				Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"protocol": {Type: "string", Enum: []apiextensionsv1.JSON{*rawJSON("TCP")}, Default: rawJSON("UDP")},
				}}}},
		}), []string{"properties[ports].items.properties[protocol].default: Unsupported value: \"UDP\""}},
		// A default must pass the rules of its node and of the nodes
		// below it, with paths and messages as for a custom resource.
		{"default failing its rule", spec(map[string]apiextensionsv1.JSONSchemaProps{
			"a": {Type: "string", Default: rawJSON("abc"), XValidations: rules(apiextensionsv1.ValidationRule{Rule: "self.size() < 2"})},
		}), []string{`openAPIV3Schema.properties[spec].properties[a].default: Invalid value: "abc": failed rule: self.size() < 2`}},
		{"default failing a rule below it", spec(map[string]apiextensionsv1.JSONSchemaProps{
			"a": {Type: "array", Default: rawJSON([]any{1, 5}), Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
				Type: "integer", XValidations: rules(apiextensionsv1.ValidationRule{Rule: "self < 3", MessageExpression: "'too big: ' + string(self)"})}}},
		}), []string{"openAPIV3Schema.properties[spec].properties[a].default[1]: Invalid value: 5: too big: 5"}},
		{"a default's rule that does not compile", spec(map[string]apiextensionsv1.JSONSchemaProps{
			"a": {Type: "string", Default: rawJSON("abc"), XValidations: rules(apiextensionsv1.ValidationRule{Rule: "self.nope"})},
		}), []string{`openAPIV3Schema.properties[spec].properties[a].default: Invalid value: "string": rule compile error: compilation failed: ERROR: <input>:1:5: type 'string' does not support field selection`}},
		// Transition rules hold (oldSelf is the default itself); a rule
		// with optionalOldSelf is run as on a create too.
		{"a default passes its transition rule", spec(map[string]apiextensionsv1.JSONSchemaProps{
			"a": {Type: "string", Default: rawJSON("abc"), XValidations: rules(apiextensionsv1.ValidationRule{Rule: "self == oldSelf"})},
		}), nil},
		{"a default is checked as created", spec(map[string]apiextensionsv1.JSONSchemaProps{
			"a": {Type: "string", Default: rawJSON("abc"), XValidations: rules(apiextensionsv1.ValidationRule{Rule: "oldSelf.hasValue()", OptionalOldSelf: &yes})},
		}), []string{`openAPIV3Schema.properties[spec].properties[a].default: Invalid value: "abc": failed rule: oldSelf.hasValue()`}},
		{"an embedded resource's default sees its metadata", spec(map[string]apiextensionsv1.JSONSchemaProps{
			"e": {Type: "object", XEmbeddedResource: true, XPreserveUnknownFields: &yes,
				Default:      rawJSON(map[string]any{"apiVersion": "v1", "kind": "K", "metadata": map[string]any{"name": "n"}}),
				XValidations: rules(apiextensionsv1.ValidationRule{Rule: "self.metadata.name == 'm'"})},
		}), []string{"openAPIV3Schema.properties[spec].properties[e].default: Invalid value: failed rule: self.metadata.name == 'm'"}},
		// The root's default is a resource, as an embedded one.
		{"a default at the root needs apiVersion and kind", &apiextensionsv1.JSONSchemaProps{
			Type: "object", Default: rawJSON(map[string]any{}),
			XValidations: rules(apiextensionsv1.ValidationRule{Rule: "has(self.spec)"}),
			Properties:   map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "string"}},
		}, []string{"openAPIV3Schema.default.apiVersion: Required value", "openAPIV3Schema.default.kind: Required value"}},
		{"a default at the root passes its rules", &apiextensionsv1.JSONSchemaProps{
			Type: "object", Default: rawJSON(map[string]any{"apiVersion": "v1", "kind": "K", "metadata": map[string]any{"name": "n"}}),
			XValidations: rules(apiextensionsv1.ValidationRule{Rule: "self.metadata.name == 'm'"}),
		}, []string{"openAPIV3Schema.default: Invalid value: failed rule: self.metadata.name == 'm'"}},
		// Defaults inside an embedded resource's apiVersion, kind and
		// metadata must make a valid resource, and are not pruned.
		{"an embedded apiVersion's default", spec(map[string]apiextensionsv1.JSONSchemaProps{
			"e": {Type: "object", XEmbeddedResource: true, XPreserveUnknownFields: &yes, Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"apiVersion": {Type: "string", Default: rawJSON("a/b/c")}}},
		}), []string{`openAPIV3Schema.properties[spec].properties[e].properties[apiVersion].default: Invalid value: "a/b/c": must result in valid metadata: apiVersion: Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c`}},
		{"an embedded label's default", spec(map[string]apiextensionsv1.JSONSchemaProps{
			"e": {Type: "object", XEmbeddedResource: true, XPreserveUnknownFields: &yes, Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"metadata": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"labels": {Type: "object", Default: rawJSON(map[string]any{"bad key!": "x"}),
						AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string"}}}}}}},
		}), []string{`openAPIV3Schema.properties[spec].properties[e].properties[metadata].properties[labels].default: Invalid value: {"bad key!":"x"}: must result in valid metadata: metadata.labels: Invalid value: "bad key!": name part must consist of alphanumeric characters`}},
		{"an embedded metadata's default keeps unknown fields", spec(map[string]apiextensionsv1.JSONSchemaProps{
			"e": {Type: "object", XEmbeddedResource: true, Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"metadata": {Type: "object", Default: rawJSON(map[string]any{"name": "n", "other": 1}),
					Properties: map[string]apiextensionsv1.JSONSchemaProps{"name": {Type: "string"}}}}},
		}), nil},
		{"an embedded finalizer's default", spec(map[string]apiextensionsv1.JSONSchemaProps{
			"e": {Type: "object", XEmbeddedResource: true, Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"metadata": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"finalizers": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string", Default: rawJSON("a/b/c")}}}}}}},
		}), []string{`openAPIV3Schema.properties[spec].properties[e].properties[metadata].properties[finalizers].items.default: Invalid value: "a/b/c": must result in valid metadata: metadata.finalizers: Invalid value: "a/b/c": a valid label key`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			errs := checkDefaults(c.schema, field.NewPath("openAPIV3Schema"))
			if len(errs) != len(c.want) {
				t.Fatalf("got %d errors, want %d: %v", len(errs), len(c.want), errs)
			}
			for i, w := range c.want {
				if !strings.Contains(errs[i].Error(), w) {
					t.Errorf("error %d = %q, want it to contain %q", i, errs[i].Error(), w)
				}
			}
		})
	}
}

func rules(r ...apiextensionsv1.ValidationRule) apiextensionsv1.ValidationRules { return r }
