package crd

import (
	"fmt"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestStructuralChecker: Definition refuses non-structural schemas, with
// the causes at the path upstream reports for each CRD shape.
func TestStructuralChecker(t *testing.T) {
	h := Definition().Hooks.(Hooks)
	for _, f := range []string{"crontab.yaml", "crontab-scale.yaml", "crontab-webhook.yaml", "crontab-columns.yaml"} {
		if errs := h.Validate(valid(t, f)); len(errs) > 0 {
			t.Errorf("%s: %s", f, list(errs))
		}
	}

	var nonStructural map[string]any
	if err := yaml.Unmarshal([]byte(`
type: object
properties:
  spec:
    properties:
      a: {type: string}
anyOf:
- properties: {b: {type: string}}
`), &nonStructural); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, fixture string
		want          []string
	}{
		{name: "one version: upstream's internal form", fixture: "crontab.yaml", want: []string{
			"spec.validation.openAPIV3Schema.anyOf[0].properties[b].type: Forbidden: must be empty to be structural",
			"spec.validation.openAPIV3Schema.properties[b]: Required value: because it is defined in spec.validation.openAPIV3Schema.anyOf[0].properties[b]",
			"spec.validation.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields",
		}},
		{name: "versions with different schemas", fixture: "crontab-webhook.yaml", want: []string{
			"spec.versions[1].schema.openAPIV3Schema.anyOf[0].properties[b].type: Forbidden: must be empty to be structural",
			"spec.versions[1].schema.openAPIV3Schema.properties[b]: Required value: because it is defined in spec.versions[1].schema.openAPIV3Schema.anyOf[0].properties[b]",
			"spec.versions[1].schema.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields",
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			obj := valid(t, c.fixture)
			last := len(at(obj, "spec", "versions").([]any)) - 1
			set(obj, deepCopy(nonStructural), "spec", "versions", last, "schema", "openAPIV3Schema")
			var got []string
			for _, e := range h.Validate(obj) {
				got = append(got, e.Error())
			}
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("got\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(c.want, "\n\t"))
			}
		})
	}
}

// TestStructuralCheckerDefaultsOrder: defaults are checked whenever the
// schema is structural, even when keywords are wrong, and their errors
// come where upstream's do: after the root's, before the keywords'.
func TestStructuralCheckerDefaultsOrder(t *testing.T) {
	h := Definition().Hooks.(Hooks)
	var schema map[string]any
	if err := yaml.Unmarshal([]byte(`
type: object
nullable: true
properties:
  metadata:
    type: object
    properties:
      name: {type: string, default: "a/b"}
  spec:
    type: object
    uniqueItems: true
`), &schema); err != nil {
		t.Fatal(err)
	}
	obj := valid(t, "crontab.yaml")
	set(obj, schema, "spec", "versions", 0, "schema", "openAPIV3Schema")
	var got []string
	for _, e := range h.Validate(obj) {
		got = append(got, e.Error())
	}
	want := []string{
		"spec.validation.openAPIV3Schema.nullable: Forbidden: nullable cannot be true at the root",
		`spec.validation.openAPIV3Schema.properties[metadata].properties[name].default: Invalid value: "a/b": must result in valid metadata: metadata.name: Invalid value: "a/b": may not contain '/'`,
		"spec.validation.openAPIV3Schema.properties[metadata].properties[name].default: Forbidden: must not be set in top-level metadata",
		"spec.validation.openAPIV3Schema.properties[spec].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}
