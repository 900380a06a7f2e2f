package structural

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestCheckWith: the checks of a structural schema run only on one, and
// their errors come after the root's, before the keywords'.
func TestCheckWith(t *testing.T) {
	extra := func() field.ErrorList { return field.ErrorList{field.Invalid(root.Child("default"), 1, "extra")} }
	for _, c := range []struct {
		name, schema string
		want         []string
	}{
		{"structural", "{type: object, nullable: true, uniqueItems: true}", []string{
			"spec.validation.openAPIV3Schema.nullable: Forbidden: nullable cannot be true at the root",
			"spec.validation.openAPIV3Schema.default: Invalid value: 1: extra",
			"spec.validation.openAPIV3Schema.uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
		}},
		{"not structural", "{type: object, properties: {a: {}}}", []string{
			"spec.validation.openAPIV3Schema.properties[a].type: Required value: must not be empty for specified object fields",
		}},
		{"not convertible", "{type: object, $ref: x}", []string{
			"spec.validation.openAPIV3Schema.$ref: Forbidden: $ref is not supported",
		}},
	} {
		var got []string
		for _, e := range CheckWith(parse(t, c.schema), root, false, Options{}, extra) {
			got = append(got, e.Error())
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}
