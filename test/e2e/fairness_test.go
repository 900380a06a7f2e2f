package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/crdserver/crdserver/internal/certs"
)

// fairUser is an HTTP client acting as user in groups, with a client
// certificate from the server's CA. Where the server serves RBAC, groups
// are bound to cluster-admin first, so that only fairness refuses them.
func fairUser(t *testing.T, srv *server, user string, groups ...string) *http.Client {
	t.Helper()
	certPEM, keyPEM, err := certs.IssueClient(filepath.Join(srv.Dir, "pki"), user, groups)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Client.Discovery().ServerResourcesForGroupVersion("rbac.authorization.k8s.io/v1"); err == nil {
		args := []string{"create", "clusterrolebinding", "e2e-fair-" + user, "--clusterrole=cluster-admin"}
		for _, g := range groups {
			args = append(args, "--group="+g)
		}
		kubectl(t, srv, args...)
	}
	cfg := rest.AnonymousClientConfig(srv.Config)
	cfg.CertData, cfg.KeyData = certPEM, keyPEM
	c, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, user+" may list namespaces", func() (bool, error) {
		code, _, _, err := send(c, "GET", srv.URL+"/api/v1/namespaces?limit=1", "")
		return code == 200, err
	})
	return c
}

// send sends one request and returns the status code, the Retry-After
// header and the body.
func send(c *http.Client, method, url, body string) (code int, retryAfter string, data []byte, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return 0, "", nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	data, err = io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After"), data, err
}

