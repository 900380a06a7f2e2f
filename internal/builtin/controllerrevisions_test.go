package builtin

import (
	"reflect"
	"testing"

	"github.com/crdserver/crdserver/internal/registry"
)

func TestControllerRevisionValidation(t *testing.T) {
	for _, tc := range []struct {
		name, fields string
		want         string // "" = valid
	}{
		{line(), `data: {spec: {}}, revision: 1`, ""},
		{line(), `data: {}`, ""},
		{line(), `data: {}, revision: -1`, "revision: Invalid value: -1: must be greater than or equal to 0"},
		{line(), `revision: 1`, "data: Required value: data is mandatory"},
		{line(), `data: null`, "data: Required value: data is mandatory"},
		{line(), `data: [1]`, "data: Required value: data must be a valid JSON object"},
		{line(), `data: "x"`, "data: Required value: data must be a valid JSON object"},
	} {
		obj := mergeTop(decodeYAML(t, "apiVersion: apps/v1\nkind: ControllerRevision\nmetadata: {name: r, namespace: default}"), decodeYAML(t, "{"+tc.fields+"}"))
		hooks := ControllerRevisions().Hooks
		hooks.(registry.CreatePreparer).PrepareForCreate(obj)
		checkErrors(t, tc.name, hooks.(registry.Validator).Validate(obj).ToAggregate(), tc.want)
	}
}

// mergeTop is a with b's top-level fields.
func mergeTop(a, b map[string]any) map[string]any {
	for k, v := range b {
		a[k] = v
	}
	return a
}

// An update may change the revision, not the data.
func TestControllerRevisionUpdate(t *testing.T) {
	const doc = "apiVersion: apps/v1\nkind: ControllerRevision\nmetadata: {name: r, namespace: default}\ndata: {spec: {a: 1}}\nrevision: 1\n"
	h := ControllerRevisions().Hooks
	old := decodeYAML(t, doc)
	h.(registry.CreatePreparer).PrepareForCreate(old)
	obj := decodeYAML(t, doc)
	obj["revision"] = int64(2)
	if errs := h.(registry.Validator).ValidateUpdate(obj, old); len(errs) != 0 {
		t.Errorf("revision changed: %v, want no errors", errs)
	}
	obj["data"] = map[string]any{"spec": map[string]any{"a": int64(2)}}
	errs := h.(registry.Validator).ValidateUpdate(obj, old)
	if len(errs) != 1 || errs[0].Field != "data" || errs[0].Detail != "field is immutable" {
		t.Errorf("data changed: %v, want data: field is immutable", errs)
	}
}

func TestControllerRevisionTable(t *testing.T) {
	h := ControllerRevisions().Hooks.(registry.TablePrinter)
	var names []string
	for _, c := range h.TableColumns() {
		names = append(names, c.Name)
	}
	if want := []string{"Name", "Controller", "Revision", "Age"}; !reflect.DeepEqual(names, want) {
		t.Errorf("columns %v, want %v", names, want)
	}
	for _, tc := range []struct {
		name, owners, want string
	}{
		{line(), `[{apiVersion: apps/v1, kind: StatefulSet, name: db, uid: u1, controller: true}]`, "statefulset.apps/db"},
		{line(), `[{apiVersion: v1, kind: ConfigMap, name: cfg, uid: u1, controller: true}]`, "configmap/cfg"},
		{line(), `[{apiVersion: apps/v1, kind: DaemonSet, name: ds, uid: u1}]`, "<none>"},
		{line(), `[]`, "<none>"},
	} {
		obj := decodeYAML(t, "apiVersion: apps/v1\nkind: ControllerRevision\nmetadata: {name: r, namespace: default, ownerReferences: "+tc.owners+"}\ndata: {}\nrevision: 4\n")
		row := h.TableRow(obj)
		if row[0] != "r" || row[1] != tc.want || row[2] != int64(4) {
			t.Errorf("%s: row %#v, want controller %q, revision 4", tc.name, row, tc.want)
		}
	}
}
