package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// controllerNamespaces is how many namespaces testControllersActOnce
// puts through the controllers.
const controllerNamespaces = 6

var (
	namespaces      = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	serviceAccounts = schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}
	resourceQuotas  = schema.GroupVersionResource{Version: "v1", Resource: "resourcequotas"}
)

// quotaRoom is the ConfigMaps each namespace's quota allows: its
// kube-root-ca.crt and the 7 the test creates.
const quotaRoom = 8

// testControllersActOnce runs the controllers that must act once while
// every replica runs them: each new namespace gets its default
// ServiceAccount, a ResourceQuota charged through every replica admits
// exactly what it has room for and gets deleted objects' usage back, the
// garbage collector deletes an owner's dependents, namespace deletion
// empties and removes namespaces. etcd's own history,
// watched meanwhile, must show each action exactly once: one create of
// each ServiceAccount (never a second one), one delete of each object.
func testControllersActOnce(t *testing.T, c *Cluster) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	via := replicaClients(t, c)

	cli, err := c.EtcdClient()
	must(t, err)
	defer cli.Close()
	history := watchKeys(ctx, t, cli, "/registry/")

	obj := func(kind, name string, extra map[string]any) *unstructured.Unstructured {
		md := map[string]any{"name": name}
		for k, v := range extra {
			md[k] = v
		}
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": kind, "metadata": md}}
	}
	// usedConfigMaps is namespace ns's quota's count of its ConfigMaps,
	// as replica i answers it ("" until counted).
	usedConfigMaps := func(i int, ns string) string {
		q, err := via(i).Resource(resourceQuotas).Namespace(ns).Get(ctx, "room", metav1.GetOptions{})
		if err != nil {
			return ""
		}
		used, _, _ := unstructured.NestedString(q.Object, "status", "used", "count/configmaps")
		return used
	}
	for i := range controllerNamespaces {
		ns := fmt.Sprintf("ctl-%d", i)
		_, err := via(i).Resource(namespaces).Create(ctx, obj("Namespace", ns, nil), metav1.CreateOptions{})
		must(t, err)
		// Every replica charges the creates below to the quota, and
		// every replica's quota controller counts it.
		quota := obj("ResourceQuota", "room", map[string]any{"namespace": ns})
		quota.Object["spec"] = map[string]any{"hard": map[string]any{"count/configmaps": fmt.Sprint(quotaRoom)}}
		_, err = via(i+2).Resource(resourceQuotas).Namespace(ns).Create(ctx, quota, metav1.CreateOptions{})
		must(t, err)
		waitFor(ctx, t, ns+" quota counting its kube-root-ca.crt", func() bool { return usedConfigMaps(i, ns) == "1" })
		cms := via(i + 1).Resource(configMaps).Namespace(ns)
		owner, err := cms.Create(ctx, obj("ConfigMap", "owner", nil), metav1.CreateOptions{})
		must(t, err)
		ref := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": string(owner.GetUID())}
		for j := range 3 {
			_, err := cms.Create(ctx, obj("ConfigMap", fmt.Sprintf("dep-%d", j), map[string]any{"ownerReferences": []any{ref}}), metav1.CreateOptions{})
			must(t, err)
			_, err = cms.Create(ctx, obj("ConfigMap", fmt.Sprintf("plain-%d", j), nil), metav1.CreateOptions{})
			must(t, err)
		}
	}
	// The quotas are full: one more ConfigMap is refused through any
	// replica, and each counts what is stored.
	for i := range controllerNamespaces {
		ns := fmt.Sprintf("ctl-%d", i)
		_, err := via(i).Resource(configMaps).Namespace(ns).Create(ctx, obj("ConfigMap", "over", nil), metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "exceeded quota: room") {
			t.Errorf("%s: a ConfigMap past the quota: %v, want it refused", ns, err)
		}
		if got := usedConfigMaps(i+1, ns); got != fmt.Sprint(quotaRoom) {
			t.Errorf("%s: quota counts %s ConfigMaps, want %d", ns, got, quotaRoom)
		}
	}
	// Every replica runs the service account controller; each namespace
	// must get its account.
	for i := range controllerNamespaces {
		ns := fmt.Sprintf("ctl-%d", i)
		waitFor(ctx, t, ns+"/default ServiceAccount", func() bool {
			_, err := via(i+2).Resource(serviceAccounts).Namespace(ns).Get(ctx, "default", metav1.GetOptions{})
			return err == nil
		})
	}
	// Owners go: every replica's garbage collector sees the dependents.
	for i := range controllerNamespaces {
		ns := fmt.Sprintf("ctl-%d", i)
		must(t, via(i).Resource(configMaps).Namespace(ns).Delete(ctx, "owner", metav1.DeleteOptions{}))
	}
	for i := range controllerNamespaces {
		ns := fmt.Sprintf("ctl-%d", i)
		for j := range 3 {
			waitFor(ctx, t, fmt.Sprintf("%s/dep-%d deleted", ns, j), func() bool {
				_, err := via(i+1).Resource(configMaps).Namespace(ns).Get(ctx, fmt.Sprintf("dep-%d", j), metav1.GetOptions{})
				return apierrors.IsNotFound(err)
			})
		}
	}
	// Their usage comes back: owner and dependents, 4 of the 8.
	for i := range controllerNamespaces {
		ns := fmt.Sprintf("ctl-%d", i)
		waitFor(ctx, t, ns+" quota counting the deletions", func() bool { return usedConfigMaps(i+2, ns) == fmt.Sprint(quotaRoom-4) })
	}
	// Namespaces go: every replica's namespace controller empties them.
	for i := range controllerNamespaces {
		must(t, via(i).Resource(namespaces).Delete(ctx, fmt.Sprintf("ctl-%d", i), metav1.DeleteOptions{}))
	}
	start := time.Now()
	for i := range controllerNamespaces {
		ns := fmt.Sprintf("ctl-%d", i)
		waitFor(ctx, t, "namespace "+ns+" finalized", func() bool {
			_, err := via(i+2).Resource(namespaces).Get(ctx, ns, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		})
	}
	finalized := time.Since(start)

	history.stop()
	creates, deletes := history.creates, history.deletes
	var objects, doubles int
	for k, n := range creates {
		if !strings.Contains(k, "/ctl-") {
			continue
		}
		objects++
		if n != 1 || deletes[k] != 1 {
			doubles++
			t.Errorf("%s: created %d times, deleted %d times; want once each", k, n, deletes[k])
		}
	}
	for i := range controllerNamespaces {
		sa := fmt.Sprintf("/registry/serviceaccounts/ctl-%d/default", i)
		if creates[sa] != 1 {
			t.Errorf("%s created %d times, want 1", sa, creates[sa])
		}
	}
	t.Logf("controllers on %d replicas: %d objects in %d namespaces, each created and deleted once (%d not); namespaces finalized %v after their deletion",
		len(c.Replicas), objects, controllerNamespaces, doubles, finalized.Round(time.Millisecond))
}

// replicaClients returns a client of each replica, by index modulo
// their number.
func replicaClients(t *testing.T, c *Cluster) func(i int) dynamic.Interface {
	t.Helper()
	var dyn []dynamic.Interface
	for _, r := range c.Replicas {
		cfg, err := r.Config()
		must(t, err)
		dyn = append(dyn, dynamic.NewForConfigOrDie(cfg))
	}
	return func(i int) dynamic.Interface { return dyn[i%len(dyn)] }
}

// waitFor polls cond until it holds or ctx ends.
func waitFor(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
