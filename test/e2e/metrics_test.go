package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// TestObservability sends a known number of requests and checks that
// /metrics counts exactly those, that /metrics and /debug/pprof are served
// to the admin only, and that -v=2 --log-format=json logs one JSON line per
// request.
func TestObservability(t *testing.T) {
	srv := startServerArgs(t, t.TempDir(), "-v=2", "--log-format=json")
	applyCRD(t, srv, "crontab-crd.yaml", "crontabs.stable.example.com", "created")
	ctx := testContext(t, 2*time.Minute)

	const creates, gets = 7, 11
	crontabs := srv.Dynamic.Resource(schema.GroupVersionResource{Group: "stable.example.com", Version: "v1", Resource: "crontabs"}).Namespace("default")
	for i := range creates {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "stable.example.com/v1", "kind": "CronTab",
			"metadata": map[string]any{"name": fmt.Sprintf("ct-%d", i)},
			"spec":     map[string]any{"cronSpec": "* * * * */5", "image": "my-awesome-cron-image"},
		}}
		if _, err := crontabs.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
	}
	for i := range gets {
		if _, err := crontabs.Get(ctx, fmt.Sprintf("ct-%d", i%creates), metav1.GetOptions{}); err != nil {
			t.Fatalf("get: %v", err)
		}
	}
	if _, err := crontabs.Get(ctx, "missing", metav1.GetOptions{}); err == nil {
		t.Fatal("get of a missing crontab succeeded")
	}
	kubectl(t, srv, "create", "-f", crdFixture("my-crontab.yaml"))
	// An apply patch counts as APPLY whatever its outcome (before
	// server-side apply lands, a 415).
	admin := srv.Client.Discovery().RESTClient()
	admin.Patch(types.ApplyPatchType).AbsPath("/apis/stable.example.com/v1/namespaces/default/crontabs/ct-0").
		Param("fieldManager", "e2e").Body([]byte(`{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"ct-0"}}`)).Do(ctx)

	fams := scrapeMetrics(t, srv)
	crontab := map[string]string{"group": "stable.example.com", "version": "v1", "resource": "crontabs", "component": "apiserver"}
	for _, c := range []struct {
		labels map[string]string
		want   float64
	}{
		{map[string]string{"verb": "POST", "code": "201", "scope": "resource"}, creates + 1},
		{map[string]string{"verb": "GET", "code": "200", "scope": "resource"}, gets},
		{map[string]string{"verb": "GET", "code": "404", "scope": "resource"}, 1},
	} {
		labels := merge(crontab, c.labels)
		if got := value(fams, "apiserver_request_total", labels); got != c.want {
			t.Errorf("apiserver_request_total%v = %v, want %v", labels, got, c.want)
		}
	}
	var applies float64
	for _, m := range fams["apiserver_request_total"].GetMetric() {
		if labelsOf(m)["verb"] == "APPLY" && labelsOf(m)["resource"] == "crontabs" {
			applies += m.GetCounter().GetValue()
		}
	}
	if applies != 1 {
		t.Errorf("%v APPLY requests counted, want 1", applies)
	}
	if got := histogramCount(fams, "apiserver_request_duration_seconds", merge(crontab, map[string]string{"verb": "POST", "scope": "resource"})); got != creates+1 {
		t.Errorf("apiserver_request_duration_seconds count of POST = %d, want %d", got, creates+1)
	}
	if got := histogramCount(fams, "etcd_request_duration_seconds", map[string]string{"operation": "create", "group": "stable.example.com", "resource": "crontabs"}); got != creates+1 {
		t.Errorf("etcd creates of crontabs = %d, want %d", got, creates+1)
	}
	waitFor(t, 10*time.Second, "apiserver_storage_objects of crontabs", func() (bool, error) {
		got := value(scrapeMetrics(t, srv), "apiserver_storage_objects", map[string]string{"resource": "crontabs.stable.example.com"})
		return got == creates+1, fmt.Errorf("apiserver_storage_objects = %v, want %d", got, creates+1)
	})

	// The admin may profile; nobody else may, and the anonymous user is
	// not even asked who it is.
	if body, err := admin.Get().AbsPath("/debug/pprof/").DoRaw(ctx); err != nil || !strings.Contains(string(body), "goroutine") {
		t.Errorf("admin GET /debug/pprof/: %v\n%.200s", err, body)
	}
	alice := userClient(t, srv, "alice", "dev")
	anonymous := userClient(t, srv, "", "")
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap", "/metrics"} {
		if code := getCode(t, alice, srv.URL+path); code != http.StatusForbidden {
			t.Errorf("alice GET %s: %d, want 403", path, code)
		}
		if code := getCode(t, anonymous, srv.URL+path); code != http.StatusUnauthorized {
			t.Errorf("anonymous GET %s: %d, want 401", path, code)
		}
	}

	// One JSON line per request: every create, and every line JSON.
	var posts int
	for _, line := range srv.log.lines() {
		var l map[string]any
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Errorf("not a JSON log line: %s", line)
			continue
		}
		if l["msg"] == "HTTP" && l["verb"] == "POST" && l["URI"] == "/apis/stable.example.com/v1/namespaces/default/crontabs" {
			posts++
			if l["resp"] != 201.0 || l["srcIP"] == "" || l["userAgent"] == "" || l["latency"] == nil {
				t.Errorf("request line lacks upstream's fields: %s", line)
			}
		}
	}
	if posts != creates {
		t.Errorf("%d request log lines for the %d creates", posts, creates)
	}
}

