package apply_test

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// A configuration that does not fit the schema is the client's mistake: a
// 400 that names the field, as kubectl shows it.
func TestApplyOfAConfigurationTheSchemaRefuses(t *testing.T) {
	def := twoVersionDefinition(t)
	for _, tc := range []struct{ name, spec, want string }{
		{"a field the schema does not declare", `{"x":1}`,
			"failed to create typed patch object (default/w; example.com/v1, Kind=Widget): .spec.x: field not declared in schema"},
		{"a value of the wrong type", `{"replicas":"many"}`,
			"failed to create typed patch object (default/w; example.com/v1, Kind=Widget): .spec.replicas: expected numeric (int or float), got string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			patch := decodeJSON(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"default"},"spec":`+tc.spec+`}`)
			_, err := managerAt(def, "v1").Apply(nil, patch, "applier", false)
			if !apierrors.IsBadRequest(err) || err.Error() != tc.want {
				t.Errorf("got %v, want a BadRequest %q", err, tc.want)
			}
		})
	}
}
