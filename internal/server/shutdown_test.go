package server_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/crdserver/crdserver/internal/server"
)

// recorder keeps the log records at Warn and above.
type recorder struct {
	mu      sync.Mutex
	records []string
}

func (r *recorder) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	s := rec.Level.String() + " " + rec.Message
	rec.Attrs(func(a slog.Attr) bool {
		s += " " + a.String()
		return true
	})
	r.mu.Lock()
	r.records = append(r.records, s)
	r.mu.Unlock()
	return nil
}
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recorder) WithGroup(string) slog.Handler      { return r }

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.records
	r.records = nil
	return out
}

var (
	crdGVR     = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	nsGVR      = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	gadgetsGVR = schema.GroupVersionResource{Group: "shutdown.example.com", Version: "v1", Resource: "gadgets"}
)

// Shutdown while both controllers are deleting (a terminating namespace's
// contents, a deleted CRD's instances) waits for them before it closes
// storage: nothing fails against closed storage, so nothing is logged, and
// the race detector sees no controller outliving the stores.
func TestShutdownWaitsForControllers(t *testing.T) {
	rec := &recorder{}
	prev := slog.Default()
	slog.SetDefault(slog.New(rec))
	t.Cleanup(func() { slog.SetDefault(prev) })

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := server.Start(ctx, server.Config{DataDir: t.TempDir(), BindAddress: "127.0.0.1", ShutdownTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = s.Shutdown()
		}
	})
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 1000, 2000
	waitReady(ctx, t, cfg, s.URL)
	dc := dynamic.NewForConfigOrDie(cfg)

	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": "gadgets.shutdown.example.com"},
		"spec": map[string]any{
			"group": "shutdown.example.com",
			"scope": "Namespaced",
			"names": map[string]any{"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
			}},
		},
	}}
	if _, err := dc.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the CRD: %v", err)
	}
	for _, name := range []string{"busy", "other"} {
		ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}}}
		if _, err := dc.Resource(nsGVR).Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating namespace %s: %v", name, err)
		}
	}
	// Enough gadgets that deleting them takes a while.
	const perNamespace = 150
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < 2*perNamespace; i += 8 {
				ns := []string{"busy", "other"}[i%2]
				g := &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": "shutdown.example.com/v1", "kind": "Gadget",
					"metadata": map[string]any{"name": fmt.Sprintf("g%d", i)},
				}}
				for {
					_, err := dc.Resource(gadgetsGVR).Namespace(ns).Create(ctx, g, metav1.CreateOptions{})
					if err == nil {
						break
					}
					if !apierrors.IsNotFound(err) || ctx.Err() != nil { // not served yet: retry
						errs <- err
						return
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("creating gadgets: %v", err)
	}

	// Both controllers start deleting; shut down while they are at it.
	if err := dc.Resource(nsGVR).Delete(ctx, "busy", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting namespace: %v", err)
	}
	if err := dc.Resource(crdGVR).Delete(ctx, "gadgets.shutdown.example.com", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting the CRD: %v", err)
	}
	waitBusy(ctx, t, dc)
	if logged := rec.take(); len(logged) > 0 {
		t.Logf("logged before shutdown (not checked): %q", logged)
	}
	stopped = true
	if err := s.Shutdown(); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	for _, l := range rec.take() {
		t.Errorf("logged during shutdown: %s", l)
	}
}

// waitBusy waits until the controllers have deleted some gadgets, so that
// they are mid-way when the server shuts down.
func waitBusy(ctx context.Context, t *testing.T, dc dynamic.Interface) {
	t.Helper()
	for ctx.Err() == nil {
		l, err := dc.Resource(gadgetsGVR).List(ctx, metav1.ListOptions{})
		if err != nil || len(l.Items) < 2*150 {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

func waitReady(ctx context.Context, t *testing.T, cfg *rest.Config, url string) {
	t.Helper()
	c, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for ctx.Err() == nil {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/readyz", nil)
		if resp, err := c.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("server not ready")
}
