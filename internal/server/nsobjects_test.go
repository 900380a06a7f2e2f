package server

import (
	"reflect"
	"testing"
	"time"

	"github.com/crdserver/crdserver/internal/builtin"
)

// The managedFields a new kube-root-ca.crt is written with are those the
// field manager records for its create, but for the time.
func TestRootCAConfigMapFields(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	written := builtin.NewRootCAConfigMap("ns", "CA", now)
	recorded := builtin.NewRootCAConfigMap("ns", "CA", now)
	delete(recorded["metadata"].(map[string]any), "managedFields")
	configMapFields().Update(nil, recorded, builtin.ControllerManager)
	got, want := written["metadata"].(map[string]any)["managedFields"], recorded["metadata"].(map[string]any)["managedFields"]
	for _, entries := range []any{got, want} { // times are the clocks'
		for _, e := range entries.([]any) {
			delete(e.(map[string]any), "time")
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("written with\n%v\nthe field manager records\n%v", got, want)
	}
}
