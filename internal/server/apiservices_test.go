package server_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// A Local APIService a client creates is Available, as upstream's
// aggregator marks it; one naming a Service is left as written, until an
// update makes it Local.
func TestLocalAPIServiceBecomesAvailable(t *testing.T) {
	cfg := startMemory(t, t.TempDir())
	client := dynamic.NewForConfigOrDie(cfg).Resource(schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"})
	for _, tc := range []struct {
		name, service string
		available     bool
	}{
		{"v1.local.example.com", "", true},
		{"v1.remote.example.com", "remote", false},
	} {
		spec := map[string]any{"group": tc.name[3:], "version": "v1", "groupPriorityMinimum": int64(1000), "versionPriority": int64(15)}
		if tc.service != "" {
			spec["service"] = map[string]any{"namespace": "default", "name": tc.service}
			spec["insecureSkipTLSVerify"] = true
		}
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
			"metadata": map[string]any{"name": tc.name}, "spec": spec,
		}}
		if _, err := client.Create(t.Context(), obj, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
	}
	available := func(name string) (bool, string) {
		got, err := client.Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, c := range conds {
			if m := c.(map[string]any); m["type"] == "Available" {
				return m["status"] == "True", m["reason"].(string)
			}
		}
		return false, ""
	}
	if ok, reason := available("v1.local.example.com"); !ok || reason != "Local" {
		t.Errorf("the Local APIService is not Available (reason %q)", reason)
	}
	if ok, _ := available("v1.remote.example.com"); ok {
		t.Error("an APIService naming a Service was marked Available")
	}
	patch := []byte(`{"spec":{"service":null,"insecureSkipTLSVerify":false}}`)
	if _, err := client.Patch(t.Context(), "v1.remote.example.com", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for ok, reason := available("v1.remote.example.com"); !ok || reason != "Local"; ok, reason = available("v1.remote.example.com") {
		if time.Now().After(deadline) {
			t.Fatalf("the APIService made Local is not Available (reason %q)", reason)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
