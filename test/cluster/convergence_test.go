package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/crdserver/crdserver/internal/certs"
)

// convergeLimit is how soon every replica must follow a CRD change made
// through one of them (issue 17).
const convergeLimit = time.Second

var crds = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

func gadgetVersion(name string, storage bool) map[string]any {
	return map[string]any{
		"name": name, "served": true, "storage": storage,
		"schema": map[string]any{"openAPIV3Schema": map[string]any{
			"type": "object", "x-kubernetes-preserve-unknown-fields": true,
		}},
	}
}

// crdObject is a namespaced CRD of group with one version, v1, that keeps
// any fields.
func crdObject(group, plural, kind string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": plural + "." + group},
		"spec": map[string]any{
			"group":    group,
			"scope":    "Namespaced",
			"names":    map[string]any{"plural": plural, "singular": strings.ToLower(kind), "kind": kind},
			"versions": []any{gadgetVersion("v1", true)},
		},
	}}
}

// testConvergence creates a CRD through replica 0, adds a version to it,
// and deletes it, and checks that every replica serves, discovers and
// publishes (or stops serving) each change within convergeLimit.
func testConvergence(t *testing.T, c *Cluster) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg, err := c.Replicas[0].Config()
	must(t, err)
	crdClient := dynamic.NewForConfigOrDie(cfg).Resource(crds)
	crd := crdObject("conv.example.com", "gadgets", "Gadget")

	start := time.Now()
	_, err = crdClient.Create(ctx, crd, metav1.CreateOptions{})
	must(t, err)
	checkConverged(t, c, "create", start, "v1", true)

	// The CRD controller has set its status since: patch, not update.
	patch := `{"spec":{"versions":[` + mustJSON(t, gadgetVersion("v1", true)) + `,` + mustJSON(t, gadgetVersion("v2", false)) + `]}}`
	start = time.Now()
	_, err = crdClient.Patch(ctx, "gadgets.conv.example.com", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	must(t, err)
	checkConverged(t, c, "add version v2", start, "v2", true)

	start = time.Now()
	must(t, crdClient.Delete(ctx, "gadgets.conv.example.com", metav1.DeleteOptions{}))
	checkConverged(t, c, "delete", start, "v1", false)
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	must(t, err)
	return string(b)
}

// checkConverged waits until every replica serves (or, with !served, no
// longer serves) conv.example.com/version gadgets: the list, discovery
// and OpenAPI v3. It fails if that takes longer than convergeLimit.
func checkConverged(t *testing.T, c *Cluster, what string, start time.Time, version string, served bool) {
	t.Helper()
	checkServed(t, c, what, start, "conv.example.com/"+version, "gadgets", served)
}

// checkServed is checkConverged for resource plural of groupVersion.
func checkServed(t *testing.T, c *Cluster, what string, start time.Time, groupVersion, plural string, served bool) {
	t.Helper()
	gv := "/apis/" + groupVersion
	paths := []string{gv + "/namespaces/default/" + plural, gv, "/openapi/v3" + gv}
	var wg sync.WaitGroup
	took := make([]time.Duration, len(c.Replicas))
	steps := make([][]string, len(c.Replicas)) // when each path followed
	for i, r := range c.Replicas {
		cfg, err := r.Config()
		must(t, err)
		hc, err := rest.HTTPClientFor(cfg)
		must(t, err)
		wg.Go(func() {
			for _, p := range paths {
				for !servesPath(hc, r.URL+p, plural, served) {
					if time.Since(start) > 10*convergeLimit {
						break
					}
					time.Sleep(5 * time.Millisecond)
				}
				steps[i] = append(steps[i], fmt.Sprintf("%s after %v", p, time.Since(start).Round(time.Millisecond)))
			}
			took[i] = time.Since(start)
		})
	}
	wg.Wait()
	var slowest time.Duration
	for i, d := range took {
		slowest = max(slowest, d)
		if d > convergeLimit {
			t.Errorf("%s: replica %d followed after %v, want within %v (%s)", what, i, d.Round(time.Millisecond), convergeLimit, strings.Join(steps[i], ", "))
		}
	}
	t.Logf("%s: every replica followed within %v", what, slowest.Round(time.Millisecond))
}

// servesPath reports whether GET url answers as a served (or, with
// !served, an unserved) resource would: 200 naming gadgets, or 404.
func servesPath(hc *http.Client, url, plural string, served bool) bool {
	resp, err := hc.Get(url)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if !served {
		return resp.StatusCode == http.StatusNotFound
	}
	return resp.StatusCode == http.StatusOK && (strings.Contains(string(body), plural) || strings.Contains(string(body), `"items"`))
}

