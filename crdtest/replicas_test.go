package crdtest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/crdserver/crdserver/crdtest"
	"github.com/crdserver/crdserver/internal/storage/etcdtest"
)

var (
	crdGVR     = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	widgetsGVR = schema.GroupVersionResource{Group: "replicas.example.com", Version: "v1", Resource: "widgets"}
)

// crdObject is a namespaced CRD of group with one version; the singular
// name is the lower-case kind.
func crdObject(group, plural, kind string, version map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": plural + "." + group},
		"spec": map[string]any{
			"group":    group,
			"scope":    "Namespaced",
			"names":    map[string]any{"plural": plural, "singular": strings.ToLower(kind), "kind": kind},
			"versions": []any{version},
		},
	}}
}

// Two replicas sharing one external etcd converge on the same routes from
// the CRD watch: a CRD created through one is served by the other, and an
// object written through either is read through both.
func TestReplicasShareEtcd(t *testing.T) {
	endpoints := etcdtest.StartExternal(t)
	a := crdtest.Start(t, crdtest.Options{EtcdServers: endpoints})
	b := crdtest.Start(t, crdtest.Options{EtcdServers: endpoints})
	ca, cb := dynamic.NewForConfigOrDie(a.Config), dynamic.NewForConfigOrDie(b.Config)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	crd := crdObject("replicas.example.com", "widgets", "Widget", map[string]any{
		"name": "v1", "served": true, "storage": true,
		"schema": map[string]any{"openAPIV3Schema": map[string]any{
			"type": "object", "x-kubernetes-preserve-unknown-fields": true,
		}},
	})
	if _, err := ca.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the CRD through replica A: %v", err)
	}
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "replicas.example.com/v1",
		"kind":       "Widget",
		"metadata":   map[string]any{"name": "w1"},
		"spec":       map[string]any{"size": int64(3)},
	}}
	// Each replica serves the new resource once its own CRD watch has seen
	// it; neither waits for the other, so the test waits for both.
	for name, c := range map[string]dynamic.Interface{"A": ca, "B": cb} {
		waitServed(ctx, t, name, c.Resource(widgetsGVR).Namespace("default"))
	}
	if _, err := cb.Resource(widgetsGVR).Namespace("default").Create(ctx, w, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a widget through replica B: %v", err)
	}
	got, err := ca.Resource(widgetsGVR).Namespace("default").Get(ctx, "w1", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the widget through replica A: %v", err)
	}
	if size, _, _ := unstructured.NestedInt64(got.Object, "spec", "size"); size != 3 {
		t.Errorf("replica A reads spec.size = %d, want 3", size)
	}
	// A conflict through one replica is seen by the other: the revision is
	// etcd's, shared by both.
	stale := got.DeepCopy()
	got.Object["spec"] = map[string]any{"size": int64(4)}
	if _, err := ca.Resource(widgetsGVR).Namespace("default").Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update through A: %v", err)
	}
	stale.Object["spec"] = map[string]any{"size": int64(5)}
	if _, err := cb.Resource(widgetsGVR).Namespace("default").Update(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("stale update through B: err = %v, want Conflict", err)
	}

	// Updates start from a replica's cached copy, which may lag the other
	// replica's writes. A client alternating between replicas, each update
	// naming the resourceVersion the previous one returned, must never see
	// a conflict it did not cause, nor lose a change; nor may a patch,
	// which names no resourceVersion.
	cur, err := cb.Resource(widgetsGVR).Namespace("default").Get(ctx, "w1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	clients := []dynamic.Interface{ca, cb}
	for i := range 40 {
		res := clients[i%2].Resource(widgetsGVR).Namespace("default")
		if i%4 == 3 {
			patch := fmt.Sprintf(`{"spec":{"size":%d}}`, 100+i)
			if cur, err = res.Patch(ctx, "w1", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				t.Fatalf("patch %d through replica %d: %v", i, i%2, err)
			}
		} else {
			cur.Object["spec"] = map[string]any{"size": int64(100 + i)}
			if cur, err = res.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
				t.Fatalf("update %d through replica %d: %v", i, i%2, err)
			}
		}
		if size, _, _ := unstructured.NestedInt64(cur.Object, "spec", "size"); size != int64(100+i) {
			t.Fatalf("write %d answered spec.size = %d, want %d", i, size, 100+i)
		}
	}
	final, err := ca.Resource(widgetsGVR).Namespace("default").Get(ctx, "w1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if final.GetResourceVersion() != cur.GetResourceVersion() {
		t.Errorf("after the writes A reads resourceVersion %s, the last write returned %s", final.GetResourceVersion(), cur.GetResourceVersion())
	}
}

// waitServed polls a list of r until the server (a replica's name, or
// "" for the only one) serves the resource: a route that is not there
// yet answers 404.
func waitServed(ctx context.Context, t testing.TB, replica string, r dynamic.ResourceInterface) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := r.List(ctx, metav1.ListOptions{})
		if err == nil {
			return
		}
		if !apierrors.IsNotFound(err) || time.Now().After(deadline) {
			t.Fatalf("waiting for replica %q to serve the resource: %v", replica, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// createCRD creates crd through client and waits until its resource,
// r, is served.
func createCRD(ctx context.Context, t testing.TB, client dynamic.Interface, crd *unstructured.Unstructured, r dynamic.ResourceInterface) {
	t.Helper()
	if _, err := client.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the CRD: %v", err)
	}
	waitServed(ctx, t, "", r)
}
