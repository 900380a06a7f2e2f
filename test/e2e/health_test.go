package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestHealthHandlers is upstream's "[sig-api-machinery] health handlers
// should contain necessary checks" for the checks crdserver has: each
// endpoint's ?verbose list names them, passing. (The aggregator's are
// the aggregation layer's to add.)
func TestHealthHandlers(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())
	hooks := []string{
		"[+]poststarthook/start-apiserver-admission-initializer ok",
		"[+]poststarthook/generic-apiserver-start-informers ok",
		"[+]poststarthook/start-apiextensions-informers ok",
		"[+]poststarthook/start-apiextensions-controllers ok",
		"[+]poststarthook/crd-informer-synced ok",
		"[+]poststarthook/bootstrap-controller ok",
		"[+]poststarthook/start-system-namespaces-controller ok",
		"[+]poststarthook/start-service-ip-repair-controllers ok",
		"[+]poststarthook/scheduling/bootstrap-system-priority-classes ok",
		// Upstream's spec wants it where WatchCacheInitializationPostStartHook
		// is on: GA in 1.37.
		"[+]poststarthook/storage-readiness ok",
	}
	ctx := testContext(t, 30*time.Second)
	for _, endpoint := range []string{"/healthz", "/livez", "/readyz"} {
		want := append([]string{"[+]ping ok", "[+]log ok", "[+]etcd ok"}, hooks...)
		if endpoint == "/readyz" {
			want = append(want, "[+]informer-sync ok", "[+]etcd-readiness ok", "[+]shutdown ok")
		}
		body, err := srv.Client.Discovery().RESTClient().Get().AbsPath(endpoint).Param("verbose", "1").Do(ctx).Raw()
		if err != nil {
			t.Fatalf("GET %s?verbose: %v", endpoint, err)
		}
		lines := strings.Split(string(body), "\n")
		for _, w := range want {
			if !strings.Contains("\n"+string(body), "\n"+w+"\n") {
				t.Errorf("GET %s?verbose lacks %q:\n%s", endpoint, w, body)
			}
		}
		if last := lines[len(lines)-2]; last != strings.TrimPrefix(endpoint, "/")+" check passed" {
			t.Errorf("GET %s?verbose ends %q", endpoint, last)
		}
	}
	// A hook's check answers at its own path.
	body, err := srv.Client.Discovery().RESTClient().Get().AbsPath("/readyz/poststarthook/start-service-ip-repair-controllers").Do(ctx).Raw()
	if err != nil || string(body) != "ok" {
		t.Errorf("GET /readyz/poststarthook/start-service-ip-repair-controllers: %q, %v", body, err)
	}
}
