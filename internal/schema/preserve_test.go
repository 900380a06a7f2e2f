package schema

import (
	"reflect"
	"testing"
)

// TestPreservingUnknownFields: a CRD with spec.preserveUnknownFields true
// (seed 000's legacy behaviour) keeps every field of its objects, even
// below the properties its schema specifies; only metadata is trimmed to
// ObjectMeta's fields. Validation is the schema's.
func TestPreservingUnknownFields(t *testing.T) {
	s := mustCompile(t, `
type: object
properties:
  spec:
    type: object
    properties:
      shell: {type: string, minLength: 1}
`).PreservingUnknownFields()
	o := obj(t, `
apiVersion: operations/v1
kind: MaintenanceNightlyJob
metadata: {name: nightly, bogus: x}
spec: {shell: "true", privileged: true}
extra: {a: 1}
`)
	pruned := s.Prune(o)
	if !reflect.DeepEqual(pruned, []string{"metadata.bogus"}) {
		t.Errorf("pruned %v, want only metadata.bogus", pruned)
	}
	want := obj(t, `
apiVersion: operations/v1
kind: MaintenanceNightlyJob
metadata: {name: nightly}
spec: {shell: "true", privileged: true}
extra: {a: 1}
`)
	if !reflect.DeepEqual(o, want) {
		t.Errorf("object = %v, want %v", o, want)
	}
	if errs := s.Validate(obj(t, `{spec: {shell: ""}}`)); len(errs) != 1 {
		t.Errorf("validation errors = %v, want the minLength one", errs)
	}
}