func configMap(name, label string) string {
	return fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"labels":{%q:"yes"}}}`, name, label)
}

// TestFairnessAndLimits: a user who floods the server with slow writes gets
// 429s with Retry-After from their own full queue, while another user's
// reads go on succeeding; a request past --request-timeout gets upstream's
// 504 and its work is cancelled; a user's watches beyond
// --max-watches-per-user get 429.
func TestFairnessAndLimits(t *testing.T) {
	t.Parallel()
	srv := startServerArgs(t, t.TempDir(), "--max-requests-inflight=2", "--request-timeout=4s", "--max-watches-per-user=2")

	// A webhook holds each flood write for a while, so that the flood
	// keeps the seats busy; it holds a "stuck" write until the server
	// gives up on it, and says when that was.
	hook := startAdmissionWebhook(t)
	hook.handle("/hold", func(r *http.Request, _ *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		select {
		case <-r.Context().Done():
		case <-time.After(200 * time.Millisecond):
		}
		return &admissionv1.AdmissionResponse{Allowed: true}
	})
	cancelled := make(chan time.Time, 1)
	hook.handle("/stuck", func(r *http.Request, _ *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		select {
		case <-r.Context().Done():
			cancelled <- time.Now()
		case <-time.After(30 * time.Second):
		}
		return &admissionv1.AdmissionResponse{Allowed: true}
	})
	rules := "  timeoutSeconds: 30\n  rules:\n  - {apiGroups: [\"\"], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}\n"
	registerWebhooks(t, srv,
		webhookConfig("ValidatingWebhookConfiguration", "hold.example.com", hook.URL+"/hold", hook.CABundle, rules+"  objectSelector: {matchLabels: {flood: \"yes\"}}\n")+
			webhookConfig("ValidatingWebhookConfiguration", "stuck.example.com", hook.URL+"/stuck", hook.CABundle, rules+"  objectSelector: {matchLabels: {stuck: \"yes\"}}\n"))

	flood := fairUser(t, srv, "flood", "e2e:fairness")
	calm := fairUser(t, srv, "calm", "e2e:fairness")
	const configMaps = "/api/v1/namespaces/default/configmaps"

	t.Run("flood", func(t *testing.T) {
		var (
			stop      atomic.Bool
			wg        sync.WaitGroup
			mu        sync.Mutex
			refused   int
			firstBody []byte
			retry     string
			maxRetry  int
			other     []string
		)
		for g := range 60 {
			wg.Go(func() {
				for i := 0; !stop.Load(); i++ {
					code, ra, body, err := send(flood, "POST", srv.URL+configMaps, configMap(fmt.Sprintf("flood-%d-%d", g, i), "flood"))
					mu.Lock()
					switch {
					case err != nil:
						other = append(other, err.Error())
					case code == 429:
						if refused == 0 {
							firstBody, retry = body, ra
						}
						n, _ := strconv.Atoi(ra)
						maxRetry = max(maxRetry, n)
						refused++
					case code != 201:
						other = append(other, fmt.Sprintf("%d %s", code, body))
					}
					mu.Unlock()
				}
			})
		}
		time.Sleep(500 * time.Millisecond) // the flood fills the seats and its queue
		var slowest time.Duration
		for range 10 {
			start := time.Now()
			code, _, body, err := send(calm, "GET", srv.URL+configMaps+"?limit=5", "")
			if err != nil || code != 200 {
				t.Errorf("calm user's read during the flood: %d %v %s", code, err, body)
			}
			slowest = max(slowest, time.Since(start))
			time.Sleep(100 * time.Millisecond)
		}
		stop.Store(true)
		wg.Wait()
		// The calm user waits for at most one flood write (200ms) to end.
		if slowest > 2*time.Second {
			t.Errorf("the calm user's slowest read took %v", slowest)
		}
		if refused == 0 {
			t.Fatalf("the flood was never refused (other answers: %v)", other)
		}
		var st metav1.Status
		if err := json.Unmarshal(firstBody, &st); err != nil || st.Reason != metav1.StatusReasonTooManyRequests ||
			st.Message != "Too many requests, please try again later." || retry != "1" {
			t.Errorf("429: Retry-After %q, body %s", retry, firstBody)
		}
		// Thousands of refusals a second: clients are asked to wait longer.
		if maxRetry < 2 {
			t.Errorf("Retry-After stayed at %d under a flood of %d refusals", maxRetry, refused)
		}
		if len(other) > 0 {
			t.Errorf("%d flood requests neither created nor refused with 429; first: %s", len(other), other[0])
		}
		t.Logf("flood: %d refused with 429", refused)
	})

	t.Run("timeout", func(t *testing.T) {
		start := time.Now()
		code, _, body, err := send(srv.Client.CoreV1().RESTClient().(*rest.RESTClient).Client, "POST", srv.URL+configMaps, configMap("stuck", "stuck"))
		took := time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		var st metav1.Status
		if code != 504 || json.Unmarshal(body, &st) != nil || st.Reason != metav1.StatusReasonTimeout ||
			st.Message != "Timeout: request did not complete within the allotted timeout" {
			t.Fatalf("got %d %s", code, body)
		}
		if took < 4*time.Second || took > 10*time.Second {
			t.Errorf("answered after %v with --request-timeout=4s", took)
		}
		select {
		case at := <-cancelled:
			if d := at.Sub(start); d > 10*time.Second {
				t.Errorf("the webhook call was cancelled only after %v", d)
			}
		case <-time.After(10 * time.Second):
			t.Error("the timed-out request's webhook call was not cancelled")
		}
		code, _, _, _ = send(srv.Client.CoreV1().RESTClient().(*rest.RESTClient).Client, "GET", srv.URL+configMaps+"/stuck", "")
		if code != 404 {
			t.Errorf("the timed-out create was stored: GET answered %d", code)
		}
	})

	t.Run("watches per user", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		watch := func(c *http.Client) (*http.Response, error) {
			req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+configMaps+"?watch=1", nil)
			return c.Do(req)
		}
		for range 2 {
			resp, err := watch(calm)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("watch: %v %v", resp, err)
			}
			defer resp.Body.Close()
		}
		resp, err := watch(calm)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "1" || !strings.Contains(string(body), `too many watches: user \"calm\" has 2 open`) {
			t.Errorf("third watch: %d %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
		// Another user's watches are their own.
		resp, err = watch(flood)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("another user's watch: %v %v", resp, err)
		}
		resp.Body.Close()
	})
}

