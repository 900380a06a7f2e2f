package lint

import (
	"strings"
	"testing"
)

func TestPaths(t *testing.T) {
	problems, err := Paths([]string{"testdata"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range problems {
		got = append(got, strings.SplitN(p.String(), "\n", 2)[0])
	}
	want := []string{
		`testdata/bad.yaml:30: spec.validation.openAPIV3Schema.properties[other].x-kubernetes-validations[0].rule: Invalid value: {"Rule":"self == true","Message":"","MessageExpression":"","Reason":null,"FieldPath":"","OptionalOldSelf":null}: compilation failed: ERROR: <input>:1:6: found no matching overload for '_==_' applied to '(int, bool)'`,
		`testdata/bad.yaml:26: spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)`,
		`testdata/bad.yaml:26: spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema`,
		`testdata/bad.yaml:19: spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)`,
		`testdata/v1beta1.yaml:24: spec.validation.openAPIV3Schema.properties[spec].properties[toppings].x-kubernetes-validations[0].rule: Invalid value: {"Rule":"self.size() \u003e oldSelf","Message":"","MessageExpression":"","Reason":null,"FieldPath":"","OptionalOldSelf":null}: compilation failed: ERROR: <input>:1:13: found no matching overload for '_>_' applied to '(int, list(string))'`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestStream(t *testing.T) {
	cases := []struct {
		name, data, want string
	}{
		{"not yaml", "a: b\n c: [", "x.yaml:2: not valid YAML"},
		{"not a crd", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n", ""},
		{"names", "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: a.b.com\nspec:\n  group: b.com\n  scope: Namespaced\n  names: {plural: as, kind: A}\n  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]\n",
			`x.yaml:4: metadata.name: Invalid value: "a.b.com": must be spec.names.plural+"."+spec.group`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, p := range Stream("x.yaml", []byte(tc.data)) {
				got = append(got, p.String())
			}
			if tc.want == "" && len(got) > 0 || tc.want != "" && (len(got) == 0 || !strings.HasPrefix(got[0], tc.want)) {
				t.Errorf("got %q, want a first problem starting %q", got, tc.want)
			}
		})
	}
}
