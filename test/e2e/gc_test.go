package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// The garbage collector's tests. Upstream's garbage_collector.go e2e cases
// use ReplicationControllers, Deployments, ReplicaSets and their pods; here
// no controller creates pods, so each case builds the same owner graph by
// hand from custom resources (Widgets owning Gadgets, as an RC owns pods)
// and Services, and checks what upstream checks of it.

var (
	widgetsGVR  = schema.GroupVersionResource{Group: "gc.example.com", Version: "v1", Resource: "widgets"}
	gadgetsGVR  = schema.GroupVersionResource{Group: "gc.example.com", Version: "v1", Resource: "gadgets"}
	racksGVR    = schema.GroupVersionResource{Group: "gc.example.com", Version: "v1", Resource: "racks"} // cluster-scoped
	servicesGVR = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	crdsGVR     = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

func TestGarbageCollector(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())
	g := &gcEnv{t: t, srv: srv, ctx: testContext(t, 5*time.Minute)}
	for _, c := range []struct{ kind, plural, scope string }{
		{"Widget", "widgets", "Namespaced"}, {"Gadget", "gadgets", "Namespaced"}, {"Rack", "racks", "Cluster"},
	} {
		g.createCRD(c.kind, c.plural, c.scope)
	}
	t.Run("background", g.testBackground)
	t.Run("foreground", g.testForeground)
	t.Run("orphan", g.testOrphan)
	t.Run("kubectl cascade", g.testKubectlCascade)
	t.Run("valid and waiting owners", g.testValidAndWaitingOwners)
	t.Run("dependency circle", g.testCircle)
	t.Run("cluster-scoped owner", g.testClusterScopedOwner)
	t.Run("dangling references", g.testDangling)
	t.Run("namespace deletion", g.testNamespaceDeletion)
	t.Run("crd deletion", g.testCRDDeletion)
}

type gcEnv struct {
	t   *testing.T
	srv *server
	ctx context.Context
}

func (g *gcEnv) createCRD(kind, plural, scope string) {
	g.t.Helper()
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": plural + ".gc.example.com"},
		"spec": map[string]any{
			"group": "gc.example.com", "scope": scope,
			"names": map[string]any{"plural": plural, "kind": kind},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
		},
	}}
	if _, err := g.srv.Dynamic.Resource(crdsGVR).Create(g.ctx, crd, metav1.CreateOptions{}); err != nil {
		g.t.Fatalf("creating CRD %s: %v", plural, err)
	}
	gvr := schema.GroupVersionResource{Group: "gc.example.com", Version: "v1", Resource: plural}
	waitFor(g.t, 30*time.Second, plural+" served", func() (bool, error) {
		_, err := g.srv.Dynamic.Resource(gvr).List(g.ctx, metav1.ListOptions{})
		return err == nil, err
	})
}

func (g *gcEnv) namespace(name string) {
	g.t.Helper()
	if _, err := g.srv.Client.CoreV1().Namespaces().Create(g.ctx, namespace(name), metav1.CreateOptions{}); err != nil {
		g.t.Fatalf("creating namespace %s: %v", name, err)
	}
}

func (g *gcEnv) resource(gvr schema.GroupVersionResource, ns string) dynamic.ResourceInterface {
	if ns == "" {
		return g.srv.Dynamic.Resource(gvr)
	}
	return g.srv.Dynamic.Resource(gvr).Namespace(ns)
}

// create makes an object of gvr named ns/name, owned by owners, with
// finalizers.
func (g *gcEnv) create(gvr schema.GroupVersionResource, ns, name string, owners []metav1.OwnerReference, finalizers ...string) *unstructured.Unstructured {
	g.t.Helper()
	kinds := map[string]string{"widgets": "Widget", "gadgets": "Gadget", "racks": "Rack", "crates": "Crate", "services": "Service"}
	obj := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}
	obj.SetAPIVersion(gvr.GroupVersion().String())
	obj.SetKind(kinds[gvr.Resource])
	obj.SetName(name)
	obj.SetOwnerReferences(owners)
	obj.SetFinalizers(finalizers)
	if gvr == servicesGVR {
		obj.Object["spec"] = map[string]any{"ports": []any{map[string]any{"port": int64(80)}}}
	}
	out, err := g.resource(gvr, ns).Create(g.ctx, obj, metav1.CreateOptions{})
	if err != nil {
		g.t.Fatalf("creating %s %s/%s: %v", gvr.Resource, ns, name, err)
	}
	return out
}

