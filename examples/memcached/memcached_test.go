package memcached_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/crdserver/crdserver/examples/memcached"
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	os.Exit(m.Run())
}

// operator is one test's API server with the operator running against it.
type operator struct {
	client client.Client
	// reader reads the server, not the manager's cache.
	reader client.Reader
	mu     sync.Mutex
	// cleaned records the Memcacheds Cleanup ran for.
	cleaned []string
}

// startOperator starts an environment with the operator's CRD and
// webhook configuration, and a manager running its controller and
// webhook, all stopped when t ends.
func startOperator(t *testing.T) *operator {
	t.Helper()
	env := &environment{
		CRDDirectoryPaths:     []string{filepath.Join("config", "crd")},
		ErrorIfCRDPathMissing: true,
		WebhookInstallOptions: webhookInstallOptions{Paths: []string{filepath.Join("config", "webhook")}},
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting the environment: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping the environment: %v", err)
		}
	})
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := memcached.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	wo := env.WebhookInstallOptions
	skip := true
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: wo.LocalServingHost, Port: wo.LocalServingPort, CertDir: wo.LocalServingCertDir,
		}),
		// Every parallel test runs a manager with the same controller.
		Controller: config.Controller{SkipNameValidation: &skip},
	})
	if err != nil {
		t.Fatal(err)
	}
	op := &operator{client: mgr.GetClient(), reader: mgr.GetAPIReader()}
	r := &memcached.Reconciler{Client: mgr.GetClient(), Cleanup: func(_ context.Context, m *memcached.Memcached) error {
		op.mu.Lock()
		defer op.mu.Unlock()
		op.cleaned = append(op.cleaned, m.Name)
		return nil
	}}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	if err := memcached.SetupWebhookWithManager(mgr); err != nil {
		t.Fatal(err)
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
	// The webhook must answer before the first write.
	eventually(t, "the webhook server to start", func() error { return mgr.GetWebhookServer().StartedChecker()(nil) })
	return op
}

// eventually retries check until it succeeds, failing t after 10s.
func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func newMemcached(name string, size int32) *memcached.Memcached {
	return &memcached.Memcached{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       memcached.MemcachedSpec{Size: size},
	}
}

// create creates a Memcached and waits for its Deployment.
func (op *operator) create(t *testing.T, name string, size int32) *memcached.Memcached {
	t.Helper()
	m := newMemcached(name, size)
	if err := op.client.Create(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	op.waitReplicas(t, name, size)
	return m
}

// waitReplicas waits for the Deployment name to have want replicas.
func (op *operator) waitReplicas(t *testing.T, name string, want int32) *appsv1.Deployment {
	t.Helper()
	var dep appsv1.Deployment
	eventually(t, fmt.Sprintf("deployment %s with %d replicas", name, want), func() error {
		if err := op.client.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: name}, &dep); err != nil {
			return err
		}
		if dep.Spec.Replicas == nil || *dep.Spec.Replicas != want {
			return fmt.Errorf("replicas %v", dep.Spec.Replicas)
		}
		return nil
	})
	return &dep
}

// A new Memcached gets a Deployment it owns, a finalizer, and a status
// naming the Deployment with an Available condition for its generation.
func TestCreate(t *testing.T) {
	t.Parallel()
	op := startOperator(t)
	m := op.create(t, "cache", 3)
	dep := op.waitReplicas(t, "cache", 3)
	owner := metav1.GetControllerOf(dep)
	if owner == nil || owner.Kind != "Memcached" || owner.Name != "cache" || owner.UID != m.UID {
		t.Errorf("deployment controller reference = %+v, want the Memcached %s", owner, m.UID)
	}
	eventually(t, "the status", func() error {
		var got memcached.Memcached
		if err := op.client.Get(t.Context(), client.ObjectKeyFromObject(m), &got); err != nil {
			return err
		}
		c := meta.FindStatusCondition(got.Status.Conditions, memcached.ConditionAvailable)
		switch {
		case got.Status.Deployment != "cache":
			return fmt.Errorf("status.deployment %q", got.Status.Deployment)
		case c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != got.Generation:
			return fmt.Errorf("condition %+v at generation %d", c, got.Generation)
		case len(got.Finalizers) != 1 || got.Finalizers[0] != memcached.Finalizer:
			return fmt.Errorf("finalizers %v", got.Finalizers)
		}
		return nil
	})
}

