package crdtest_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/crdserver/crdserver/crdtest"
)

// Field selectors work on the fields a CRD version declares selectable.
func TestSelectableFields(t *testing.T) {
	srv := crdtest.Start(t, crdtest.Options{})
	client := dynamic.NewForConfigOrDie(srv.Config)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	gvr := schema.GroupVersionResource{Group: "select.example.com", Version: "v1", Resource: "shirts"}
	crd := crdObject("select.example.com", "shirts", "Shirt", map[string]any{
		"name": "v1", "served": true, "storage": true,
		"selectableFields": []any{map[string]any{"jsonPath": ".spec.color"}, map[string]any{"jsonPath": ".spec.size"}},
		"schema": map[string]any{"openAPIV3Schema": map[string]any{
			"type": "object",
			"properties": map[string]any{"spec": map[string]any{
				"type": "object",
				"properties": map[string]any{
					"color": map[string]any{"type": "string"},
					"size":  map[string]any{"type": "integer"},
				},
			}},
		}},
	})
	shirts := client.Resource(gvr).Namespace("default")
	createCRD(ctx, t, client, crd, shirts)
	mk := func(name, color string, size int64) {
		t.Helper()
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "select.example.com/v1", "kind": "Shirt",
			"metadata": map[string]any{"name": name},
			"spec":     map[string]any{"color": color, "size": size},
		}}
		if _, err := shirts.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating %s: %v", name, err)
		}
	}
	mk("red-s", "red", 1)
	mk("red-l", "red", 3)
	mk("blue-s", "blue", 1)

	names := func(sel string) []string {
		t.Helper()
		l, err := shirts.List(ctx, metav1.ListOptions{FieldSelector: sel})
		if err != nil {
			t.Fatalf("list with %q: %v", sel, err)
		}
		var out []string
		for _, it := range l.Items {
			out = append(out, it.GetName())
		}
		return out
	}
	for _, c := range []struct {
		sel  string
		want []string
	}{
		{"spec.color=red", []string{"red-l", "red-s"}},
		{"spec.color!=red", []string{"blue-s"}},
		{"spec.color=red,spec.size=1", []string{"red-s"}},
		{"spec.size=3", []string{"red-l"}},
		{"spec.color=green", nil},
	} {
		if got := names(c.sel); !slices.Equal(got, c.want) {
			t.Errorf("fieldSelector %q: got %v, want %v", c.sel, got, c.want)
		}
	}
	// A custom resource's PUT must name the resourceVersion it replaces:
	// without it, another client's write would be silently overwritten.
	cur, err := shirts.Get(ctx, "red-s", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.SetResourceVersion("")
	if _, err := shirts.Update(ctx, cur, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) ||
		!strings.Contains(err.Error(), "metadata.resourceVersion: Invalid value: 0: must be specified for an update") {
		t.Errorf("update without resourceVersion: err = %v, want 422 Invalid", err)
	}

	// A field the version does not declare is refused.
	_, err = shirts.List(ctx, metav1.ListOptions{FieldSelector: "spec.other=x"})
	if !apierrors.IsBadRequest(err) {
		t.Errorf("selector on an undeclared field: err = %v, want BadRequest", err)
	}
}
