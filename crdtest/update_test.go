package crdtest_test

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/crdserver/crdserver/crdtest"
)

// Replacing a custom resource starts from the watch cache's copy: a
// replacement that changes nothing writes nothing and answers the current
// object, and one that changes a value (the object's length unchanged)
// answers the object written, with its new resourceVersion, as a read
// then returns it.
func TestReplaceAnswersWhatIsStored(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dials := servedResource(ctx, t, "replace.example.com", "dials", "Dial", false, map[string]any{"spec": map[string]any{
		"type":       "object",
		"properties": map[string]any{"value": map[string]any{"type": "integer"}},
	}})
	cur, err := dials.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "replace.example.com/v1", "kind": "Dial",
		"metadata": map[string]any{"name": "d"},
		"spec":     map[string]any{"value": int64(1)},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the dial: %v", err)
	}
	for i, value := range []int64{1, 2, 2, 3} {
		next := cur.DeepCopy()
		if err := unstructured.SetNestedField(next.Object, value, "spec", "value"); err != nil {
			t.Fatal(err)
		}
		got, err := dials.Update(ctx, next, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("update %d: %v", i, err)
		}
		changed := value != cur.Object["spec"].(map[string]any)["value"]
		if moved := got.GetResourceVersion() != cur.GetResourceVersion(); moved != changed {
			t.Errorf("update %d to %d: resourceVersion %s → %s; want it moved only when the value changed", i, value, cur.GetResourceVersion(), got.GetResourceVersion())
		}
		read, err := dials.Get(ctx, "d", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Object, read.Object) {
			t.Errorf("update %d answered\n%v\nthen read\n%v", i, got.Object, read.Object)
		}
		cur = got
	}
}

// Replacing a custom resource's status keeps the stored managedFields
// encoded, as replacing the resource does: the answer is what a read then
// returns, a status that changes nothing writes nothing, and the entries
// are the creator's (untouched) and the status writer's (its status
// fields, under the subresource).
func TestReplaceStatusAnswersWhatIsStored(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	gauges := servedResource(ctx, t, "status.example.com", "gauges", "Gauge", true, map[string]any{
		"spec":   map[string]any{"type": "object", "properties": map[string]any{"target": map[string]any{"type": "integer"}}},
		"status": map[string]any{"type": "object", "properties": map[string]any{"value": map[string]any{"type": "integer"}}},
	})
	cur, err := gauges.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "status.example.com/v1", "kind": "Gauge",
		"metadata": map[string]any{"name": "g"},
		"spec":     map[string]any{"target": int64(5)},
	}}, metav1.CreateOptions{FieldManager: "creator"})
	if err != nil {
		t.Fatalf("creating the gauge: %v", err)
	}
	for i, value := range []int64{1, 2, 2, 3} {
		next := cur.DeepCopy()
		if err := unstructured.SetNestedField(next.Object, value, "status", "value"); err != nil {
			t.Fatal(err)
		}
		got, err := gauges.UpdateStatus(ctx, next, metav1.UpdateOptions{FieldManager: "meter"})
		if err != nil {
			t.Fatalf("status update %d: %v", i, err)
		}
		old, _, _ := unstructured.NestedInt64(cur.Object, "status", "value")
		changed := i == 0 || value != old
		if moved := got.GetResourceVersion() != cur.GetResourceVersion(); moved != changed {
			t.Errorf("status update %d to %d: resourceVersion %s → %s; want it moved only when the value changed", i, value, cur.GetResourceVersion(), got.GetResourceVersion())
		}
		read, err := gauges.Get(ctx, "g", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Object, read.Object) {
			t.Errorf("status update %d answered\n%v\nthen read\n%v", i, got.Object, read.Object)
		}
		cur = got
	}
	var entries []string
	for _, e := range cur.GetManagedFields() {
		entries = append(entries, e.Manager+"/"+string(e.Operation)+"/"+e.Subresource+": "+string(e.FieldsV1.Raw))
	}
	want := []string{
		`creator/Update/: {"f:spec":{".":{},"f:target":{}}}`,
		`meter/Update/status: {"f:status":{".":{},"f:value":{}}}`,
	}
	if !reflect.DeepEqual(entries, want) {
		t.Errorf("managedFields\n%v\nwant\n%v", entries, want)
	}
	if v, _, _ := unstructured.NestedInt64(cur.Object, "spec", "target"); v != 5 {
		t.Errorf("spec.target = %d after status updates, want 5", v)
	}
}