func ref(owner *unstructured.Unstructured, block bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: owner.GetAPIVersion(), Kind: owner.GetKind(), Name: owner.GetName(), UID: owner.GetUID(), BlockOwnerDeletion: &block}
}

func refs(r ...metav1.OwnerReference) []metav1.OwnerReference { return r }

func (g *gcEnv) delete(gvr schema.GroupVersionResource, ns, name string, policy metav1.DeletionPropagation) {
	g.t.Helper()
	opts := metav1.DeleteOptions{}
	if policy != "" {
		opts.PropagationPolicy = &policy
	}
	if err := g.resource(gvr, ns).Delete(g.ctx, name, opts); err != nil {
		g.t.Fatalf("deleting %s %s/%s: %v", gvr.Resource, ns, name, err)
	}
}

func (g *gcEnv) get(gvr schema.GroupVersionResource, ns, name string) (*unstructured.Unstructured, error) {
	return g.resource(gvr, ns).Get(g.ctx, name, metav1.GetOptions{})
}

// waitGone waits until ns/name of gvr no longer exists.
func (g *gcEnv) waitGone(gvr schema.GroupVersionResource, ns, name string) {
	g.t.Helper()
	waitFor(g.t, 30*time.Second, fmt.Sprintf("%s %s/%s deleted", gvr.Resource, ns, name), func() (bool, error) {
		_, err := g.get(gvr, ns, name)
		return apierrors.IsNotFound(err), err
	})
}

// stays checks that ns/name of gvr still exists a while later, and
// returns it.
func (g *gcEnv) stays(gvr schema.GroupVersionResource, ns, name string) *unstructured.Unstructured {
	g.t.Helper()
	time.Sleep(time.Second)
	obj, err := g.get(gvr, ns, name)
	if err != nil {
		g.t.Fatalf("%s %s/%s: %v", gvr.Resource, ns, name, err)
	}
	return obj
}

// Upstream: "should delete RS created by deployment when not orphaning",
// "should support cascading deletion of custom resources", and a custom
// resource owning a built-in (a Service).
func (g *gcEnv) testBackground(t *testing.T) {
	g.t = t
	g.namespace("gc-background")
	ns := "gc-background"
	owner := g.create(widgetsGVR, ns, "owner", nil)
	g.create(gadgetsGVR, ns, "g1", refs(ref(owner, false)))
	g.create(gadgetsGVR, ns, "g2", refs(ref(owner, true)))
	g.create(servicesGVR, ns, "svc", refs(ref(owner, false)))
	g.delete(widgetsGVR, ns, "owner", "") // the default is Background
	g.waitGone(widgetsGVR, ns, "owner")
	g.waitGone(gadgetsGVR, ns, "g1")
	g.waitGone(gadgetsGVR, ns, "g2")
	g.waitGone(servicesGVR, ns, "svc")
}

// Upstream: "should keep the rc around until all its pods are deleted if
// the deleteOptions says so". A finalizer on a dependent holds it, as a
// pod's graceful termination holds it upstream.
func (g *gcEnv) testForeground(t *testing.T) {
	g.t = t
	ns := "gc-foreground"
	g.namespace(ns)
	owner := g.create(widgetsGVR, ns, "owner", nil)
	g.create(gadgetsGVR, ns, "blocking", refs(ref(owner, true)), "example.com/hold")
	g.create(gadgetsGVR, ns, "nonblocking", refs(ref(owner, false)))
	g.delete(widgetsGVR, ns, "owner", metav1.DeletePropagationForeground)

	// The owner waits, marked, for its blocking dependent.
	g.waitGone(gadgetsGVR, ns, "nonblocking")
	waitFor(t, 30*time.Second, "blocking dependent marked deleted", func() (bool, error) {
		d, err := g.get(gadgetsGVR, ns, "blocking")
		return err == nil && d.GetDeletionTimestamp() != nil, err
	})
	o := g.stays(widgetsGVR, ns, "owner")
	if o.GetDeletionTimestamp() == nil || !slices.Contains(o.GetFinalizers(), metav1.FinalizerDeleteDependents) {
		t.Fatalf("owner while its dependent remains: deletionTimestamp %v, finalizers %q", o.GetDeletionTimestamp(), o.GetFinalizers())
	}
	// Once the dependent goes, so does the owner.
	g.patch(gadgetsGVR, ns, "blocking", `{"metadata":{"finalizers":null}}`)
	g.waitGone(gadgetsGVR, ns, "blocking")
	g.waitGone(widgetsGVR, ns, "owner")
}

