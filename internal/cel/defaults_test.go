package cel

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestValidateDefault(t *testing.T) {
	cases := []struct {
		name     string
		schema   string
		resource bool
		value    any
		want     []string
	}{
		{named("scalar failing its rule"), `
type: string
x-kubernetes-validations: [{rule: "self.size() < 2"}]`, false, "abc",
			[]string{`default: Invalid value: "abc": failed rule: self.size() < 2`}},
		{named("a rule below the default"), `
type: object
properties:
  a: {type: integer, x-kubernetes-validations: [{rule: "self < 3", message: small}]}`, false, map[string]any{"a": int64(5)},
			[]string{"default.a: Invalid value: 5: small"}},
		{named("transition rules hold"), `
type: string
x-kubernetes-validations: [{rule: "self == oldSelf"}]`, false, "abc", nil},
		{named("checked as created when the first pass holds"), `
type: string
x-kubernetes-validations: [{rule: "oldSelf.hasValue()", optionalOldSelf: true}]`, false, "abc",
			[]string{`default: Invalid value: "abc": failed rule: oldSelf.hasValue()`}},
		{named("a resource's rules read its metadata"), `
type: object
x-kubernetes-preserve-unknown-fields: true
x-kubernetes-validations: [{rule: "self.metadata.name == 'n'"}]`, true,
			map[string]any{"apiVersion": "v1", "kind": "K", "metadata": map[string]any{"name": "n"}}, nil},
		{named("no rules"), `type: string`, false, "abc", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			errs := ValidateDefault(context.Background(), props(t, c.schema), c.resource, c.value, field.NewPath("default"))
			if len(errs) != len(c.want) {
				t.Fatalf("got %v, want %q", errs, c.want)
			}
			for i, w := range c.want {
				if errs[i].Error() != w {
					t.Errorf("error %d = %q, want %q", i, errs[i].Error(), w)
				}
			}
		})
	}
}
