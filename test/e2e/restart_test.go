package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// TestRestartKeepsState stops a server with SIGTERM and starts another on
// the same data directory: every object is there unchanged, and the CA, the
// serving certificate and the admin credentials are the same.
func TestRestartKeepsState(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv := startServer(t, dir)
	ctx := testContext(t, 60*time.Second)
	ns := srv.Client.CoreV1().Namespaces()
	for i := range 5 {
		n := namespace(fmt.Sprintf("keep-%d", i))
		n.Labels = map[string]string{"index": fmt.Sprint(i)}
		n.Annotations = map[string]string{"note": "kept"}
		if _, err := ns.Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ns.Patch(ctx, "keep-0", types.MergePatchType, []byte(`{"metadata":{"labels":{"patched":"yes"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, srv)
	listed, err := ns.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A write of another resource after it: the restarted server's
	// namespaces start at a later revision than the list's.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after-list"}}
	if _, err := srv.Client.CoreV1().ConfigMaps("keep-0").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	caBefore := srv.Config.CAData
	certBefore := srv.servedCertificate(t)
	adminBefore := srv.Config.CertData

	if took := srv.stop(t); took > 5*time.Second {
		t.Errorf("SIGTERM to exit took %v", took)
	}

	srv2 := startServer(t, dir)
	if !bytes.Equal(srv2.Config.CAData, caBefore) {
		t.Errorf("CA in admin.kubeconfig changed across the restart")
	}
	if !bytes.Equal(srv2.Config.CertData, adminBefore) {
		t.Errorf("admin client certificate in admin.kubeconfig changed across the restart")
	}
	if cert := srv2.servedCertificate(t); !bytes.Equal(cert.Raw, certBefore.Raw) {
		t.Errorf("served certificate changed across the restart: serial %v → %v", certBefore.SerialNumber, cert.SerialNumber)
	}
	after := snapshot(t, srv2)
	for name, b := range before {
		a, ok := after[name]
		switch {
		case !ok:
			t.Errorf("namespace %s lost across the restart", name)
		case a != b:
			t.Errorf("namespace %s changed across the restart:\nbefore %+v\nafter  %+v", name, b, a)
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			t.Errorf("namespace %s appeared across the restart", name)
		}
	}

	// Revisions go on from where they were.
	var maxRV string
	for _, b := range before {
		if !atLeast(maxRV, b.rv) {
			maxRV = b.rv
		}
	}
	// An informer's watch resumes across the restart from where it was,
	// without a 410 and a relist.
	w, err := srv2.Client.CoreV1().Namespaces().Watch(ctx, metav1.ListOptions{ResourceVersion: listed.ResourceVersion})
	if err != nil {
		t.Fatalf("watch from %s after restart: %v", listed.ResourceVersion, err)
	}
	defer w.Stop()
	created, err := srv2.Client.CoreV1().Namespaces().Create(ctx, namespace("after-restart"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create after restart: %v", err)
	}
	for ev := range w.ResultChan() {
		if ev.Type == watch.Error {
			t.Fatalf("watch from %s (before the restart) ended: %v", listed.ResourceVersion, apierrors.FromObject(ev.Object))
		}
		if n, ok := ev.Object.(*corev1.Namespace); ok && n.Name == "after-restart" {
			if ev.Type != watch.Added {
				t.Errorf("after-restart: %s event, want ADDED", ev.Type)
			}
			break
		}
	}
	if created.ResourceVersion == maxRV || !atLeast(created.ResourceVersion, maxRV) {
		t.Errorf("create after restart got resourceVersion %s, not after the last one before (%s)", created.ResourceVersion, maxRV)
	}
}

// nsState is what must survive a restart.
type nsState struct {
	uid, rv, created, phase string
	labels, annotations     string
}

func snapshot(t *testing.T, srv *server) map[string]nsState {
	t.Helper()
	list, err := srv.Client.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	out := map[string]nsState{}
	for _, n := range list.Items {
		out[n.Name] = nsState{
			uid: string(n.UID), rv: n.ResourceVersion, created: n.CreationTimestamp.UTC().String(),
			phase: string(n.Status.Phase), labels: fmt.Sprint(n.Labels), annotations: fmt.Sprint(n.Annotations),
		}
	}
	return out
}

// TestCrashKeepsAcknowledgedWrites kills the server with SIGKILL while eight
// clients create namespaces, restarts it on the same data directory, and
// checks that every create that was answered 2xx is there.
func TestCrashKeepsAcknowledgedWrites(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv := startServer(t, dir)
	ns := srv.Client.CoreV1().Namespaces()

	var (
		mu           sync.Mutex
		acked        = map[string]string{} // name → uid
		errsBefore   []error               // errors answered before the kill
		killed       atomic.Bool
		wg           sync.WaitGroup
		ctx, cancel  = context.WithCancel(context.Background())
		failedWrites atomic.Int64
	)
	defer cancel()
	for g := range 8 {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				name := fmt.Sprintf("crash-%d-%d", g, i)
				rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
				n, err := ns.Create(rctx, namespace(name), metav1.CreateOptions{})
				rcancel()
				mu.Lock()
				switch {
				case err == nil:
					acked[name] = string(n.UID)
				case !killed.Load() && !errors.Is(err, context.Canceled):
					errsBefore = append(errsBefore, fmt.Errorf("create %s: %w", name, err))
				default:
					failedWrites.Add(1)
				}
				mu.Unlock()
				if killed.Load() {
					return
				}
			}
		})
	}
	time.Sleep(2 * time.Second) // the write load runs for real time: the server is another process
	killed.Store(true)
	srv.kill(t)
	cancel()
	wg.Wait()

	for i, err := range errsBefore {
		if i == 5 {
			t.Errorf("... and %d more errors before the kill", len(errsBefore)-i)
			break
		}
		t.Errorf("before the kill: %v", err)
	}
	t.Logf("%d creates acknowledged before kill -9, %d cut off", len(acked), failedWrites.Load())
	if len(acked) < 20 {
		t.Errorf("only %d creates acknowledged in 2s of load from 8 clients; the crash check means little", len(acked))
	}

	srv2 := startServer(t, dir)
	list, err := srv2.Client.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list after restart: %v", err)
	}
	found := map[string]corev1.Namespace{}
	for _, n := range list.Items {
		found[n.Name] = n
	}
	var lost []string
	for _, name := range sortedKeys(acked) {
		n, ok := found[name]
		switch {
		case !ok:
			lost = append(lost, name)
		case string(n.UID) != acked[name]:
			t.Errorf("namespace %s has uid %s after the crash, was acknowledged with %s", name, n.UID, acked[name])
		}
	}
	if len(lost) > 0 {
		t.Errorf("%d of %d acknowledged creates lost after kill -9: %v", len(lost), len(acked), lost)
	}
	// The restarted server serves writes as usual.
	if _, err := srv2.Client.CoreV1().Namespaces().Create(context.Background(), namespace("after-crash"), metav1.CreateOptions{}); err != nil {
		t.Errorf("create after the crash restart: %v", err)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