// TestBenchFairness runs the load generator as users it mints from the
// server's CA: the fairness workload reports the quiet user alone and
// beside the noisy one, and --as-user runs ordinary workloads as another
// user, without errors; the admission workload reports each variant, and
// the fields workload what recording managedFields costs.
func TestBenchFairness(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())
	bench := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, binary, append([]string{"bench", "--kubeconfig", srv.Kubeconfig, "--data-dir", srv.Dir}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("crdserver bench %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	rows := func(out string, names ...string) {
		t.Helper()
		for _, name := range names {
			found := false
			for line := range strings.Lines(out) {
				if f := strings.Fields(line); len(f) >= 3 && f[0] == name {
					found = true
					if f[1] == "0" || f[2] != "0" {
						t.Errorf("%s: ops %s, errors %s:\n%s", name, f[1], f[2], out)
					}
				}
			}
			if !found {
				t.Errorf("no %s row:\n%s", name, out)
			}
		}
	}

	out := bench("--workloads", "fairness", "--objects", "20", "--concurrency", "4", "--duration", "1s", "--quiet-rate", "20", "--prefix", "e2e-fair")
	rows(out, "quiet-alone", "quiet-noisy", "noisy")
	if !strings.Contains(out, "fairness: quiet user at ") || !strings.Contains(out, "beside the noisy user at ") {
		t.Errorf("no fairness note:\n%s", out)
	}

	out = bench("--as-user", "e2e-bench", "--as-group", "e2e:bench", "--workloads", "create,get,delete", "--count", "10", "--prefix", "e2e-as")
	rows(out, "create", "get", "delete")

	// The admission workload registers each variant in turn and reports
	// what it adds to an update, with the server's CPU read from /proc.
	out = bench("--workloads", "admission", "--admission-rounds", "1", "--objects", "10", "--count", "20",
		"--concurrency", "2", "--prefix", "e2e-adm", "--server-pid", strconv.Itoa(srv.cmd.Process.Pid))
	rows(out, "update/none", "update/mutating-webhook", "update/validating-webhook", "update/policy")
	for _, v := range []string{"mutating-webhook", "validating-webhook", "policy"} {
		if !strings.Contains(out, "admission "+v+": adds ") || !strings.Contains(out, "of server CPU per update") {
			t.Errorf("no admission note for %s with the server's CPU:\n%s", v, out)
		}
	}
	if strings.Contains(out, "without a garbage collection") {
		t.Errorf("the server refused to collect its garbage before a run:\n%s", out)
	}
	// With copies, each variant registers that many webhooks or
	// policies and waits until every one of them is in effect; the
	// notes divide the CPU among them.
	out = bench("--workloads", "admission", "--admission-rounds", "1", "--admission-copies", "3", "--objects", "10", "--count", "20",
		"--concurrency", "2", "--prefix", "e2e-adm3", "--server-pid", strconv.Itoa(srv.cmd.Process.Pid))
	for v, unit := range map[string]string{"mutating-webhook": "webhook", "validating-webhook": "webhook", "policy": "policy"} {
		if !strings.Contains(out, "admission "+v+" ×3: adds ") || !strings.Contains(out, " per "+unit) {
			t.Errorf("no admission note for 3 copies of %s with the CPU per %s:\n%s", v, unit, out)
		}
	}

	// The fields workload clears the managedFields of half the objects,
	// checks the server leaves them untracked, and reports what
	// recording them costs an update.
	out = bench("--workloads", "fields", "--fields-rounds", "1", "--objects", "10", "--count", "20",
		"--concurrency", "2", "--prefix", "e2e-fields", "--server-pid", strconv.Itoa(srv.cmd.Process.Pid))
	rows(out, "update/fields", "update/no-fields")
	if !strings.Contains(out, "managed fields: recording them costs updates ") || !strings.Contains(out, "of server CPU per update") {
		t.Errorf("no fields note with the server's CPU:\n%s", out)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	msg, err := exec.CommandContext(ctx, binary, "bench", "--kubeconfig", srv.Kubeconfig, "--data-dir", srv.Dir,
		"--as-user", "root", "--as-group", "system:masters").CombinedOutput()
	if err == nil || !strings.Contains(string(msg), "must not be in system:masters") {
		t.Errorf("a bench user in system:masters: %v: %s", err, msg)
	}
}
