package server

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/crdserver/crdserver/internal/builtin"
	"github.com/crdserver/crdserver/internal/controllers"
	"github.com/crdserver/crdserver/internal/storage"
)

// TestNodePortRepairStore runs the node port repair loop's checks against
// a server's own records: a Service's record deleted behind its back is
// written again (with a PortNotAllocated event in the Service's
// namespace), and a record no Service holds is freed at the third check.
func TestNodePortRepairStore(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	s, err := Start(ctx, Config{DataDir: t.TempDir(), Storage: StorageMemory})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown() })
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	svc, err := client.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "np"},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	port := int(svc.Spec.Ports[0].NodePort)
	nodePorts, err := s.newNodePorts()
	if err != nil {
		t.Fatal(err)
	}
	key := func(port int) string { return nodePorts.Prefix + strconv.Itoa(port) }
	if _, _, err := s.raw.Delete(ctx, key(port), 0); err != nil {
		t.Fatalf("deleting the record of port %d: %v", port, err)
	}
	const leakedPort = 30999
	if err := nodePorts.Mark(ctx, leakedPort, "default", "gone", 0); err != nil {
		t.Fatal(err)
	}

	r := &controllers.NodePortRepair{
		Store:   serviceRepair{s: s, nodePorts: nodePorts},
		InRange: func(p int) bool { return p >= nodePorts.Base && p < nodePorts.Base+nodePorts.Size },
		Range:   nodePorts.String(), Log: slog.New(slog.DiscardHandler),
		Grace: time.Nanosecond, // the leaked record is moments old
	}
	for i := range 3 {
		if err := r.Check(ctx); err != nil {
			t.Fatalf("check %d: %v", i+1, err)
		}
		_, err := s.raw.Get(ctx, key(leakedPort))
		if gone := errors.Is(err, storage.ErrNotFound); gone != (i == 2) {
			t.Fatalf("after check %d the leaked record is gone: %v (%v)", i+1, gone, err)
		}
	}
	recs, err := nodePorts.Records(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(recs, func(r builtin.NodePortRecord) bool {
		return r.Port == port && r.Namespace == "default" && r.Name == "np"
	}) {
		t.Fatalf("records %+v, want port %d the Service's again", recs, port)
	}
	evs, err := client.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range evs.Items {
		found = found || e.Reason == "PortNotAllocated" && e.InvolvedObject.Name == "np" && e.ReportingController == "portallocator-repair-controller"
	}
	if !found {
		t.Errorf("no PortNotAllocated event among %d", len(evs.Items))
	}
}
