package server_test

import (
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// The server keeps upstream's APF configuration: a deleted mandatory
// FlowSchema comes back, a suggested one changed while marked for
// auto-update gets upstream's spec back (and keeps a change once marked
// otherwise), and each FlowSchema says whether its level is missing.
func TestAPFConfiguration(t *testing.T) {
	cfg := startMemory(t, t.TempDir())
	dc := dynamic.NewForConfigOrDie(cfg)
	gv := schema.GroupVersion{Group: "flowcontrol.apiserver.k8s.io", Version: "v1"}
	schemas, levels := dc.Resource(gv.WithResource("flowschemas")), dc.Resource(gv.WithResource("prioritylevelconfigurations"))
	eventually := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 10s", what)
			}
		}
	}
	get := func(name string) *unstructured.Unstructured {
		t.Helper()
		fs, err := schemas.Get(t.Context(), name, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return fs
	}
	dangling := func(name string) string {
		conds, _, _ := unstructured.NestedSlice(get(name).Object, "status", "conditions")
		for _, c := range conds {
			if m := c.(map[string]any); m["type"] == "Dangling" {
				return m["status"].(string) + "/" + m["reason"].(string)
			}
		}
		return ""
	}
	eventually("the bootstrap schemas", func() bool {
		list, err := schemas.List(t.Context(), metav1.ListOptions{})
		return err == nil && len(list.Items) == 11
	})
	eventually("catch-all's Dangling condition", func() bool { return dangling("catch-all") == "False/Found" })

	if err := schemas.Delete(t.Context(), "catch-all", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("catch-all restored", func() bool { return get("catch-all") != nil })

	patch := []byte(`{"spec":{"matchingPrecedence":7000}}`)
	if _, err := schemas.Patch(t.Context(), "global-default", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("global-default's precedence restored", func() bool {
		p, _, _ := unstructured.NestedInt64(get("global-default").Object, "spec", "matchingPrecedence")
		return p == 9900
	})
	patch = []byte(`{"metadata":{"annotations":{"apf.kubernetes.io/autoupdate-spec":"false"}},"spec":{"matchingPrecedence":7000}}`)
	if _, err := schemas.Patch(t.Context(), "global-default", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if p, _, _ := unstructured.NestedInt64(get("global-default").Object, "spec", "matchingPrecedence"); p != 7000 {
		t.Errorf("global-default, marked not to be updated, has precedence %d", p)
	}

	fs := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gv.String(), "kind": "FlowSchema", "metadata": map[string]any{"name": "mine"},
		"spec": map[string]any{"priorityLevelConfiguration": map[string]any{"name": "later"}},
	}}
	if _, err := schemas.Create(t.Context(), fs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("mine dangling", func() bool { return dangling("mine") == "True/NotFound" })
	pl := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gv.String(), "kind": "PriorityLevelConfiguration", "metadata": map[string]any{"name": "later"},
		"spec": map[string]any{"type": "Limited", "limited": map[string]any{"limitResponse": map[string]any{"type": "Reject"}}},
	}}
	if _, err := levels.Create(t.Context(), pl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("mine no longer dangling", func() bool { return dangling("mine") == "False/Found" })

	// The admin's requests are classified as exempt (by the schema and
	// level stored), and the answer says so.
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := get("exempt").GetUID()
	pl, err = levels.Get(t.Context(), "exempt", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually("the exempt schema's uid in the answer", func() bool {
		resp, err := hc.Get(cfg.Host + "/api/v1/namespaces/default/configmaps")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.Header.Get("X-Kubernetes-PF-FlowSchema-UID") == string(want) && resp.Header.Get("X-Kubernetes-PF-PriorityLevel-UID") == string(pl.GetUID())
	})
}