func (g *gcEnv) patch(gvr schema.GroupVersionResource, ns, name, patch string) {
	g.t.Helper()
	if _, err := g.resource(gvr, ns).Patch(g.ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		g.t.Fatalf("patching %s %s/%s: %v", gvr.Resource, ns, name, err)
	}
}

// Upstream: "should orphan pods created by rc if delete options say so",
// "should orphan RS created by deployment when deleteOptions.PropagationPolicy
// is Orphan", "should support orphan deletion of custom resources".
func (g *gcEnv) testOrphan(t *testing.T) {
	g.t = t
	ns := "gc-orphan"
	g.namespace(ns)
	owner := g.create(widgetsGVR, ns, "owner", nil)
	other := g.create(widgetsGVR, ns, "other", nil)
	g.create(gadgetsGVR, ns, "g1", refs(ref(owner, true)))
	g.create(gadgetsGVR, ns, "g2", refs(ref(owner, false), ref(other, false)))
	g.create(servicesGVR, ns, "svc", refs(ref(owner, false)))
	g.delete(widgetsGVR, ns, "owner", metav1.DeletePropagationOrphan)
	g.waitGone(widgetsGVR, ns, "owner")
	for _, d := range []struct {
		gvr  schema.GroupVersionResource
		name string
		want []types.UID
	}{{gadgetsGVR, "g1", nil}, {gadgetsGVR, "g2", []types.UID{other.GetUID()}}, {servicesGVR, "svc", nil}} {
		obj := g.stays(d.gvr, ns, d.name)
		var got []types.UID
		for _, r := range obj.GetOwnerReferences() {
			got = append(got, r.UID)
		}
		if !slices.Equal(got, d.want) {
			t.Errorf("%s owners after orphaning: %v, want %v", d.name, got, d.want)
		}
	}

	// The legacy option, as old clients send it.
	owner = g.create(widgetsGVR, ns, "legacy", nil)
	g.create(gadgetsGVR, ns, "g3", refs(ref(owner, false)))
	if err := g.resource(widgetsGVR, ns).Delete(g.ctx, "legacy", metav1.DeleteOptions{OrphanDependents: ptr(true)}); err != nil { //nolint:staticcheck // the legacy option under test
		t.Fatal(err)
	}
	g.waitGone(widgetsGVR, ns, "legacy")
	if obj := g.stays(gadgetsGVR, ns, "g3"); len(obj.GetOwnerReferences()) != 0 {
		t.Errorf("g3 owners after orphaning: %v", obj.GetOwnerReferences())
	}
}

// kubectl delete --cascade sends the propagation policy.
func (g *gcEnv) testKubectlCascade(t *testing.T) {
	g.t = t
	ns := "gc-kubectl"
	g.namespace(ns)
	owner := g.create(widgetsGVR, ns, "orphaning", nil)
	g.create(gadgetsGVR, ns, "kept", refs(ref(owner, true)))
	kubectl(t, g.srv, "delete", "-n", ns, "widgets.gc.example.com", "orphaning", "--cascade=orphan")
	g.waitGone(widgetsGVR, ns, "orphaning")
	if obj := g.stays(gadgetsGVR, ns, "kept"); len(obj.GetOwnerReferences()) != 0 {
		t.Errorf("kept owners after --cascade=orphan: %v", obj.GetOwnerReferences())
	}
	owner = g.create(widgetsGVR, ns, "foreground", nil)
	g.create(gadgetsGVR, ns, "goes", refs(ref(owner, true)))
	// kubectl waits for the owner to be gone, which takes the dependent.
	kubectl(t, g.srv, "delete", "-n", ns, "widgets.gc.example.com", "foreground", "--cascade=foreground", "--timeout=30s")
	g.waitGone(gadgetsGVR, ns, "goes")
	g.waitGone(widgetsGVR, ns, "foreground")
}

