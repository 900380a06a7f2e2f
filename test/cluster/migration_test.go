package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// migrationObjects is how many custom objects testMigrationActsOnce
// migrates and then finalizes.
const migrationObjects = 60

var migrations = schema.GroupVersionResource{Group: "storagemigration.k8s.io", Version: "v1", Resource: "storageversionmigrations"}

// keyEvents counts, per etcd key under a prefix, the puts and deletes
// etcd's history shows from a revision on.
type keyEvents struct {
	puts, creates, deletes map[string]int
	stop                   func()
}

func watchKeys(ctx context.Context, t *testing.T, cli *clientv3.Client, prefix string) *keyEvents {
	t.Helper()
	resp, err := cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	must(t, err)
	wctx, cancel := context.WithCancel(ctx)
	ch := cli.Watch(wctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1))
	k := &keyEvents{puts: map[string]int{}, creates: map[string]int{}, deletes: map[string]int{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for wr := range ch {
			for _, ev := range wr.Events {
				key := string(ev.Kv.Key)
				switch {
				case ev.Type == clientv3.EventTypeDelete:
					k.deletes[key]++
				case ev.IsCreate():
					k.creates[key]++
				default:
					k.puts[key]++
				}
			}
		}
	}()
	// The history on loopback lags by milliseconds.
	k.stop = func() { time.Sleep(time.Second); cancel(); <-done }
	return k
}

