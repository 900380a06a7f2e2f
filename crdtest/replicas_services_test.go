package crdtest_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/crdserver/crdserver/crdtest"
	"github.com/crdserver/crdserver/internal/storage/etcdtest"
)

// Replicas sharing an etcd agree on one kubernetes Service, never give
// one cluster IP to two Services created through different replicas at
// once, and list the same APIServices.
func TestReplicasShareServicesAndAPIServices(t *testing.T) {
	endpoints := etcdtest.StartExternal(t)
	// Started one after the other: Start may fail the test, which only
	// the test's goroutine may do. The unit tests of the allocator cover
	// replicas racing for the kubernetes Service's address.
	a := crdtest.Start(t, crdtest.Options{EtcdServers: endpoints})
	b := crdtest.Start(t, crdtest.Options{EtcdServers: endpoints})
	ca, cb := kubernetes.NewForConfigOrDie(a.Config), kubernetes.NewForConfigOrDie(b.Config)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	svc, err := cb.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if svc.Spec.ClusterIP != "10.0.0.1" {
		t.Errorf("kubernetes Service clusterIP %s, want 10.0.0.1", svc.Spec.ClusterIP)
	}

	ips := map[string]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 20 {
		c := ca
		if i%2 == 1 {
			c = cb
		}
		wg.Go(func() {
			s := &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s%d", i)},
				Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}},
			}
			got, err := c.CoreV1().Services("default").Create(ctx, s, metav1.CreateOptions{})
			if err != nil {
				t.Errorf("create s%d: %v", i, err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if other, ok := ips[got.Spec.ClusterIP]; ok {
				t.Errorf("%s given to %s and s%d", got.Spec.ClusterIP, other, i)
			}
			ips[got.Spec.ClusterIP] = got.Name
		})
	}
	wg.Wait()

	gvr := schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
	for name, cfg := range map[string]*crdtest.Server{"A": a, "B": b} {
		got, err := dynamic.NewForConfigOrDie(cfg.Config).Resource(gvr).Get(ctx, "v1.apps", metav1.GetOptions{})
		if err != nil {
			t.Errorf("replica %s: v1.apps: %v", name, err)
			continue
		}
		if got.GetLabels()["kube-aggregator.kubernetes.io/automanaged"] != "onstart" {
			t.Errorf("replica %s: v1.apps labels %v", name, got.GetLabels())
		}
	}
}