// Upstream: "should not delete dependents that have both valid owner and
// owner that's waiting for dependents to be deleted".
func (g *gcEnv) testValidAndWaitingOwners(t *testing.T) {
	g.t = t
	ns := "gc-two-owners"
	g.namespace(ns)
	toDelete := g.create(widgetsGVR, ns, "to-delete", nil)
	toStay := g.create(widgetsGVR, ns, "to-stay", nil)
	for i := range 6 {
		owners := refs(ref(toDelete, true))
		if i%2 == 0 {
			owners = append(owners, ref(toStay, true))
		}
		g.create(gadgetsGVR, ns, fmt.Sprintf("g%d", i), owners)
	}
	g.delete(widgetsGVR, ns, "to-delete", metav1.DeletePropagationForeground)
	g.waitGone(widgetsGVR, ns, "to-delete")
	for i := range 6 {
		name := fmt.Sprintf("g%d", i)
		if i%2 == 1 {
			g.waitGone(gadgetsGVR, ns, name)
			continue
		}
		obj := g.stays(gadgetsGVR, ns, name)
		if rs := obj.GetOwnerReferences(); len(rs) != 1 || rs[0].UID != toStay.GetUID() {
			t.Errorf("%s owners: %v, want only to-stay", name, rs)
		}
	}
	g.stays(widgetsGVR, ns, "to-stay")
}

