package e2e

import (
	"maps"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
)

// TestClientGoApply is what a controller does with server-side apply,
// through client-go (controller-runtime is not among the module's
// dependencies; its client.Apply sends the same request): typed apply
// configurations for a built-in, Extract to read back what the controller
// owns, the dynamic client's Apply and ApplyStatus for a custom resource.
func TestClientGoApply(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())
	ctx := testContext(t, startTimeout)
	const controller = "gizmo-controller"
	owned := metav1.ApplyOptions{FieldManager: controller}

	t.Run("typed apply configuration of a namespace", func(t *testing.T) {
		nss := srv.Client.CoreV1().Namespaces()
		ns, err := nss.Apply(ctx, corev1ac.Namespace("cg").WithLabels(map[string]string{"a": "1", "b": "1"}), owned)
		if err != nil {
			t.Fatalf("apply: %v", err)
		}
		extracted, err := corev1ac.ExtractNamespace(ns, controller)
		if err != nil {
			t.Fatalf("extract: %v", err)
		}
		if got, want := extracted.Labels, map[string]string{"a": "1", "b": "1"}; !maps.Equal(got, want) {
			t.Errorf("the controller owns labels %v, want %v", got, want)
		}

		// A label the controller stops applying is removed.
		ns, err = nss.Apply(ctx, corev1ac.Namespace("cg").WithLabels(map[string]string{"b": "1"}), owned)
		if err != nil {
			t.Fatalf("second apply: %v", err)
		}
		if _, ok := ns.Labels["a"]; ok {
			t.Errorf("label a survived an apply that no longer sets it: %v", ns.Labels)
		}

		// Another manager conflicts on b, then forces.
		other := corev1ac.Namespace("cg").WithLabels(map[string]string{"b": "2"})
		_, err = nss.Apply(ctx, other, metav1.ApplyOptions{FieldManager: "other"})
		if !apierrors.IsConflict(err) || err.Error() != `Apply failed with 1 conflict: conflict with "gizmo-controller": .metadata.labels.b` {
			t.Errorf("conflicting apply: got %v, want a 409 naming gizmo-controller and .metadata.labels.b", err)
		}
		if ns, err = nss.Apply(ctx, other, metav1.ApplyOptions{FieldManager: "other", Force: true}); err != nil {
			t.Fatalf("forced apply: %v", err)
		}
		if extracted, err = corev1ac.ExtractNamespace(ns, controller); err != nil {
			t.Fatalf("extract: %v", err)
		}
		if len(extracted.Labels) != 0 {
			t.Errorf("after the forced apply the controller still owns labels %v", extracted.Labels)
		}
	})

	t.Run("dynamic apply of a custom resource and its status", func(t *testing.T) {
		kubectlLine(t, srv, "apply", "--server-side", "-f", applyFixture("crd.yaml"))
		waitEstablished(t, srv, "gizmos.ssa.example.com")
		gz := srv.Dynamic.Resource(gizmos).Namespace("cg")
		cfg := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "ssa.example.com/v1", "kind": "Gizmo",
			"metadata": map[string]any{"name": "g", "namespace": "cg"},
			"spec":     map[string]any{"image": "nginx:1", "replicas": int64(2)},
		}}
		obj, err := gz.Apply(ctx, "g", cfg, owned)
		if err != nil {
			t.Fatalf("apply creates the object: %v", err)
		}
		if got := lookup(obj.Object, "spec.replicas"); !equalJSON(got, 2) {
			t.Errorf("spec.replicas = %v, want 2", got)
		}

		status := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "ssa.example.com/v1", "kind": "Gizmo",
			"metadata": map[string]any{"name": "g", "namespace": "cg"},
			"status":   map[string]any{"phase": "Ready"},
		}}
		if obj, err = gz.ApplyStatus(ctx, "g", status, owned); err != nil {
			t.Fatalf("apply status: %v", err)
		}
		if got := lookup(obj.Object, "status.phase"); got != "Ready" {
			t.Errorf("status.phase = %v, want Ready", got)
		}
		var subresources []string
		for _, e := range obj.GetManagedFields() {
			if e.Manager == controller && e.Operation == metav1.ManagedFieldsOperationApply {
				subresources = append(subresources, e.Subresource)
			}
		}
		if len(subresources) != 2 || subresources[0] == subresources[1] {
			t.Errorf("the controller's Apply entries are for subresources %q, want one for the object and one for status", subresources)
		}
	})
}
