package handler

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/crdserver/crdserver/internal/registry"
)

// decodedFields has a FieldComputer computing nothing: addSelectableFields
// then decodes the object, as it did for every resource before the scan.
type decodedFields struct{}

func (decodedFields) ComputedFields(map[string]any) map[string]string { return nil }

// The selectable fields read by scanning the item are those decoding it
// gives, for every kind of value; numbers other than plain integers are
// left to decoding.
func TestSelectableFieldsScanned(t *testing.T) {
	selectable := []string{"spec.s", "spec.n", "spec.b", "spec.x", "spec.o", "spec.missing", "status.phase", "kind"}
	for _, tc := range []struct {
		name, obj string
		scanned   bool
	}{
		{"strings", `{"kind":"W","spec":{"s":"a\u00e9\"b","n":"7"},"status":{"phase":"Ready"}}`, true},
		{"integers and booleans", `{"kind":"W","spec":{"s":"","n":-42,"b":true,"x":false},"status":{}}`, true},
		{"zero and large", `{"kind":"W","spec":{"n":0,"x":9223372036854775807}}`, true},
		{"null, objects, lists", `{"kind":"W","spec":{"s":null,"o":{"a":1},"x":[1]},"status":"up"}`, true},
		{"absent", `{"kind":"W"}`, true},
		{"a float", `{"kind":"W","spec":{"n":1.5}}`, false},
		// Not in the stored form: the item holds them encoded again, as 1.
		{"a whole float", `{"kind":"W","spec":{"n":1.0}}`, true},
		{"beyond int64", `{"kind":"W","spec":{"n":9223372036854775808}}`, false},
		{"an exponent", `{"kind":"W","spec":{"n":1e3}}`, true},
		{"a small float", `{"kind":"W","spec":{"n":-2.5e-3}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			item := func(hooks any) *registry.Definition {
				return &registry.Definition{Group: "example.com", Kind: "W", Hooks: hooks,
					Versions: []registry.Version{{Name: "v1", SelectableFields: selectable}}}
			}
			decoded, scanned := item(decodedFields{}), item(nil)
			decode := func(d *registry.Definition) fields.Set {
				it, err := ItemDecoder(func() *registry.Definition { return d })("/registry/example.com/ws/ns/w", []byte(tc.obj), 5)
				if err != nil {
					t.Fatal(err)
				}
				return it.Fields
			}
			want, got := decode(decoded), decode(scanned)
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("fields scanned (+) and decoded (-):\n%s", d)
			}
			it, err := ItemDecoder(func() *registry.Definition { return nil })("/registry/example.com/ws/ns/w", []byte(tc.obj), 5)
			if err != nil {
				t.Fatal(err)
			}
			if ok := scanSelectableFields(it, selectable); ok != tc.scanned {
				t.Errorf("scanned: %v, want %v", ok, tc.scanned)
			}
		})
	}
}