// TestMetricsCountLoad: after a load generator run, /metrics counts what it
// sent, request for request.
func TestMetricsCountLoad(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())
	const n = 40
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, binary, "bench", "--kubeconfig", srv.Kubeconfig, "--workloads", "create,get",
		"--count", strconv.Itoa(n), "--concurrency", "4", "--namespace", "load", "--cleanup=false").CombinedOutput()
	if err != nil {
		t.Fatalf("crdserver bench: %v\n%s", err, out)
	}
	fams := scrapeMetrics(t, srv)
	widgets := map[string]string{"group": "bench.crdserver.io", "version": "v1", "resource": "widgets", "component": "apiserver", "scope": "resource"}
	for verb, code := range map[string]string{"POST": "201", "GET": "200"} {
		labels := merge(widgets, map[string]string{"verb": verb, "code": code})
		if got := value(fams, "apiserver_request_total", labels); got != n {
			t.Errorf("apiserver_request_total%v = %v after %d sent; bench said:\n%s", labels, got, n, out)
		}
	}
}

func merge(a, b map[string]string) map[string]string {
	m := map[string]string{}
	for k, v := range a {
		m[k] = v
	}
	for k, v := range b {
		m[k] = v
	}
	return m
}

// scrapeMetrics reads /metrics as the admin and parses it.
func scrapeMetrics(t *testing.T, srv *server) map[string]*dto.MetricFamily {
	t.Helper()
	body, err := srv.Client.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(testContext(t, 30*time.Second))
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return fams
}

// series returns the series of name whose labels are exactly want.
func series(fams map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	f, ok := fams[name]
	if !ok {
		return nil
	}
next:
	for _, m := range f.Metric {
		for _, l := range m.Label {
			if v, ok := want[l.GetName()]; ok && v != l.GetValue() || !ok && l.GetValue() != "" {
				continue next
			}
		}
		return m
	}
	return nil
}

func labelsOf(m *dto.Metric) map[string]string {
	l := map[string]string{}
	for _, p := range m.Label {
		l[p.GetName()] = p.GetValue()
	}
	return l
}

func value(fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	m := series(fams, name, labels)
	return m.GetCounter().GetValue() + m.GetGauge().GetValue()
}

func histogramCount(fams map[string]*dto.MetricFamily, name string, labels map[string]string) uint64 {
	return series(fams, name, labels).GetHistogram().GetSampleCount()
}

// userClient is an HTTPS client that trusts the server and presents a
// client certificate for user in group from the server's CA; user ""
// presents none.
func userClient(t *testing.T, srv *server, user, group string) *http.Client {
	t.Helper()
	cfg := &tls.Config{RootCAs: srv.caPool(t)}
	if user != "" {
		cfg.Certificates = []tls.Certificate{issueClientCert(t, filepath.Join(srv.Dir, "pki"), user, group)}
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
}

func getCode(t *testing.T, c *http.Client, url string) int {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// issueClientCert signs a client certificate for user in groups with the
// CA in pkiDir.
func issueClientCert(t *testing.T, pkiDir, user string, groups ...string) tls.Certificate {
	t.Helper()
	ca, err := tls.LoadX509KeyPair(filepath.Join(pkiDir, "ca.crt"), filepath.Join(pkiDir, "ca.key"))
	if err != nil {
		t.Fatalf("loading the CA: %v", err)
	}
	caCert, err := x509.ParseCertificate(ca.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: user, Organization: groups},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, ca.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	if err != nil {
		t.Fatal(err)
	}
	return cert
}
