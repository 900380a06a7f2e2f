package e2e

import (
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// TestUnauthenticated sends requests without a client certificate: the API
// answers 401, the health and version endpoints stay open.
func TestUnauthenticated(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())
	client := &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: srv.caPool(t)}},
	}
	get := func(path string) (int, []byte) {
		t.Helper()
		resp, err := client.Get(srv.URL + path)
		if err != nil {
			t.Fatalf("GET %s without a client certificate: %v", path, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, body
	}

	for _, path := range []string{"/api", "/apis", "/api/v1/namespaces", "/api/v1/namespaces/default", "/openapi/v2"} {
		code, body := get(path)
		var status metav1.Status
		if err := json.Unmarshal(body, &status); err != nil || code != http.StatusUnauthorized ||
			status.Kind != "Status" || status.Code != http.StatusUnauthorized || status.Reason != metav1.StatusReasonUnauthorized || status.Message != "Unauthorized" {
			t.Errorf("GET %s without credentials: %d %s, want 401 Status with reason and message Unauthorized", path, code, body)
		}
	}
	for _, path := range []string{"/healthz", "/livez", "/readyz"} {
		if code, body := get(path); code != http.StatusOK || string(body) != "ok" {
			t.Errorf("GET %s without credentials: %d %q, want 200 ok", path, code, body)
		}
	}
	code, body := get("/version")
	var info struct{ Major, Minor, GitVersion string }
	if err := json.Unmarshal(body, &info); code != http.StatusOK || err != nil || !strings.HasPrefix(info.GitVersion, "v1.") {
		t.Errorf("GET /version without credentials: %d %s, want 200 with a gitVersion v1.x", code, body)
	}
}

// TestGracefulShutdown: SIGTERM ends open watches cleanly and the process
// exits 0 within a few seconds.
func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())
	ctx := testContext(t, 30*time.Second)
	ns := srv.Client.CoreV1().Namespaces()
	list, err := ns.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := ns.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// The watch is live: it sees a create.
	if _, err := ns.Create(ctx, namespace("before-shutdown"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-w.ResultChan():
		if n, _ := e.Object.(*corev1.Namespace); e.Type != watch.Added || n == nil || n.Name != "before-shutdown" {
			t.Fatalf("first watch event = %s %v, want ADDED before-shutdown", e.Type, e.Object)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("watch saw no event for a create")
	}

	start := time.Now()
	srv.terminate(t)
	const limit = 5 * time.Second
	timer := time.NewTimer(limit)
	defer timer.Stop()
watching:
	for {
		select {
		case e, ok := <-w.ResultChan():
			if !ok {
				break watching
			}
			if e.Type == watch.Error {
				t.Errorf("watch ended with an error event instead of a clean end: %v", e.Object)
			}
		case <-timer.C:
			t.Fatalf("watch still open %v after SIGTERM", limit)
		}
	}
	t.Logf("watch ended %v after SIGTERM", time.Since(start))
	srv.waitExit(t, limit)
	t.Logf("process exited %v after SIGTERM", time.Since(start))
}
