package server

import (
	"encoding/json"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/crdserver/crdserver/internal/builtin"
)

// The APF configuration's managedFields, written out, are what the field
// manager records for the same writes: the producer's create of each of
// upstream's objects, and the consumer's first apply of a Dangling
// condition.
func TestAPFFieldsWrittenOut(t *testing.T) {
	c := &apfConfig{fsDef: builtin.FlowSchemas(), plDef: builtin.PriorityLevelConfigurations()}
	c.status = statusFieldManager(c.fsDef, "v1")
	var objs []map[string]any
	var defs []bool // FlowSchema?
	for _, fs := range builtin.BootstrapFlowSchemas() {
		o, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&fs)
		if err != nil {
			t.Fatal(err)
		}
		objs, defs = append(objs, o), append(defs, true)
	}
	for _, pl := range builtin.BootstrapPriorityLevels() {
		o, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&pl)
		if err != nil {
			t.Fatal(err)
		}
		objs, defs = append(objs, o), append(defs, false)
	}
	for i, o := range objs {
		delete(metadata(o), "creationTimestamp")
		def := c.plDef
		if defs[i] {
			def = c.fsDef
		}
		name, _ := metadata(o)["name"].(string)
		written := jsonOf(t, apfCreateFields(o))
		managed := runtime.DeepCopyJSON(o)
		c.fieldManager(def).Update(nil, managed, apfProducer)
		entries, _ := metadata(managed)["managedFields"].([]any)
		if len(entries) != 1 {
			t.Fatalf("%s %s: field manager recorded %v", def.Kind, name, entries)
		}
		if want := jsonOf(t, entries[0].(map[string]any)["fieldsV1"]); written != want {
			t.Errorf("%s %s: written out\n%s\nfield manager\n%s", def.Kind, name, written, want)
		}
		if !defs[i] {
			continue
		}
		// The consumer's apply of Dangling on the created schema.
		status := map[string]any{"conditions": []any{map[string]any{
			"type": "Dangling", "status": "False", "lastTransitionTime": "2026-11-30T12:00:00Z", "reason": "Found", "message": "m",
		}}}
		patch := map[string]any{"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema", "metadata": map[string]any{"name": name}, "status": status}
		applied, err := c.status.Apply(runtime.DeepCopyJSON(managed), patch, apfConsumer, true)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := metadata(applied)["managedFields"].([]any)
		if len(got) != 2 {
			t.Fatalf("FlowSchema %s: after the apply %v", name, got)
		}
		want := apfEntry(apfConsumer, "Apply", "status", apfDanglingFields, time.Time{})
		g := got[0].(map[string]any)
		for _, k := range []string{"apiVersion", "fieldsType", "fieldsV1", "manager", "operation", "subresource"} {
			if jsonOf(t, g[k]) != jsonOf(t, want[k]) {
				t.Errorf("FlowSchema %s: the consumer's entry's %s is %s, written out %s", name, k, jsonOf(t, g[k]), jsonOf(t, want[k]))
			}
		}
		if got[1].(map[string]any)["manager"] != apfProducer {
			t.Errorf("FlowSchema %s: entries in the order %v", name, got)
		}
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
