package controllers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/crdserver/crdserver/crdtest"
	"github.com/crdserver/crdserver/internal/storage/etcdtest"
)

var (
	crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	svmGVR = schema.GroupVersionResource{Group: "storagemigration.k8s.io", Version: "v1", Resource: "storageversionmigrations"}
)

const migGroup = "mig.example.com"

func gadgets(version string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: migGroup, Version: version, Resource: "gadgets"}
}

// gadgetCRD is a CRD whose versions are those named, the last one stored.
func gadgetCRD(versions ...string) *unstructured.Unstructured {
	var vs []any
	for i, v := range versions {
		vs = append(vs, map[string]any{
			"name": v, "served": true, "storage": i == len(versions)-1,
			"schema": map[string]any{"openAPIV3Schema": map[string]any{
				"type": "object", "x-kubernetes-preserve-unknown-fields": true,
			}},
		})
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": "gadgets." + migGroup},
		"spec": map[string]any{
			"group":    migGroup,
			"scope":    "Namespaced",
			"names":    map[string]any{"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
			"versions": vs,
		},
	}}
}

// TestMigrationUnderConcurrentWrites migrates a CRD's objects from v1 to
// v2 on two replicas sharing one etcd, both running the migration
// controller, while writers on both replicas keep incrementing a counter
// in every object. No write is lost, every object ends stored at v2, and
// storedVersions shrinks to [v2].
//
// On a loaded machine a replica may answer 503 for a while (its etcd gate
// closes when etcd is slow to answer): such a request is tried again, and
// an update answered 503 may or may not have happened, so it is counted
// apart. Every update answered OK must be in the final count.
func TestMigrationUnderConcurrentWrites(t *testing.T) {
	// etcd in a process of its own, as the replica tests in crdtest run
	// it: not slowed by the race detector nor by the replicas' goroutines.
	endpoints := etcdtest.StartExternal(t)
	a := crdtest.Start(t, crdtest.Options{EtcdServers: endpoints})
	b := crdtest.Start(t, crdtest.Options{EtcdServers: endpoints})
	clients := []dynamic.Interface{dynamic.NewForConfigOrDie(a.Config), dynamic.NewForConfigOrDie(b.Config)}
	etcd, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ca := clients[0]

	if err := create(ctx, ca.Resource(crdGVR), gadgetCRD("v1")); err != nil {
		t.Fatal(err)
	}
	for _, c := range clients {
		waitFor(ctx, t, "v1 served", func() bool {
			_, err := c.Resource(gadgets("v1")).Namespace("default").List(ctx, metav1.ListOptions{})
			return err == nil
		})
	}
	const objects = 400
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range objects {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			o := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": migGroup + "/v1", "kind": "Gadget",
				"metadata": map[string]any{"name": fmt.Sprintf("g%03d", i)},
				"count":    int64(0),
			}}
			if err := create(ctx, clients[i%2].Resource(gadgets("v1")).Namespace("default"), o); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	// v2 becomes the storage version; both replicas must have seen it
	// before writes count as at v2.
	waitFor(ctx, t, "the CRD to store v2", func() bool {
		cur, err := ca.Resource(crdGVR).Get(ctx, "gadgets."+migGroup, metav1.GetOptions{})
		if err == nil {
			cur.Object["spec"].(map[string]any)["versions"] = gadgetCRD("v1", "v2").Object["spec"].(map[string]any)["versions"]
			_, err = ca.Resource(crdGVR).Update(ctx, cur, metav1.UpdateOptions{})
		}
		// A 503 may hide an update that happened: the next one, from a
		// fresh read, then changes nothing.
		if err != nil && !apierrors.IsServiceUnavailable(err) && !apierrors.IsConflict(err) {
			t.Fatal(err)
		}
		return err == nil
	})
	for i, c := range clients {
		probe := fmt.Sprintf("probe%d", i)
		waitFor(ctx, t, "v2 stored by replica", func() bool {
			o := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": migGroup + "/v1", "kind": "Gadget", "metadata": map[string]any{"name": probe},
			}}
			_ = c.Resource(gadgets("v1")).Namespace("default").Delete(ctx, probe, metav1.DeleteOptions{})
			if _, err := c.Resource(gadgets("v1")).Namespace("default").Create(ctx, o, metav1.CreateOptions{}); err != nil {
				return false
			}
			return storedAPIVersion(t, etcd, probe) == migGroup+"/v2"
		})
	}

	// Writers: each increments the counters of its share of the objects,
	// through both replicas and both versions, counting for each object
	// the updates answered OK (wrote) and those answered 503 (unsure),
	// and all those answered OK (succeeded).
	var wrote, unsure [objects]atomic.Int64
	var succeeded atomic.Int64
	stop := make(chan struct{})
	var writers sync.WaitGroup
	for w := range 4 {
		writers.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				i := (w + 4*n) % objects
				res := clients[(w+n)%2].Resource(gadgets([]string{"v1", "v2"}[n%2])).Namespace("default")
				name := fmt.Sprintf("g%03d", i)
				o, err := res.Get(ctx, name, metav1.GetOptions{})
				if apierrors.IsServiceUnavailable(err) {
					pause(stop)
					continue
				} else if err != nil {
					t.Errorf("get %s: %v", name, err)
					return
				}
				c, _, _ := unstructured.NestedInt64(o.Object, "count")
				o.Object["count"] = c + 1
				switch _, err := res.Update(ctx, o, metav1.UpdateOptions{}); {
				case err == nil:
					wrote[i].Add(1)
					succeeded.Add(1)
				case apierrors.IsConflict(err):
					// the migration (or nobody else) rewrote it
				case apierrors.IsServiceUnavailable(err):
					// The answer is lost; the write may have happened.
					unsure[i].Add(1)
					pause(stop)
				default:
					t.Errorf("update %s: %v", name, err)
					return
				}
			}
		})
	}
	waitFor(ctx, t, "writes before the migration", func() bool { return succeeded.Load() >= 20 })

	svm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "storagemigration.k8s.io/v1", "kind": "StorageVersionMigration",
		"metadata": map[string]any{"name": "gadgets"},
		"spec":     map[string]any{"resource": map[string]any{"group": migGroup, "resource": "gadgets"}},
	}}
	if err := create(ctx, ca.Resource(svmGVR), svm); err != nil {
		t.Fatal(err)
	}
	var final *unstructured.Unstructured
	waitFor(ctx, t, "the migration to succeed", func() bool {
		final, err = clients[1].Resource(svmGVR).Get(ctx, "gadgets", metav1.GetOptions{})
		return err == nil && conditionStatus(final, "Succeeded") == "True"
	})
	after := succeeded.Load() + 20
	waitFor(ctx, t, "writes after the migration", func() bool { return succeeded.Load() >= after })
	close(stop)
	writers.Wait()

	if s := conditionStatus(final, "Running"); s != "False" {
		t.Errorf("Running is %q after success", s)
	}
	if s := conditionStatus(final, "Failed"); s != "" {
		t.Errorf("Failed is %q", s)
	}
	if rv, _, _ := unstructured.NestedString(final.Object, "status", "resourceVersion"); rv == "" {
		t.Error("status.resourceVersion is not set")
	}
	total, unanswered := int64(0), int64(0)
	for i := range objects {
		name := fmt.Sprintf("g%03d", i)
		var o *unstructured.Unstructured
		waitFor(ctx, t, "reading "+name, func() bool {
			o, err = ca.Resource(gadgets("v2")).Namespace("default").Get(ctx, name, metav1.GetOptions{})
			return !apierrors.IsServiceUnavailable(err)
		})
		if err != nil {
			t.Fatal(err)
		}
		c, _, _ := unstructured.NestedInt64(o.Object, "count")
		if ok, unsure := wrote[i].Load(), unsure[i].Load(); c < ok || c > ok+unsure {
			t.Errorf("%s: count %d, but %d increments succeeded (and %d were answered 503)", name, c, ok, unsure)
		}
		total += c
		unanswered += unsure[i].Load()
		if av := storedAPIVersion(t, etcd, name); av != migGroup+"/v2" {
			t.Errorf("%s is stored at %s", name, av)
		}
	}
	if total == 0 {
		t.Error("no write succeeded")
	}
	crd, err := ca.Resource(crdGVR).Get(ctx, "gadgets."+migGroup, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sv, _, _ := unstructured.NestedStringSlice(crd.Object, "status", "storedVersions"); strings.Join(sv, ",") != "v2" {
		t.Errorf("storedVersions %v, want [v2]", sv)
	}
	t.Logf("%d increments during the migration (%d more answered 503); %s", total, unanswered, conditionMessage(final, "Succeeded"))
}

