package e2e

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestNamespaceDeletionPodsFirst deletes a namespace holding a pod kept by
// a finalizer and a ConfigMap: as upstream's OrderedNamespaceDeletion, the
// pod goes first and the ConfigMap stays until no pod remains, then both
// and the namespace go.
func TestNamespaceDeletionPodsFirst(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())
	ctx := testContext(t, 90*time.Second)
	const ns = "ordered"
	if _, err := srv.Client.CoreV1().Namespaces().Create(ctx, namespace(ns), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitServiceAccount(t, srv, ns)
	pods := srv.Client.CoreV1().Pods(ns)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"e2e.example.com/hold"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause"}}},
	}
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cms := srv.Client.CoreV1().ConfigMaps(ns)
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := srv.Client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the pod marked deleted", func() (bool, error) {
		p, err := pods.Get(ctx, "held", metav1.GetOptions{})
		return err == nil && p.DeletionTimestamp != nil, err
	})
	// The controller passes again while the pod remains; the ConfigMap
	// stays through them.
	time.Sleep(2 * time.Second)
	if cm, err := cms.Get(ctx, "cfg", metav1.GetOptions{}); err != nil || cm.DeletionTimestamp != nil {
		t.Fatalf("ConfigMap while a pod remains: %v, %+v; want it kept", err, cm)
	}
	if _, err := pods.Patch(ctx, "held", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the ConfigMap deleted once no pod remains", func() (bool, error) {
		_, err := cms.Get(ctx, "cfg", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	waitGone(t, srv, ns)
}
