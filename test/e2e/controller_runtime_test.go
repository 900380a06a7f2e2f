package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// gadgetsCRD is a namespaced custom resource with a status subresource,
// for an operator to reconcile.
const gadgetsCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.ops.example.com
spec:
  group: ops.example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget, listKind: GadgetList}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
              configMap: {type: string}
          status:
            type: object
            properties:
              observedSize: {type: integer}
              configData: {type: string}
`

var gadgetGVK = schema.GroupVersionKind{Group: "ops.example.com", Version: "v1", Kind: "Gadget"}

// TestControllerRuntime runs an operator as controller-runtime builds
// one against crdserver: a manager with leader election (a Lease), a
// cache on a custom resource and on ConfigMaps, a reconciler that writes
// status and records Events, and server-side apply through client.Apply.
func TestControllerRuntime(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())
	kubectl(t, srv, "apply", "-f", writeManifest(t, "gadgets.yaml", gadgetsCRD))
	waitEstablished(t, srv, "gadgets.ops.example.com")

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	ctrl.SetLogger(logr.Discard())
	mgr, err := ctrl.NewManager(srv.Config, ctrl.Options{
		Scheme:                  scheme,
		LeaderElection:          true,
		LeaderElectionID:        "gadget-operator",
		LeaderElectionNamespace: "default",
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:  "0",
	})
	if err != nil {
		t.Fatalf("new manager: %v", err)
	}
	recorder := mgr.GetEventRecorderFor("gadget-operator") //nolint:staticcheck // core/v1 Events, what kubectl get events shows
	gadget := &unstructured.Unstructured{}
	gadget.SetGroupVersionKind(gadgetGVK)
	r := reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		g := &unstructured.Unstructured{}
		g.SetGroupVersionKind(gadgetGVK)
		if err := mgr.GetClient().Get(ctx, req.NamespacedName, g); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
		size, _, _ := unstructured.NestedInt64(g.Object, "spec", "size")
		cmName, _, _ := unstructured.NestedString(g.Object, "spec", "configMap")
		data := ""
		if cmName != "" {
			var cm corev1.ConfigMap
			if err := mgr.GetClient().Get(ctx, client.ObjectKey{Namespace: req.Namespace, Name: cmName}, &cm); err == nil {
				data = cm.Data["value"]
			}
		}
		observed, _, _ := unstructured.NestedInt64(g.Object, "status", "observedSize")
		current, _, _ := unstructured.NestedString(g.Object, "status", "configData")
		if observed == size && current == data && g.Object["status"] != nil {
			return reconcile.Result{}, nil
		}
		if err := unstructured.SetNestedField(g.Object, size, "status", "observedSize"); err != nil {
			return reconcile.Result{}, err
		}
		if err := unstructured.SetNestedField(g.Object, data, "status", "configData"); err != nil {
			return reconcile.Result{}, err
		}
		if err := mgr.GetClient().Status().Update(ctx, g); err != nil {
			return reconcile.Result{}, err
		}
		recorder.Eventf(g, corev1.EventTypeNormal, "Reconciled", "size %d, config %q", size, data)
		return reconcile.Result{}, nil
	})
	// ConfigMaps are watched too: a change to one re-reconciles the
	// gadgets of its namespace that name it.
	err = builder.ControllerManagedBy(mgr).
		Named("gadgets").
		For(gadget).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(gadgetGVK.GroupVersion().WithKind("GadgetList"))
			if err := mgr.GetClient().List(ctx, list, client.InNamespace(o.GetNamespace())); err != nil {
				return nil
			}
			var out []reconcile.Request
			for _, g := range list.Items {
				if name, _, _ := unstructured.NestedString(g.Object, "spec", "configMap"); name == o.GetName() {
					out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&g)})
				}
			}
			return out
		})).
		Complete(r)
	if err != nil {
		t.Fatalf("building the controller: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})

	c, err := client.New(srv.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	tctx := testContext(t, time.Minute)

	// The leader's Lease.
	waitFor(t, 30*time.Second, "the leader election Lease", func() (bool, error) {
		out, _, err := kubectlResult(srv, "get", "lease", "gadget-operator", "-n", "default", "-o", "jsonpath={.spec.holderIdentity}")
		return err == nil && out != "", nil
	})

	// client.Apply: a ConfigMap and a gadget, by server-side apply.
	// (Apply writes the answer into the object it sends: each apply
	// starts from a fresh configuration.)
	configMap := func(value string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "gadget-config", "namespace": "default"},
			"data":     map[string]any{"value": value},
		}}
	}
	if err := c.Apply(tctx, client.ApplyConfigurationFromUnstructured(configMap("one")), client.FieldOwner("e2e"), client.ForceOwnership); err != nil {
		t.Fatalf("applying a ConfigMap: %v", err)
	}
	gadgetSpec := func(spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "ops.example.com/v1", "kind": "Gadget",
			"metadata": map[string]any{"name": "g1", "namespace": "default"},
			"spec":     spec,
		}}
	}
	if err := c.Apply(tctx, client.ApplyConfigurationFromUnstructured(gadgetSpec(map[string]any{"size": int64(3), "configMap": "gadget-config"})), client.FieldOwner("e2e")); err != nil {
		t.Fatalf("applying a Gadget: %v", err)
	}
	status := func() string {
		out, _, _ := kubectlResult(srv, "get", "gadget", "g1", "-n", "default", "-o", "jsonpath={.status.observedSize}/{.status.configData}")
		return out
	}
	waitFor(t, 30*time.Second, "the reconciler to write status", func() (bool, error) { return status() == "3/one", nil })

	// A ConfigMap change reaches the gadget through the ConfigMap cache.
	if err := c.Apply(tctx, client.ApplyConfigurationFromUnstructured(configMap("two")), client.FieldOwner("e2e"), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the reconciler to see the ConfigMap change", func() (bool, error) { return status() == "3/two", nil })

	// The apply recorded the manager; the reconciler's status writes
	// their own entry.
	mf := kubectl(t, srv, "get", "gadget", "g1", "-n", "default", "-o", "jsonpath={range .metadata.managedFields[*]}{.manager}/{.operation}/{.subresource};{end}")
	if !strings.Contains(mf, "e2e/Apply/;") || !strings.Contains(mf, "/Update/status;") {
		t.Errorf("managedFields of the gadget: %s", mf)
	}
	// A second owner of size conflicts, as upstream.
	err = c.Apply(tctx, client.ApplyConfigurationFromUnstructured(gadgetSpec(map[string]any{"size": int64(4)})), client.FieldOwner("intruder"))
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), `conflict with "e2e": .spec.size`) {
		t.Errorf("a second manager applying size: %v", err)
	}

	// A merge patch with the optimistic lock (the object's
	// resourceVersion in the patch) is refused on a copy someone changed
	// since, as upstream refuses it, rather than overwrite the change.
	read := &corev1.ConfigMap{}
	if err := c.Get(tctx, client.ObjectKey{Namespace: "default", Name: "gadget-config"}, read); err != nil {
		t.Fatal(err)
	}
	first, second := read.DeepCopy(), read.DeepCopy()
	first.Labels = map[string]string{"edited": "first"}
	if err := c.Patch(tctx, first, client.MergeFromWithOptions(read, client.MergeFromWithOptimisticLock{})); err != nil {
		t.Fatalf("a locked merge patch of the current copy: %v", err)
	}
	second.Labels = map[string]string{"edited": "second"}
	if err := c.Patch(tctx, second, client.MergeFromWithOptions(read, client.MergeFromWithOptimisticLock{})); !apierrors.IsConflict(err) {
		t.Errorf("a locked merge patch of a stale copy: %v, want a conflict", err)
	}
	if got := &(corev1.ConfigMap{}); c.Get(tctx, client.ObjectKey{Namespace: "default", Name: "gadget-config"}, got) != nil || got.Labels["edited"] != "first" {
		t.Errorf("after the refused patch, labels %v", got.Labels)
	}

	// The Events, as kubectl shows them.
	waitFor(t, 30*time.Second, "the reconciler's events", func() (bool, error) {
		out, _, err := kubectlResult(srv, "get", "events", "-n", "default", "--field-selector", "involvedObject.name=g1", "-o", "jsonpath={range .items[*]}{.reason}:{.message};{end}")
		return err == nil && strings.Contains(out, `Reconciled:size 3, config "two"`), nil
	})
	out := kubectl(t, srv, "events", "-n", "default", "--for", "gadget.ops.example.com/g1")
	if !strings.Contains(out, "Reconciled") || !strings.Contains(out, "Gadget/g1") {
		t.Errorf("kubectl events --for gadget/g1:\n%s", out)
	}
}
