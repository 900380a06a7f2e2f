package crdtest_test

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/crdserver/crdserver/crdtest"
)

// A client that speaks protobuf alone (as kube-controller-manager's do)
// gets every built-in with a Go type in protobuf: gets, lists, writes,
// watches and errors.
func TestProtobufOnlyClient(t *testing.T) {
	t.Parallel()
	s := crdtest.Start(t)
	cfg := rest.CopyConfig(s.Config)
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf"
	pb := kubernetes.NewForConfigOrDie(cfg)
	ctx := t.Context()

	ns, err := pb.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "pb", Labels: map[string]string{"a": "b"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	if ns.Labels["a"] != "b" || ns.UID == "" || ns.Status.Phase != corev1.NamespaceActive {
		t.Errorf("created namespace %+v", ns)
	}
	got, err := pb.CoreV1().Namespaces().Get(ctx, "pb", metav1.GetOptions{})
	if err != nil || got.UID != ns.UID {
		t.Fatalf("get namespace: %v, %+v", err, got)
	}
	list, err := pb.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) < 4 || list.ResourceVersion == "" {
		t.Fatalf("list namespaces: %v, %d items, rv %q", err, len(list.Items), list.ResourceVersion)
	}

	// The namespace's own kube-root-ca.crt, which the server publishes in
	// it as a cluster does, is left out.
	w, err := pb.CoreV1().ConfigMaps("pb").Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion, FieldSelector: "metadata.name=c"})
	if err != nil {
		t.Fatalf("watch configmaps: %v", err)
	}
	defer w.Stop()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: map[string]string{"k": "v"}}
	if cm, err = pb.CoreV1().ConfigMaps("pb").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create configmap: %v", err)
	}
	cm.Data["k"] = "v2"
	if _, err := pb.CoreV1().ConfigMaps("pb").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update configmap: %v", err)
	}
	for _, want := range []watch.EventType{watch.Added, watch.Modified} {
		select {
		case ev := <-w.ResultChan():
			c, ok := ev.Object.(*corev1.ConfigMap)
			if ev.Type != want || !ok || c.Name != "c" {
				t.Fatalf("watch event %s %T, want %s of configmap c", ev.Type, ev.Object, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s event", want)
		}
	}

	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "d"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "d"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "d"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
			},
		},
	}
	created, err := pb.AppsV1().Deployments("pb").Create(ctx, dep, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create deployment: %v", err)
	}
	if created.Spec.Replicas == nil || *created.Spec.Replicas != 1 {
		t.Errorf("deployment defaulted to %v replicas, want 1", created.Spec.Replicas)
	}
	if _, err := pb.AppsV1().Deployments("pb").Get(ctx, "missing", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get of a missing deployment: %v, want NotFound", err)
	}
	if err := pb.CoreV1().ConfigMaps("pb").Delete(ctx, "c", metav1.DeleteOptions{}); err != nil {
		t.Errorf("delete configmap: %v", err)
	}
}
