package crdtest_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/crdserver/crdserver/crdtest"
)

// Replacing a custom resource starts from the watch cache's copy: a
// replacement that changes nothing writes nothing and answers the current
// object, and one that changes a value (the object's length unchanged)
// answers the object written, with its new resourceVersion, as a read
// then returns it.
func TestReplaceAnswersWhatIsStored(t *testing.T) {
	srv := crdtest.Start(t, crdtest.Options{})
	client := dynamic.NewForConfigOrDie(srv.Config)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	gvr := schema.GroupVersionResource{Group: "replace.example.com", Version: "v1", Resource: "dials"}
	crd := crdObject("replace.example.com", "dials", "Dial", map[string]any{
		"name": "v1", "served": true, "storage": true,
		"schema": map[string]any{"openAPIV3Schema": map[string]any{
			"type": "object",
			"properties": map[string]any{"spec": map[string]any{
				"type":       "object",
				"properties": map[string]any{"value": map[string]any{"type": "integer"}},
			}},
		}},
	})
	dials := client.Resource(gvr).Namespace("default")
	createCRD(ctx, t, client, crd, dials)
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