// Upstream: "should not be blocked by dependency circle": three objects
// owning each other in a circle go once one of them is deleted.
func (g *gcEnv) testCircle(t *testing.T) {
	g.t = t
	ns := "gc-circle"
	g.namespace(ns)
	a := g.create(gadgetsGVR, ns, "a", nil)
	b := g.create(gadgetsGVR, ns, "b", refs(ref(a, true)))
	c := g.create(gadgetsGVR, ns, "c", refs(ref(b, true)))
	a.SetOwnerReferences(refs(ref(c, true)))
	if _, err := g.resource(gadgetsGVR, ns).Update(g.ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	g.delete(gadgetsGVR, ns, "a", "")
	for _, n := range []string{"a", "b", "c"} {
		g.waitGone(gadgetsGVR, ns, n)
	}

	// In the foreground, each waits for the next: the collector breaks
	// the circle by unblocking, as upstream does.
	a = g.create(gadgetsGVR, ns, "fa", nil)
	b = g.create(gadgetsGVR, ns, "fb", refs(ref(a, true)))
	c = g.create(gadgetsGVR, ns, "fc", refs(ref(b, true)))
	a.SetOwnerReferences(refs(ref(c, true)))
	if _, err := g.resource(gadgetsGVR, ns).Update(g.ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	g.delete(gadgetsGVR, ns, "fa", metav1.DeletePropagationForeground)
	for _, n := range []string{"fa", "fb", "fc"} {
		g.waitGone(gadgetsGVR, ns, n)
	}
}

// A cluster-scoped owner (a custom resource) of namespaced dependents, of
// a custom and a built-in kind, in two namespaces.
func (g *gcEnv) testClusterScopedOwner(t *testing.T) {
	g.t = t
	g.namespace("gc-cluster-a")
	g.namespace("gc-cluster-b")
	rack := g.create(racksGVR, "", "rack", nil)
	g.create(gadgetsGVR, "gc-cluster-a", "g", refs(ref(rack, false)))
	g.create(servicesGVR, "gc-cluster-b", "svc", refs(ref(rack, false)))
	// A cluster-scoped dependent of a cluster-scoped owner.
	g.create(racksGVR, "", "shelf", refs(ref(rack, true)))
	g.delete(racksGVR, "", "rack", "")
	g.waitGone(gadgetsGVR, "gc-cluster-a", "g")
	g.waitGone(servicesGVR, "gc-cluster-b", "svc")
	g.waitGone(racksGVR, "", "shelf")
}

// References to owners that never existed, or that exist in another
// namespace (owners are looked up in the dependent's namespace), dangle:
// their dependents go. A cluster-scoped object naming a namespaced owner is
// left alone, as upstream leaves it.
func (g *gcEnv) testDangling(t *testing.T) {
	g.t = t
	g.namespace("gc-dangling")
	g.namespace("gc-elsewhere")
	ns := "gc-dangling"
	ghost := metav1.OwnerReference{APIVersion: "gc.example.com/v1", Kind: "Widget", Name: "ghost", UID: "6d5c8b4e-0000-4000-8000-000000000001"}
	g.create(gadgetsGVR, ns, "of-ghost", refs(ghost))
	g.create(servicesGVR, ns, "svc-of-ghost", refs(ghost))
	elsewhere := g.create(widgetsGVR, "gc-elsewhere", "owner", nil)
	g.create(gadgetsGVR, ns, "cross-namespace", refs(ref(elsewhere, false)))
	rack := g.create(racksGVR, "", "of-namespaced", refs(ref(elsewhere, false)))
	g.waitGone(gadgetsGVR, ns, "of-ghost")
	g.waitGone(servicesGVR, ns, "svc-of-ghost")
	g.waitGone(gadgetsGVR, ns, "cross-namespace")
	g.stays(widgetsGVR, "gc-elsewhere", "owner")
	g.stays(racksGVR, "", rack.GetName())
}

// Deleting a namespace deletes its objects, owners and dependents alike,
// and its conditions say so once done.
func (g *gcEnv) testNamespaceDeletion(t *testing.T) {
	g.t = t
	ns := "gc-namespace"
	g.namespace(ns)
	owner := g.create(widgetsGVR, ns, "owner", nil)
	g.create(gadgetsGVR, ns, "g", refs(ref(owner, true)))
	g.create(servicesGVR, ns, "svc", refs(ref(owner, true)))
	// An owner elsewhere of an object in the namespace, and the reverse.
	rack := g.create(racksGVR, "", "ns-rack", nil)
	g.create(gadgetsGVR, ns, "racked", refs(ref(rack, false)))
	g.create(racksGVR, "", "ns-dependent", refs(ref(owner, false))) // invalid: stays
	// A finalizer holds one dependent: the conditions say so, in
	// upstream's words.
	g.create(gadgetsGVR, ns, "held", refs(ref(owner, true)), "example.com/hold")
	if err := g.srv.Client.CoreV1().Namespaces().Delete(g.ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want := map[corev1.NamespaceConditionType]string{
		corev1.NamespaceDeletionDiscoveryFailure: "False ResourcesDiscovered All resources successfully discovered",
		corev1.NamespaceDeletionGVParsingFailure: "False ParsedGroupVersions All legacy kube types successfully parsed",
		corev1.NamespaceDeletionContentFailure:   "False ContentDeleted All content successfully deleted, may be waiting on finalization",
		corev1.NamespaceContentRemaining:         "True SomeResourcesRemain Some resources are remaining: gadgets.gc.example.com has 1 resource instances",
		corev1.NamespaceFinalizersRemaining:      "True SomeFinalizersRemain Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances",
	}
	var got map[corev1.NamespaceConditionType]string
	waitFor(t, 30*time.Second, "conditions of the held namespace", func() (bool, error) {
		n, err := g.srv.Client.CoreV1().Namespaces().Get(g.ctx, ns, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got = map[corev1.NamespaceConditionType]string{}
		for _, c := range n.Status.Conditions {
			got[c.Type] = fmt.Sprintf("%s %s %s", c.Status, c.Reason, c.Message)
		}
		return maps.Equal(got, want), fmt.Errorf("conditions %q", got)
	})
	g.patch(gadgetsGVR, ns, "held", `{"metadata":{"finalizers":null}}`)
	waitFor(t, 60*time.Second, "namespace gone", func() (bool, error) {
		_, err := g.srv.Client.CoreV1().Namespaces().Get(g.ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
	g.stays(racksGVR, "", "ns-rack")
}

// Deleting a CRD deletes its instances, and the garbage collector their
// dependents, of other kinds.
func (g *gcEnv) testCRDDeletion(t *testing.T) {
	g.t = t
	ns := "gc-crd"
	g.namespace(ns)
	g.createCRD("Crate", "crates", "Namespaced")
	cratesGVR := schema.GroupVersionResource{Group: "gc.example.com", Version: "v1", Resource: "crates"}
	crate := g.create(cratesGVR, ns, "crate", nil)
	g.create(gadgetsGVR, ns, "in-crate", refs(ref(crate, true)))
	g.create(servicesGVR, ns, "crate-svc", refs(ref(crate, false)))
	if err := g.resource(crdsGVR, "").Delete(g.ctx, "crates.gc.example.com", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	g.waitGone(crdsGVR, "", "crates.gc.example.com")
	g.waitGone(gadgetsGVR, ns, "in-crate")
	g.waitGone(servicesGVR, ns, "crate-svc")
}
