package server_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
)

// CRDs created together that ask for one kind: the naming controller
// accepts exactly one of them and refuses the rest with KindConflict, even
// when all arrive before any status is written back.
func TestConflictingKindsCreatedTogether(t *testing.T) {
	cfg := startMemory(t, t.TempDir())
	cfg.QPS, cfg.Burst = 1000, 1000
	client := dynamic.NewForConfigOrDie(cfg).Resource(crdGVR)
	const n = 6
	for round := range 3 {
		group := fmt.Sprintf("r%d.example.com", round)
		// Created at once, so that the controller sees several before it
		// writes any status.
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			plural := fmt.Sprintf("things%d", i)
			crd := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
				"metadata": map[string]any{"name": plural + "." + group},
				"spec": map[string]any{
					"group": group, "scope": "Namespaced",
					"names": map[string]any{"plural": plural, "singular": fmt.Sprintf("thing%d", i), "kind": "Thing", "listKind": fmt.Sprintf("Thing%dList", i)},
					"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
						"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
				},
			}}
			wg.Go(func() { _, errs[i] = client.Create(t.Context(), crd, metav1.CreateOptions{}) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		var accepted, refused int
		deadline := time.Now().Add(10 * time.Second)
		for {
			accepted, refused = 0, 0
			list, err := client.List(t.Context(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range list.Items {
				if !strings.HasSuffix(c.GetName(), "."+group) {
					continue
				}
				switch status, reason := namesAccepted(&c); {
				case status == "True":
					accepted++
				case status == "False" && reason == "KindConflict":
					refused++
				}
			}
			if accepted+refused == n || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if accepted != 1 || refused != n-1 {
			t.Errorf("group %s: %d CRDs accepted and %d refused with KindConflict, want 1 and %d", group, accepted, refused, n-1)
		}
	}
}

func namesAccepted(crd *unstructured.Unstructured) (status, reason string) {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == "NamesAccepted" {
			s, _ := m["status"].(string)
			r, _ := m["reason"].(string)
			return s, r
		}
	}
	return "", ""
}