// The Deployment follows the spec, and a change made to it behind the
// controller's back is undone.
func TestScale(t *testing.T) {
	t.Parallel()
	op := startOperator(t)
	m := op.create(t, "scaled", 2)
	eventually(t, "the size update", func() error {
		if err := op.client.Get(t.Context(), client.ObjectKeyFromObject(m), m); err != nil {
			return err
		}
		m.Spec.Size = 4
		return op.client.Update(t.Context(), m)
	})
	dep := op.waitReplicas(t, "scaled", 4)
	one := int32(1)
	dep.Spec.Replicas = &one
	if err := op.client.Update(t.Context(), dep); err != nil {
		t.Fatal(err)
	}
	op.waitReplicas(t, "scaled", 4)
}

// Deleting a Memcached runs its cleanup, then it goes, and the
// garbage collector deletes the Deployment it owned.
func TestDelete(t *testing.T) {
	t.Parallel()
	op := startOperator(t)
	m := op.create(t, "doomed", 1)
	eventually(t, "the finalizer", func() error {
		if err := op.client.Get(t.Context(), client.ObjectKeyFromObject(m), m); err != nil {
			return err
		}
		if len(m.Finalizers) == 0 {
			return fmt.Errorf("no finalizer yet")
		}
		return nil
	})
	if err := op.client.Delete(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Memcached to go", func() error {
		err := op.client.Get(t.Context(), client.ObjectKeyFromObject(m), &memcached.Memcached{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (%v)", err)
	})
	op.mu.Lock()
	cleaned := append([]string(nil), op.cleaned...)
	op.mu.Unlock()
	// At least once: a finalizer's cleanup runs again when removing the
	// finalizer loses a race, so cleanups are written to be repeatable.
	if len(cleaned) == 0 || slices.ContainsFunc(cleaned, func(n string) bool { return n != "doomed" }) {
		t.Errorf("cleanup ran for %v, want for doomed only", cleaned)
	}
	if !hasGarbageCollector {
		return
	}
	eventually(t, "the garbage collector to delete the Deployment", func() error {
		err := op.client.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: "doomed"}, &appsv1.Deployment{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (%v)", err)
	})
}

// The validating webhook refuses sizes out of range, on create and on
// update, with its message.
func TestWebhook(t *testing.T) {
	t.Parallel()
	op := startOperator(t)
	for _, size := range []int32{0, memcached.MaxSize + 1} {
		err := op.client.Create(t.Context(), newMemcached(fmt.Sprint("size-", size), size))
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("spec.size %d: must be between 1 and %d", size, memcached.MaxSize)) {
			t.Errorf("creating size %d: err = %v, want the webhook's denial", size, err)
		}
	}
	m := newMemcached("ok", memcached.MaxSize)
	if err := op.client.Create(t.Context(), m); err != nil {
		t.Fatalf("creating size %d: %v", memcached.MaxSize, err)
	}
	// The reconciler writes the object too (finalizer, status): an update
	// from a stale copy is a conflict before admission, so retry those.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := op.reader.Get(t.Context(), client.ObjectKeyFromObject(m), m); err != nil {
			return err
		}
		m.Spec.Size = 9
		return op.client.Update(t.Context(), m)
	})
	if err == nil || !strings.Contains(err.Error(), "spec.size 9") {
		t.Errorf("updating to size 9: err = %v, want the webhook's denial", err)
	}
}