// create creates o, again while the server answers 503. An attempt
// answered 503 may have happened, so AlreadyExists is success (as it is
// when client-go repeats a create whose answer it lost).
func create(ctx context.Context, res dynamic.ResourceInterface, o *unstructured.Unstructured) error {
	for {
		_, err := res.Create(ctx, o, metav1.CreateOptions{})
		switch {
		case apierrors.IsServiceUnavailable(err) && ctx.Err() == nil:
			pause(nil)
		case apierrors.IsAlreadyExists(err):
			return nil
		default:
			return err
		}
	}
}

// pause waits a moment before a request answered 503 is tried again,
// less if stop closes.
func pause(stop <-chan struct{}) {
	select {
	case <-stop:
	case <-time.After(50 * time.Millisecond):
	}
}

// storedAPIVersion reads the apiVersion of default/name as etcd holds it.
func storedAPIVersion(t *testing.T, etcd *clientv3.Client, name string) string {
	t.Helper()
	resp, err := etcd.Get(context.Background(), "/registry/"+migGroup+"/gadgets/default/"+name)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return ""
	}
	var o struct {
		APIVersion string `json:"apiVersion"`
	}
	if err := json.Unmarshal(resp.Kvs[0].Value, &o); err != nil {
		t.Fatal(err)
	}
	return o.APIVersion
}

func conditions(o *unstructured.Unstructured) map[string]map[string]any {
	list, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	out := map[string]map[string]any{}
	for _, c := range list {
		m, _ := c.(map[string]any)
		typ, _ := m["type"].(string)
		out[typ] = m
	}
	return out
}

func conditionStatus(o *unstructured.Unstructured, typ string) string {
	s, _ := conditions(o)[typ]["status"].(string)
	return s
}

func conditionMessage(o *unstructured.Unstructured, typ string) string {
	s, _ := conditions(o)[typ]["message"].(string)
	return s
}

// waitFor polls cond until it holds, failing the test when ctx ends first.
func waitFor(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
