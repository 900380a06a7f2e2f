package openapi

import (
	"reflect"
	"testing"
	"time"

	"github.com/crdserver/crdserver/internal/registry"
)

// TestSelectableFields checks that a version's selectable fields are listed
// on its object and list models, in v3 and v2, in declared order, as
// upstream's CRD builder lists them; and that a version without any, or
// another version of the same CRD, lists none.
func TestSelectableFields(t *testing.T) {
	defs := testDefinitions()
	defs[1].Versions[1].SelectableFields = []string{"spec.image", "spec.cronSpec"}
	defs[2].Versions[0].SelectableFields = []string{"spec.color"} // preserves unknown fields at its root
	srv, _, _ := newTestServer(t, defs)
	fields := func(paths ...string) []any {
		var out []any
		for _, p := range paths {
			out = append(out, map[string]any{"fieldPath": p})
		}
		return out
	}
	cronTab := fields("spec.image", "spec.cronSpec")
	widget := fields("spec.color")

	_, body := get(t, srv.URL+"/openapi/v3/apis/stable.example.com/v1", nil)
	v3 := decode(t, body)
	_, body = get(t, srv.URL+"/openapi/v2", nil)
	v2 := decode(t, body)
	_, body = get(t, srv.URL+"/openapi/v3/apis/stable.example.com/v1beta1", nil)
	v1beta1 := decode(t, body)
	for _, tc := range []struct {
		name string
		got  any
		want []any
	}{
		{"v3 CronTab", dig(v3, "components", "schemas", "com.example.stable.v1.CronTab", extSelectable), cronTab},
		{"v3 CronTabList", dig(v3, "components", "schemas", "com.example.stable.v1.CronTabList", extSelectable), cronTab},
		{"v3 Widget", dig(v3, "components", "schemas", "com.example.stable.v1.Widget", extSelectable), widget},
		{"v3 WidgetList", dig(v3, "components", "schemas", "com.example.stable.v1.WidgetList", extSelectable), widget},
		{"v2 CronTab", dig(v2, "definitions", "com.example.stable.v1.CronTab", extSelectable), cronTab},
		{"v2 CronTabList", dig(v2, "definitions", "com.example.stable.v1.CronTabList", extSelectable), cronTab},
		{"v2 Widget (bare object)", dig(v2, "definitions", "com.example.stable.v1.Widget", extSelectable), widget},
		{"v2 WidgetList", dig(v2, "definitions", "com.example.stable.v1.WidgetList", extSelectable), widget},
		{"v3 CronTab v1beta1", dig(v1beta1, "components", "schemas", "com.example.stable.v1beta1.CronTab", extSelectable), nil},
		{"v2 CronTab v1beta1", dig(v2, "definitions", "com.example.stable.v1beta1.CronTab", extSelectable), nil},
	} {
		if tc.want == nil {
			if tc.got != nil {
				t.Errorf("%s: %s = %v, want none", tc.name, extSelectable, tc.got)
			}
			continue
		}
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("%s: %s = %v, want %v", tc.name, extSelectable, tc.got, tc.want)
		}
	}
	if got := dig(v2, "definitions", "com.example.stable.v1.Widget"); !reflect.DeepEqual(sortedKeys(got), []string{"type", extGVK, extSelectable}) {
		t.Errorf("v2 Widget has %v, want only type and the extensions", sortedKeys(got))
	}
}

// TestSelectableFieldsWithoutSchema: a version without a schema still
// lists its selectable fields, as upstream adds them to the bare object.
func TestSelectableFieldsWithoutSchema(t *testing.T) {
	defs := testDefinitions()
	defs[3].Versions[0].SelectableFields = []string{"spec.size"}
	table := registry.NewTable(1, defs)
	s, err := buildState(table, nil, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	doc := decode(t, s.gvs["apis/example.com/v1alpha1"].json)
	want := []any{map[string]any{"fieldPath": "spec.size"}}
	if got := dig(doc, "components", "schemas", "com.example.v1alpha1.Gadget", extSelectable); !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %v, want %v", extSelectable, got, want)
	}
}
