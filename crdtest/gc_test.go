package crdtest_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/crdserver/crdserver/crdtest"
	"github.com/crdserver/crdserver/internal/storage/etcdtest"
)

var partsGVR = schema.GroupVersionResource{Group: "gc.example.com", Version: "v1", Resource: "parts"}

// serveParts creates the Part CRD through c and waits until every client
// serves it.
func serveParts(ctx context.Context, t testing.TB, c dynamic.Interface, all ...dynamic.Interface) {
	t.Helper()
	crd := crdObject("gc.example.com", "parts", "Part", map[string]any{
		"name": "v1", "served": true, "storage": true,
		"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
	})
	if _, err := c.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the CRD: %v", err)
	}
	for i, c := range all {
		waitServed(ctx, t, fmt.Sprint(i), c.Resource(partsGVR).Namespace("default"))
	}
}

// createParts creates n parts named prefix-i owned by owner (if not nil),
// 32 at a time.
func createParts(ctx context.Context, t testing.TB, r dynamic.ResourceInterface, prefix string, n int, owner *unstructured.Unstructured, block bool) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	sem := make(chan struct{}, 32)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			p := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "gc.example.com/v1", "kind": "Part"}}
			p.SetName(fmt.Sprintf("%s-%d", prefix, i))
			if owner != nil {
				p.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "gc.example.com/v1", Kind: "Part", Name: owner.GetName(), UID: owner.GetUID(), BlockOwnerDeletion: &block}})
			}
			if _, err := r.Create(ctx, p, metav1.CreateOptions{}); err != nil {
				select {
				case errs <- err:
				default:
				}
			}
		})
	}
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatalf("creating parts: %v", err)
	default:
	}
}

// Two replicas run the garbage collector on one etcd at once: each owner's
// dependents go exactly as with one, whichever replica the deletes go to.
func TestGarbageCollectorReplicas(t *testing.T) {
	endpoints := etcdtest.StartExternal(t)
	a := crdtest.Start(t, crdtest.Options{EtcdServers: endpoints})
	b := crdtest.Start(t, crdtest.Options{EtcdServers: endpoints})
	ca, cb := dynamic.NewForConfigOrDie(a.Config), dynamic.NewForConfigOrDie(b.Config)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	serveParts(ctx, t, ca, ca, cb)
	parts := ca.Resource(partsGVR).Namespace("default")

	owner := func(name string) *unstructured.Unstructured {
		o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "gc.example.com/v1", "kind": "Part"}}
		o.SetName(name)
		o, err := parts.Create(ctx, o, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	bg, fg, orphan := owner("background"), owner("foreground"), owner("orphan")
	createParts(ctx, t, parts, "bg", 300, bg, false)
	createParts(ctx, t, parts, "fg", 300, fg, true)
	createParts(ctx, t, parts, "orphan", 300, orphan, true)

	del := func(c dynamic.Interface, name string, policy metav1.DeletionPropagation) {
		if err := c.Resource(partsGVR).Namespace("default").Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
			t.Fatal(err)
		}
	}
	del(ca, "background", metav1.DeletePropagationBackground)
	del(cb, "foreground", metav1.DeletePropagationForeground)
	del(ca, "orphan", metav1.DeletePropagationOrphan)

	// What remains at the end: the orphans, without owner references.
	deadline := time.Now().Add(90 * time.Second)
	for {
		list, err := cb.Resource(partsGVR).Namespace("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		owned := 0
		for _, p := range list.Items {
			if len(p.GetOwnerReferences()) > 0 {
				owned++
			}
		}
		if len(list.Items) == 300 && owned == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d parts remain, %d of them owned; want the 300 orphans, unowned", len(list.Items), owned)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, name := range []string{"background", "foreground", "orphan", "orphan-0"} {
		_, err := ca.Resource(partsGVR).Namespace("default").Get(ctx, name, metav1.GetOptions{})
		if want := name == "orphan-0"; (err == nil) != want || (err != nil && !apierrors.IsNotFound(err)) {
			t.Errorf("%s: err %v, want it to exist: %v", name, err, want)
		}
	}
}

// BenchmarkGarbageCollector measures how fast the dependents of one deleted
// owner go: 10,000 custom resources (the figure) owned by one,
// deleted in the background. It reports dependents removed per second,
// from the owner's delete to the last dependent's delete event.
//
//	go test ./crdtest -run '^$' -bench GarbageCollector -benchtime 1x
func BenchmarkGarbageCollector(b *testing.B) {
	const n = 10000
	srv := crdtest.Start(b, crdtest.Options{})
	c := dynamic.NewForConfigOrDie(srv.Config)
	ctx := context.Background()
	serveParts(ctx, b, c, c)
	parts := c.Resource(partsGVR).Namespace("default")
	var total time.Duration
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "gc.example.com/v1", "kind": "Part"}}
		o.SetName(fmt.Sprintf("owner-%d", i))
		owner, err := parts.Create(ctx, o, metav1.CreateOptions{})
		if err != nil {
			b.Fatal(err)
		}
		createParts(ctx, b, parts, fmt.Sprintf("dep%d", i), n, owner, false)
		list, err := parts.List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			b.Fatal(err)
		}
		w, err := parts.Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		if err := parts.Delete(ctx, owner.GetName(), metav1.DeleteOptions{}); err != nil {
			b.Fatal(err)
		}
		// The server closes a watcher that falls behind, as upstream's
		// does: the client then counts what is left, as a reflector
		// relists, and watches on from there.
		for deleted, relists := 0, 0; deleted < n+1; {
			ev, ok := <-w.ResultChan()
			if ok && ev.Type == watch.Deleted {
				deleted++
			}
			if ok && ev.Type != watch.Error {
				continue
			}
			if relists++; relists > 100 {
				b.Fatalf("watch ended after %d deletes, %d times", deleted, relists)
			}
			w.Stop()
			all, err := parts.List(ctx, metav1.ListOptions{})
			if err != nil {
				b.Fatal(err)
			}
			left := 0
			for _, p := range all.Items {
				if p.GetName() == owner.GetName() || strings.HasPrefix(p.GetName(), fmt.Sprintf("dep%d-", i)) {
					left++
				}
			}
			deleted = n + 1 - left
			if w, err = parts.Watch(ctx, metav1.ListOptions{ResourceVersion: all.GetResourceVersion()}); err != nil {
				b.Fatal(err)
			}
		}
		total += time.Since(start)
		w.Stop()
	}
	b.ReportMetric(float64(n*b.N)/total.Seconds(), "dependents/s")
}
