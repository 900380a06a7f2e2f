package apply_test

import (
	"testing"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/crdserver/crdserver/internal/apply"
)

// An existing object without managedFields (a client sent
// `managedFields: []`) is not tracked again by updates, as upstream's
// field manager skips them, until an apply.
func TestUpdatesOfAnObjectWithoutManagedFieldsRecordNothing(t *testing.T) {
	def := twoVersionDefinition(t)
	created := decodeJSON(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"default","uid":"1"},"spec":{"image":"a"}}`)
	managerAt(def, "v1").Update(nil, created, "creator")
	if got := entries(created); len(got) != 1 {
		t.Fatalf("a create records its manager: entries %v", got)
	}

	for _, tc := range []struct {
		name          string
		managedFields string // what the client sends; "" sends none
	}{
		{"the client clears them", `[]`},
		{"the client clears them with one empty entry", `[{}]`},
		{"the live object has none", ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			live := atVersion(created, "example.com/v1")
			if tc.managedFields == "" {
				delete(live["metadata"].(map[string]any), "managedFields")
			}
			obj := atVersion(live, "example.com/v1")
			if tc.managedFields != "" {
				obj["metadata"].(map[string]any)["managedFields"] = decodeJSON(t, `{"l":`+tc.managedFields+`}`)["l"]
			}
			obj["spec"].(map[string]any)["image"] = "b"
			managerAt(def, "v1").Update(live, obj, "editor")
			if got := entries(obj); len(got) != 0 {
				t.Errorf("entries %v, want none", got)
			}
		})
	}
}

// A scale write gives the replicas to its manager only when an entry owned
// them: upstream's scale handler shows its field manager only those
// entries, and with none it tracks nothing.
func TestScaleWhenNobodyOwnsReplicas(t *testing.T) {
	paths := map[string]fieldpath.Path{
		"example.com/v1": apply.ReplicasPath(".spec.replicas"),
		"example.com/v2": apply.ReplicasPath(".spec.replicas"),
	}
	for _, tc := range []struct {
		name, fields string
		want         map[string]string
	}{
		{"an entry owns the replicas", `{"f:spec":{"f:image":{},"f:replicas":{}}}`,
			map[string]string{"creator/Update": "example.com/v1", "scaler/Update": "example.com/v2"}},
		{"no entry owns the replicas", `{"f:spec":{"f:image":{}}}`,
			map[string]string{"creator/Update": "example.com/v1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := decodeJSON(t, `{"apiVersion":"example.com/v2","kind":"Widget","metadata":{"name":"w","managedFields":[
				{"manager":"creator","operation":"Update","apiVersion":"example.com/v1","fieldsType":"FieldsV1","fieldsV1":`+tc.fields+`}]},
				"spec":{"image":"a","replicas":3}}`)
			apply.ScaleUpdate(obj, paths, "example.com/v2", "scaler", true)
			if got := entries(obj); !equal(got, tc.want) {
				t.Errorf("entries %v, want %v", got, tc.want)
			}
		})
	}
}

// An apply to an object nobody manages first gives its fields to an Update
// manager "before-first-apply", as upstream does: the apply conflicts
// where it changes them, and takes them over with force.
func TestApplyToAnObjectNobodyManages(t *testing.T) {
	def := twoVersionDefinition(t)
	live := decodeJSON(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"default","uid":"1"},"spec":{"image":"a","replicas":1}}`)
	patch := `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"default"},"spec":{"image":"b"}}`

	_, err := managerAt(def, "v1").Apply(live, decodeJSON(t, patch), "applier", false)
	const want = `Apply failed with 1 conflict: conflict with "before-first-apply" using example.com/v1: .spec.image`
	if err == nil || err.Error() != want {
		t.Fatalf("apply: got error %v, want %q", err, want)
	}

	obj, err := managerAt(def, "v1").Apply(live, decodeJSON(t, patch), "applier", true)
	if err != nil {
		t.Fatalf("forced apply: %v", err)
	}
	if got, want := entries(obj), map[string]string{"applier/Apply": "example.com/v1", "before-first-apply/Update": "example.com/v1"}; !equal(got, want) {
		t.Errorf("entries %v, want %v", got, want)
	}
	if _, ok := live["metadata"].(map[string]any)["managedFields"]; ok {
		t.Errorf("the apply changed the live object's metadata")
	}
}
