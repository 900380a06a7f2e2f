package e2e

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestServiceIPRepair: the cluster IP repair loop puts back a Service's
// IPAddress deleted behind the allocator's back (reporting it as upstream
// does), and removes IPAddresses of the allocator that no Service holds:
// one naming a Service that holds another address within seconds, one
// naming a Service that does not exist after upstream's minute of grace.
func TestServiceIPRepair(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())
	const ns = "repair"
	kubectl(t, srv, "create", "namespace", ns)
	ctx := testContext(t, 3*time.Minute)
	svc, err := srv.Client.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ipc := srv.Client.NetworkingV1().IPAddresses()
	ip := svc.Spec.ClusterIP
	orphan := func(name, parent string) {
		t.Helper()
		_, err := ipc.Create(ctx, &networkingv1.IPAddress{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
				networkingv1.LabelIPAddressFamily: "IPv4", networkingv1.LabelManagedBy: "ipallocator.k8s.io",
			}},
			Spec: networkingv1.IPAddressSpec{ParentRef: &networkingv1.ParentReference{Resource: "services", Namespace: ns, Name: parent}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating IPAddress %s: %v", name, err)
		}
	}
	// Addresses in the lower part of the range, which the allocator gives
	// only when asked.
	orphan("10.0.0.3", "gone")
	orphanCreated := time.Now()
	orphan("10.0.0.4", "web")

	old, err := ipc.Get(ctx, ip, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := ipc.Delete(ctx, ip, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the Service's IPAddress recreated", func() (bool, error) {
		got, err := ipc.Get(ctx, ip, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		ref := got.Spec.ParentRef
		return got.UID != old.UID && ref.Resource == "services" && ref.Namespace == ns && ref.Name == "web", nil
	})
	waitFor(t, 20*time.Second, "a ClusterIPNotAllocated event", func() (bool, error) {
		evs, err := srv.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		return slices.ContainsFunc(evs.Items, func(e corev1.Event) bool {
			return e.Reason == "ClusterIPNotAllocated" && e.InvolvedObject.Name == "web" && e.Type == corev1.EventTypeWarning &&
				e.ReportingController == "ipallocator-repair-controller" && e.Message == "Cluster IP [IPv4]: "+ip+" is not allocated; repairing"
		}), nil
	})
	gone := func(name string) func() (bool, error) {
		return func() (bool, error) {
			_, err := ipc.Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, err
		}
	}
	waitFor(t, 20*time.Second, "the IPAddress naming a Service that holds another removed", gone("10.0.0.4"))
	if _, err := ipc.Get(ctx, "10.0.0.3", metav1.GetOptions{}); err != nil && time.Since(orphanCreated) < 55*time.Second {
		t.Fatalf("the IPAddress of a missing Service went before its grace: %v", err)
	}
	waitFor(t, 100*time.Second, "the IPAddress naming a missing Service removed", gone("10.0.0.3"))
	if d := time.Since(orphanCreated); d < 59*time.Second {
		t.Errorf("the IPAddress of a missing Service went after %v, before upstream's minute of grace", d)
	}
	// The Service's own address stays.
	if _, err := ipc.Get(ctx, ip, metav1.GetOptions{}); err != nil {
		t.Fatalf("the Service's IPAddress: %v", err)
	}
}
