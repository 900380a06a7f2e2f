package loadgen

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
)

// crdGroup holds the CRDs of the crds workload.
const crdGroup = "crds.bench.crdserver.io"

// establishCRDs creates CRDs one after another and measures, for each, the
// time from sending the create to seeing it Established in a watch: how
// quickly a new API appears.
func (b *bench) establishCRDs(ctx context.Context) (Result, error) {
	crds := b.client.Resource(crdsGVR)
	sel := LabelRun + "=" + b.runID
	w, err := crds.Watch(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return Result{}, fmt.Errorf("watching CRDs: %w", err)
	}
	defer w.Stop()
	var rec Recorder
	start := time.Now()
	n := b.cfg.Count
	for i := 0; i < n && ctx.Err() == nil; i++ {
		name := fmt.Sprintf("t%d%s", i, b.runID)
		obj := crdObject(name, b.runID)
		t0 := time.Now()
		if _, err := crds.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			rec.Fail(err)
			continue
		}
		if err := waitEstablished(ctx, w, name+"s."+crdGroup, 10*time.Second); err != nil {
			rec.Fail(err)
			continue
		}
		rec.Observe(time.Since(t0))
	}
	return Result{Name: "crd-established", Summary: rec.Summary(), Elapsed: time.Since(start)}, nil
}

func crdObject(name, runID string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata": map[string]any{
			"name":   name + "s." + crdGroup,
			"labels": map[string]any{LabelRun: runID},
		},
		"spec": map[string]any{
			"group": crdGroup,
			"scope": "Namespaced",
			"names": map[string]any{"plural": name + "s", "singular": name, "kind": "T" + name, "listKind": "T" + name + "List"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object",
					"properties": map[string]any{
						"spec": map[string]any{"type": "object", "properties": map[string]any{
							"replicas": map[string]any{"type": "integer", "minimum": int64(0)},
							"image":    map[string]any{"type": "string"},
						}},
					},
				}},
			}},
		},
	}}
}

// waitEstablished reads w until the named CRD is Established.
func waitEstablished(ctx context.Context, w watch.Interface, name string, timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			return fmt.Errorf("CRD %s not Established after %s", name, timeout)
		case ev, ok := <-w.ResultChan():
			if !ok {
				return fmt.Errorf("CRD watch closed while waiting for %s", name)
			}
			u, isObj := ev.Object.(*unstructured.Unstructured)
			if isObj && u.GetName() == name && conditionTrue(u, "Established") {
				return nil
			}
		}
	}
}

// deleteCRDs removes the crds workload's CRDs.
func (b *bench) deleteCRDs(ctx context.Context) error {
	return b.client.Resource(crdsGVR).DeleteCollection(ctx, metav1.DeleteOptions{},
		metav1.ListOptions{LabelSelector: LabelRun + "=" + b.runID})
}