// testMigrationActsOnce runs the two controllers whose double action the
// other tests do not show, while every replica runs them: a storage
// version migration, which must rewrite each object exactly once at the
// new storage version and leave storedVersions at it, and the finalization
// of a deleted CRD, which must delete each of its objects exactly once and
// then the CRD. etcd's history is the judge.
func testMigrationActsOnce(t *testing.T, c *Cluster) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	via := replicaClients(t, c)
	cli, err := c.EtcdClient()
	must(t, err)
	defer cli.Close()

	const group, plural, ns = "once.example.com", "migs", "mig-once"
	crdName := plural + "." + group
	mig1 := schema.GroupVersionResource{Group: group, Version: "v1", Resource: plural}
	_, err = via(0).Resource(namespaces).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns},
	}}, metav1.CreateOptions{})
	must(t, err)
	_, err = via(0).Resource(crds).Create(ctx, crdObject(group, plural, "Mig"), metav1.CreateOptions{})
	must(t, err)
	checkServed(t, c, "migs v1", time.Now(), group+"/v1", plural, true)
	for i := range migrationObjects {
		_, err := via(i).Resource(mig1).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": group + "/v1", "kind": "Mig",
			"metadata": map[string]any{"name": fmt.Sprintf("m-%d", i)},
			"spec":     map[string]any{"n": int64(i)},
		}}, metav1.CreateOptions{})
		must(t, err)
	}

	// v2 becomes the storage version; every replica must know it before
	// the migration, or one still writing v1 would only make it run again.
	patch := `{"spec":{"versions":[` + mustJSON(t, gadgetVersion("v1", false)) + `,` + mustJSON(t, gadgetVersion("v2", true)) + `]}}`
	_, err = via(1).Resource(crds).Patch(ctx, crdName, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	must(t, err)
	checkServed(t, c, "migs v2", time.Now(), group+"/v2", plural, true)
	for i := range c.Replicas {
		waitFor(ctx, t, fmt.Sprintf("replica %d storing migs at v2", i), func() bool {
			probe := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": group + "/v1", "kind": "Mig", "metadata": map[string]any{"name": fmt.Sprintf("probe-%d", i)},
			}}
			if _, err := via(i).Resource(mig1).Namespace(ns).Create(ctx, probe, metav1.CreateOptions{}); err != nil {
				t.Fatalf("probe through replica %d: %v", i, err)
			}
			kv, err := cli.Get(ctx, "/registry/"+group+"/"+plural+"/"+ns+"/"+probe.GetName())
			must(t, err)
			must(t, via(i).Resource(mig1).Namespace(ns).Delete(ctx, probe.GetName(), metav1.DeleteOptions{}))
			return len(kv.Kvs) == 1 && strings.Contains(string(kv.Kvs[0].Value), `"apiVersion":"`+group+`/v2"`)
		})
	}

	prefix := "/registry/" + group + "/" + plural + "/"
	history := watchKeys(ctx, t, cli, prefix)
	_, err = via(2).Resource(migrations).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "storagemigration.k8s.io/v1", "kind": "StorageVersionMigration",
		"metadata": map[string]any{"name": "migs-once"},
		"spec":     map[string]any{"resource": map[string]any{"group": group, "resource": plural}},
	}}, metav1.CreateOptions{})
	must(t, err)
	start := time.Now()
	waitFor(ctx, t, "the migration to succeed", func() bool {
		svm, err := via(0).Resource(migrations).Get(ctx, "migs-once", metav1.GetOptions{})
		must(t, err)
		conds, _, _ := unstructured.NestedSlice(svm.Object, "status", "conditions")
		for _, cond := range conds {
			m, _ := cond.(map[string]any)
			if m["type"] == "Failed" && m["status"] == "True" {
				t.Fatalf("the migration failed: %v", m["message"])
			}
			if m["type"] == "Succeeded" && m["status"] == "True" {
				return true
			}
		}
		return false
	})
	migrated := time.Since(start)
	history.stop()
	for i := range migrationObjects {
		key := fmt.Sprintf("%s%s/m-%d", prefix, ns, i)
		if n := history.puts[key]; n != 1 {
			t.Errorf("%s rewritten %d times by the migration, want once", key, n)
		}
	}
	if len(history.creates) > 0 || len(history.deletes) > 0 {
		t.Errorf("the migration created %v and deleted %v", history.creates, history.deletes)
	}
	resp, err := cli.Get(ctx, prefix, clientv3.WithPrefix())
	must(t, err)
	for _, kv := range resp.Kvs {
		if !strings.Contains(string(kv.Value), `"apiVersion":"`+group+`/v2"`) {
			t.Errorf("%s still stored as %.60s…", kv.Key, kv.Value)
		}
	}
	crd, err := via(1).Resource(crds).Get(ctx, crdName, metav1.GetOptions{})
	must(t, err)
	if stored, _, _ := unstructured.NestedStringSlice(crd.Object, "status", "storedVersions"); strings.Join(stored, ",") != "v2" {
		t.Errorf("storedVersions after the migration %v, want [v2]", stored)
	}

	// The CRD goes: every replica's finalizer deletes its objects.
	history = watchKeys(ctx, t, cli, "/registry/")
	must(t, via(0).Resource(crds).Delete(ctx, crdName, metav1.DeleteOptions{}))
	start = time.Now()
	for i := range c.Replicas {
		waitFor(ctx, t, fmt.Sprintf("replica %d to forget %s", i, crdName), func() bool {
			_, err := via(i).Resource(crds).Get(ctx, crdName, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		})
	}
	finalized := time.Since(start)
	history.stop()
	for i := range migrationObjects {
		key := fmt.Sprintf("%s%s/m-%d", prefix, ns, i)
		if n := history.deletes[key]; n != 1 {
			t.Errorf("%s deleted %d times by the CRD's finalization, want once", key, n)
		}
	}
	crdKey := "/registry/apiextensions.k8s.io/customresourcedefinitions/" + crdName
	if n := history.deletes[crdKey]; n != 1 {
		t.Errorf("%s deleted %d times, want once", crdKey, n)
	}
	for key, n := range history.creates {
		if strings.HasPrefix(key, prefix) || key == crdKey {
			t.Errorf("%s created %d times during the CRD's finalization", key, n)
		}
	}
	t.Logf("migration on %d replicas: %d objects rewritten once each in %v; CRD finalized, each object deleted once, in %v",
		len(c.Replicas), migrationObjects, migrated.Round(time.Millisecond), finalized.Round(time.Millisecond))
}
