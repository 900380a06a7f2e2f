package apply_test

import (
	"context"
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/crdserver/crdserver/internal/apply"
	"github.com/crdserver/crdserver/internal/conversion"
	"github.com/crdserver/crdserver/internal/crd"
	"github.com/crdserver/crdserver/internal/registry"
)

const twoVersions = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema: &schema
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              image: {type: string}
              replicas: {type: integer}
  - name: v2
    served: true
    storage: false
    schema: *schema
`

func twoVersionDefinition(t *testing.T) *registry.Definition {
	t.Helper()
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(twoVersions), &obj); err != nil {
		t.Fatal(err)
	}
	def, err := crd.FromCRD(obj)
	if err != nil {
		t.Fatal(err)
	}
	return def
}

// managerAt is the field manager the handler builds for a request at
// version, converting as the handler does (None conversion changes
// apiVersion in place).
func managerAt(def *registry.Definition, version string) *apply.Manager {
	return &apply.Manager{
		Types:        apply.Of(def),
		GroupVersion: schema.GroupVersion{Group: def.Group, Version: version},
		Kind:         def.Kind,
		Convert: func(obj map[string]any, apiVersion string) (map[string]any, error) {
			return conversion.ConvertObject(context.Background(), conversion.For(def), obj, apiVersion)
		},
	}
}

func decodeJSON(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// entries returns manager → apiVersion of obj's managedFields.
func entries(obj map[string]any) map[string]string {
	out := map[string]string{}
	md, _ := obj["metadata"].(map[string]any)
	list, _ := md["managedFields"].([]any)
	for _, x := range list {
		e := x.(map[string]any)
		out[e["manager"].(string)+"/"+e["operation"].(string)] = e["apiVersion"].(string)
	}
	return out
}

// atVersion returns a copy of obj read at another version (None conversion).
func atVersion(obj map[string]any, apiVersion string) map[string]any {
	b, _ := json.Marshal(obj)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	out["apiVersion"] = apiVersion
	return out
}

// Writes at a second version compare the object with the entries recorded
// at the first: converting the objects for that comparison must not change
// them, or the comparison sees objects of different types and fails.
func TestWritesAtAnotherVersionKeepEntries(t *testing.T) {
	def := twoVersionDefinition(t)
	created, err := managerAt(def, "v1").Apply(nil, decodeJSON(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"default"},"spec":{"image":"a","replicas":1}}`), "applier", false)
	if err != nil {
		t.Fatalf("apply at v1: %v", err)
	}

	live := atVersion(created, "example.com/v2")
	applied, err := managerAt(def, "v2").Apply(live, decodeJSON(t, `{"apiVersion":"example.com/v2","kind":"Widget","metadata":{"name":"w","namespace":"default"},"spec":{"image":"b"}}`), "applier", false)
	if err != nil {
		t.Fatalf("apply at v2: %v", err)
	}
	if got, want := entries(applied), map[string]string{"applier/Apply": "example.com/v2"}; !equal(got, want) {
		t.Errorf("after apply at v2: entries %v, want %v", got, want)
	}
	if live["apiVersion"] != "example.com/v2" {
		t.Errorf("apply at v2 changed the live object's apiVersion to %v", live["apiVersion"])
	}

	live = atVersion(created, "example.com/v2")
	updated := atVersion(created, "example.com/v2")
	updated["spec"].(map[string]any)["replicas"] = int64(2)
	managerAt(def, "v2").Update(live, updated, "editor")
	if got, want := entries(updated), map[string]string{"applier/Apply": "example.com/v1", "editor/Update": "example.com/v2"}; !equal(got, want) {
		t.Errorf("after update at v2: entries %v, want %v", got, want)
	}
}

func equal(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
