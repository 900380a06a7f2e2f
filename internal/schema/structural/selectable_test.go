package structural

import (
	"fmt"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const selectableSchema = `
type: object
properties:
  metadata: {type: object}
  spec:
    type: object
    properties:
      color: {type: string, enum: [red, blue]}
      size: {type: integer}
      enabled: {type: boolean}
      ratio: {type: number}
      tags: {type: array, items: {type: string}}
      labels: {type: object, additionalProperties: {type: string}}
      any: {type: object, additionalProperties: true}
      "a.b": {type: string}
`

func TestCheckSelectableFields(t *testing.T) {
	s := parse(t, selectableSchema)
	p := field.NewPath("spec", "versions").Index(0).Child("selectableFields")
	for _, c := range []struct {
		line  string
		paths []string
		allow bool
		want  []string
	}{
		{line: at(), paths: []string{".spec.color", ".spec.size", ".spec.enabled", ".spec.labels.x"}},
		{line: at(), paths: []string{""}, want: []string{"spec.versions[0].selectableFields[0].jsonPath: Required value"}},
		{line: at(), paths: []string{".spec.nope", "spec.color", ".spec['color']", ".spec.any.x.y", ".spec."}, want: []string{
			`spec.versions[0].selectableFields[0].jsonPath: Invalid value: ".spec.nope": is an invalid path: does not refer to a valid field`,
			`spec.versions[0].selectableFields[1].jsonPath: Invalid value: "spec.color": is an invalid path: expected [ or . but got: spec`,
			`spec.versions[0].selectableFields[2].jsonPath: Invalid value: ".spec['color']": is an invalid path: array notation is not allowed`,
			`spec.versions[0].selectableFields[3].jsonPath: Invalid value: ".spec.any.x.y": is an invalid path: does not refer to a valid field`,
			`spec.versions[0].selectableFields[4].jsonPath: Invalid value: ".spec.": is an invalid path: unexpected end of JSON path`,
		}},
		{line: at(), paths: []string{".metadata.name", ".spec.ratio", ".spec.tags", ".spec.any.x"}, want: []string{
			`spec.versions[0].selectableFields[0].jsonPath: Invalid value: ".metadata.name": is an invalid path: does not refer to a valid field`,
			`spec.versions[0].selectableFields[1].jsonPath: Invalid value: ".spec.ratio": must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.`,
			`spec.versions[0].selectableFields[2].jsonPath: Invalid value: ".spec.tags": must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.`,
			`spec.versions[0].selectableFields[3].jsonPath: Invalid value: ".spec.any.x": must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.`,
		}},
		{line: at(), paths: []string{".spec.color", ".spec.color"}, want: []string{
			`spec.versions[0].selectableFields[1].jsonPath: Duplicate value: ".spec.color"`,
		}},
		{line: at(), paths: []string{".spec.labels.a", ".spec.labels.b", ".spec.labels.c", ".spec.labels.d", ".spec.labels.e", ".spec.labels.f", ".spec.labels.g", ".spec.labels.h", ".spec.labels.i"}, want: []string{
			"spec.versions[0].selectableFields: Too many: 9: must have at most 8 items",
		}},
		{line: at(), allow: true, paths: []string{".spec.labels.a", ".spec.labels.b", ".spec.labels.c", ".spec.labels.d", ".spec.labels.e", ".spec.labels.f", ".spec.labels.g", ".spec.labels.h", ".spec.labels.i"}},
	} {
		var fields []apiextensionsv1.SelectableField
		for _, jp := range c.paths {
			fields = append(fields, apiextensionsv1.SelectableField{JSONPath: jp})
		}
		var got []string
		for _, e := range CheckSelectableFields(fields, s, p, c.allow) {
			got = append(got, e.Error())
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: got\n\t%s\nwant\n\t%s", c.line, strings.Join(got, "\n\t"), strings.Join(c.want, "\n\t"))
		}
	}
}

func TestFieldPathArrayNotation(t *testing.T) {
	s := parse(t, selectableSchema)
	for _, c := range []struct{ in, path, err string }{
		{in: ".spec['a.b']", path: "spec.a.b"},
		{in: `.spec['a\.b']`, err: `invalid string literal: invalid escape char \.`},
		{in: ".spec['color'", err: "unexpected end of JSON path"},
		{in: ".spec['color'.", err: "expected ] but got ."},
		{in: ".spec[color]", err: "expected single quoted string but got color"},
		{in: ".spec.labels['x y']", path: "spec.labels[x y]"},
	} {
		p, _, err := FieldPath(c.in, s, true)
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("%s: err %v, want %s", c.in, err, c.err)
			}
			continue
		}
		if err != nil || p.String() != c.path {
			t.Errorf("%s: %v %v, want %s", c.in, p, err, c.path)
		}
	}
}

func TestTooManySelectableFieldsAllowed(t *testing.T) {
	var nine []apiextensionsv1.SelectableField
	for i := 0; i < 9; i++ {
		nine = append(nine, apiextensionsv1.SelectableField{JSONPath: fmt.Sprintf(".spec.f%d", i)})
	}
	old := &apiextensionsv1.CustomResourceDefinitionSpec{Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
		{Name: "v1", SelectableFields: nine}, {Name: "v2", SelectableFields: nine},
	}}
	for _, c := range []struct {
		fields  []apiextensionsv1.SelectableField
		version string
		old     *apiextensionsv1.CustomResourceDefinitionSpec
		want    bool
	}{
		{nine, "v1", old, true},
		{nine, "", old, true},
		{nine[:8], "v1", old, false},
		{append(nine[:8:8], apiextensionsv1.SelectableField{JSONPath: ".x"}), "v1", old, false},
		{nine, "v3", old, false},
		{nine, "v1", nil, false},
	} {
		if got := TooManySelectableFieldsAllowed(c.fields, c.version, c.old); got != c.want {
			t.Errorf("%d fields, version %q: got %v, want %v", len(c.fields), c.version, got, c.want)
		}
	}
}