// testLateReplica creates a CRD while a replica is down: started again,
// the replica serves it from what etcd holds, within convergeLimit of
// being ready.
func testLateReplica(t *testing.T, c *Cluster) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	late := c.Replicas[len(c.Replicas)-1]
	late.Kill()
	cfg, err := c.Replicas[0].Config()
	must(t, err)
	crdClient := dynamic.NewForConfigOrDie(cfg).Resource(crds)
	crd := crdObject("late.example.com", "latecomers", "Latecomer")
	_, err = crdClient.Create(ctx, crd, metav1.CreateOptions{})
	must(t, err)
	must(t, late.Start(ctx))
	checkServed(t, c, "a replica started after the CRD", time.Now(), "late.example.com/v1", "latecomers", true)
	must(t, crdClient.Delete(ctx, "latecomers.late.example.com", metav1.DeleteOptions{}))
}

// testEtcdLost loses every etcd member, killed (connections refused) and
// then frozen (connections open, nothing answered, as a partition looks
// to a client): each replica must answer a read and a write with a 503 or
// 504 Status promptly instead of hanging, and serve again on its own once
// etcd is back.
func testEtcdLost(t *testing.T, c *Cluster) {
	for _, loss := range []struct {
		name    string
		lose    func(*Member) error
		restore func(context.Context, *Member) error
	}{
		{"killed", func(m *Member) error { m.Kill(); return nil }, func(ctx context.Context, m *Member) error { return m.Start(ctx) }},
		{"frozen", (*Member).Pause, func(_ context.Context, m *Member) error { return m.Resume() }},
	} {
		t.Run(loss.name, func(t *testing.T) { testEtcdLostOnce(t, c, loss.lose, loss.restore) })
	}
}

func testEtcdLostOnce(t *testing.T, c *Cluster, lose func(*Member) error, restore func(context.Context, *Member) error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, m := range c.Etcd {
		must(t, lose(m))
	}
	for _, r := range c.Replicas {
		cfg, err := r.Config()
		must(t, err)
		cfg.Timeout = 2 * time.Minute // the server, not the client, must give up
		hc, err := rest.HTTPClientFor(cfg)
		must(t, err)
		for _, req := range []struct{ method, path, body string }{
			{"GET", "/api/v1/namespaces/default/configmaps/absent", ""},
			{"POST", "/api/v1/namespaces/default/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"lost-"}}`},
		} {
			hreq, _ := http.NewRequestWithContext(ctx, req.method, r.URL+req.path, strings.NewReader(req.body))
			hreq.Header.Set("Content-Type", "application/json")
			begin := time.Now()
			resp, err := hc.Do(hreq)
			took := time.Since(begin)
			if err != nil {
				t.Errorf("replica %d: %s %s without etcd: %v after %v", r.Index, req.method, req.path, err, took)
				continue
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			t.Logf("replica %d: %s %s without etcd: %d after %v", r.Index, req.method, req.path, resp.StatusCode, took.Round(time.Millisecond))
			if resp.StatusCode != http.StatusServiceUnavailable && resp.StatusCode != http.StatusGatewayTimeout {
				t.Errorf("replica %d: %s %s without etcd: %d %s, want 503 or 504", r.Index, req.method, req.path, resp.StatusCode, body)
			}
			if !strings.Contains(string(body), `"kind":"Status"`) {
				t.Errorf("replica %d: answer is not a Status: %s", r.Index, body)
			}
			if took > 15*time.Second {
				t.Errorf("replica %d: %s %s took %v without etcd, want an answer within 15s", r.Index, req.method, req.path, took)
			}
		}
	}
	start := time.Now()
	errs := make(chan error, len(c.Etcd))
	for _, m := range c.Etcd {
		go func() { errs <- restore(ctx, m) }()
	}
	for range c.Etcd {
		must(t, <-errs)
	}
	t.Logf("etcd back; every replica serving again after %v", waitServing(t, ctx, c, start).Round(time.Millisecond))
}

// testMisconfiguredReplica starts a replica with another --etcd-prefix
// and one with another CA: each must refuse to start, saying why.
func testMisconfiguredReplica(t *testing.T, c *Cluster) {
	for _, tc := range []struct {
		name    string
		shareCA bool
		args    []string
		want    string
	}{
		{"another prefix", true, []string{"--etcd-prefix", "/registri"}, "start it with --etcd-prefix=/registry"},
		{"another CA", false, nil, "trusts another CA"},
	} {
		dir := t.TempDir()
		if tc.shareCA {
			must(t, certs.CopyShared(filepath.Join(c.Dir, "pki"), filepath.Join(dir, "pki")))
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		args := append([]string{"--data-dir", dir, "--secure-port", "0", "--etcd-servers", strings.Join(c.Endpoints(), ",")}, tc.args...)
		out, err := exec.CommandContext(ctx, c.opts.CrdserverBinary, args...).CombinedOutput()
		timedOut := ctx.Err() != nil
		cancel()
		switch {
		case err == nil || timedOut:
			t.Errorf("%s: the replica did not refuse to start (%v):\n%s", tc.name, err, lastLines(string(out), 10))
		case !strings.Contains(string(out), tc.want):
			t.Errorf("%s: the replica refused without saying %q:\n%s", tc.name, tc.want, lastLines(string(out), 10))
		default:
			t.Logf("%s: refused: %s", tc.name, lastLines(string(out), 1))
		}
	}
}
