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
	max := 10.0
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
		}), []string{"openAPIV3Schema.properties[spec].properties[replicas].default: Invalid value: 20: openAPIV3Schema.properties[spec].properties[replicas].default in body should be less than or equal to 10"}},
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