// A merge patch records the managedFields a replacement with the same
// change records: the same steps, by the same managers, through PUT on
// one object and through merge patches on another, leave the same
// entries, a reset of managedFields and the status subresource included.
func TestMergePatchRecordsAsReplace(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	knobs := servedResource(ctx, t, "merge.example.com", "knobs", "Knob", true, map[string]any{
		"spec": map[string]any{"type": "object", "properties": map[string]any{
			"value": map[string]any{"type": "integer"}, "mode": map[string]any{"type": "string"}, "extra": map[string]any{"type": "string"},
		}},
		"status": map[string]any{"type": "object", "properties": map[string]any{"value": map[string]any{"type": "integer"}}},
	})
	for _, name := range []string{"put", "patch"} {
		if _, err := knobs.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "merge.example.com/v1", "kind": "Knob",
			"metadata": map[string]any{"name": name, "labels": map[string]any{"a": "1"}},
			"spec":     map[string]any{"value": int64(1), "mode": "a"},
		}}, metav1.CreateOptions{FieldManager: "creator"}); err != nil {
			t.Fatalf("creating %s: %v", name, err)
		}
	}
	steps := []struct {
		manager, sub string
		patch        string
		edit         func(o map[string]any)
	}{
		{"patcher", "", `{"spec":{"value":2}}`, func(o map[string]any) { o["spec"].(map[string]any)["value"] = int64(2) }},
		{"labeler", "", `{"metadata":{"labels":{"a":null,"b":"2"}}}`, func(o map[string]any) {
			o["metadata"].(map[string]any)["labels"] = map[string]any{"b": "2"}
		}},
		{"patcher", "", `{"spec":{"extra":"x"}}`, func(o map[string]any) { o["spec"].(map[string]any)["extra"] = "x" }},
		{"meter", "status", `{"status":{"value":5}}`, func(o map[string]any) { o["status"] = map[string]any{"value": int64(5)} }},
		{"clearer", "", `{"metadata":{"managedFields":[]}}`, func(o map[string]any) { o["metadata"].(map[string]any)["managedFields"] = []any{} }},
		{"patcher", "", `{"spec":{"mode":"b"}}`, func(o map[string]any) { o["spec"].(map[string]any)["mode"] = "b" }},
		{"meter", "status", `{"status":{"value":6}}`, func(o map[string]any) { o["status"] = map[string]any{"value": int64(6)} }},
	}
	for i, s := range steps {
		var subs []string
		if s.sub != "" {
			subs = []string{s.sub}
		}
		cur, err := knobs.Get(ctx, "put", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.edit(cur.Object)
		var put *unstructured.Unstructured
		if s.sub == "status" {
			put, err = knobs.UpdateStatus(ctx, cur, metav1.UpdateOptions{FieldManager: s.manager})
		} else {
			put, err = knobs.Update(ctx, cur, metav1.UpdateOptions{FieldManager: s.manager})
		}
		if err != nil {
			t.Fatalf("step %d: replacing: %v", i, err)
		}
		patched, err := knobs.Patch(ctx, "patch", types.MergePatchType, []byte(s.patch), metav1.PatchOptions{FieldManager: s.manager}, subs...)
		if err != nil {
			t.Fatalf("step %d: patching: %v", i, err)
		}
		if got, want := entriesOf(patched), entriesOf(put); !reflect.DeepEqual(got, want) {
			t.Errorf("step %d (%s %s): patched object's managedFields\n%v\nreplaced object's\n%v", i, s.manager, s.patch, got, want)
		}
		if !reflect.DeepEqual(patched.Object["spec"], put.Object["spec"]) || !reflect.DeepEqual(patched.GetLabels(), put.GetLabels()) ||
			!reflect.DeepEqual(patched.Object["status"], put.Object["status"]) {
			t.Errorf("step %d: patched %v, replaced %v", i, patched.Object, put.Object)
		}
		read, err := knobs.Get(ctx, "patch", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(patched.Object, read.Object) {
			t.Errorf("step %d: patch answered\n%v\nthen read\n%v", i, patched.Object, read.Object)
		}
	}
}

// entriesOf lists an object's managedFields without their times, sorted:
// entries are ordered by the second they were written in, then by
// manager, so the two objects' orders differ whenever a second begins
// between their writes.
func entriesOf(o *unstructured.Unstructured) []string {
	var out []string
	for _, e := range o.GetManagedFields() {
		out = append(out, e.Manager+"/"+string(e.Operation)+"/"+e.APIVersion+"/"+e.Subresource+": "+string(e.FieldsV1.Raw))
	}
	slices.Sort(out)
	return out
}

// servedResource starts a server and creates a namespaced CRD of one
// version, v1, whose schema has properties (and a status subresource when
// status is set); it returns the resource in namespace default once
// served.
func servedResource(ctx context.Context, t *testing.T, group, plural, kind string, status bool, properties map[string]any) dynamic.ResourceInterface {
	t.Helper()
	srv := crdtest.Start(t, crdtest.Options{})
	client := dynamic.NewForConfigOrDie(srv.Config)
	version := map[string]any{
		"name": "v1", "served": true, "storage": true,
		"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "properties": properties}},
	}
	if status {
		version["subresources"] = map[string]any{"status": map[string]any{}}
	}
	res := client.Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: plural}).Namespace("default")
	createCRD(ctx, t, client, crdObject(group, plural, kind, version), res)
	return res
}
