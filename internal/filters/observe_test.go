package filters

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/crdserver/crdserver/internal/metrics"
	"github.com/crdserver/crdserver/internal/request"
)

// scrapeText is m's exposition.
func scrapeText(t *testing.T, m *metrics.Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	return rec.Body.String()
}

func TestInstrument(t *testing.T) {
	m := metrics.New()
	known := func(info *request.Info) bool { return info.Resource == "crontabs" }
	var inWatch string
	h := Chain(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, _ := request.InfoFrom(r.Context())
		switch info.Verb {
		case "create":
			w.WriteHeader(http.StatusCreated)
		case "watch":
			if _, ok := w.(http.Flusher); !ok {
				t.Error("a watch's writer lost http.Flusher")
			}
			inWatch = scrapeText(t, m)
			w.Write([]byte("{}"))
		default:
			http.NotFound(w, r)
		}
	}), RequestInfo, Instrument(m, known))

	for range 3 {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("POST", "/apis/stable.example.com/v1/namespaces/ns/crontabs", nil))
	}
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/apis/stable.example.com/v1/crontabs?watch=1", nil))
	for _, p := range []string{"/apis/a.b/v1/nothing/x", "/apis/c.d/v2/namespaces/n/other/y/z"} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", p, nil))
	}
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/version", nil))

	text := scrapeText(t, m)
	for _, want := range []string{
		`apiserver_request_total{code="201",component="apiserver",dry_run="",group="stable.example.com",resource="crontabs",scope="resource",subresource="",verb="POST",version="v1"} 3`,
		`apiserver_request_total{code="200",component="apiserver",dry_run="",group="stable.example.com",resource="crontabs",scope="cluster",subresource="",verb="WATCH",version="v1"} 1`,
		// Both unknown resources in one series.
		`apiserver_request_total{code="404",component="apiserver",dry_run="",group="",resource="",scope="resource",subresource="",verb="GET",version=""} 2`,
		`apiserver_request_duration_seconds_count{component="apiserver",dry_run="",group="stable.example.com",resource="crontabs",scope="resource",subresource="",verb="POST",version="v1"} 3`,
		`apiserver_longrunning_requests{component="apiserver",group="stable.example.com",resource="crontabs",scope="cluster",subresource="",verb="WATCH",version="v1"} 0`,
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("/metrics lacks\n%s\nin\n%s", want, grep(text, "apiserver_"))
		}
	}
	if strings.Contains(text, `subresource="/version"`) || strings.Contains(text, "a.b") || strings.Contains(text, "c.d") {
		t.Errorf("unserved paths got series:\n%s", grep(text, "apiserver_request_total"))
	}
	if !strings.Contains(inWatch, `apiserver_longrunning_requests{component="apiserver",group="stable.example.com",resource="crontabs",scope="cluster",subresource="",verb="WATCH",version="v1"} 1`) {
		t.Errorf("an open watch is not counted in apiserver_longrunning_requests:\n%s", grep(inWatch, "longrunning"))
	}
}

func grep(text, s string) string {
	var out []string
	for l := range strings.SplitSeq(text, "\n") {
		if strings.Contains(l, s) && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func TestLog(t *testing.T) {
	var buf bytes.Buffer
	v2 := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.Level(-2)}))
	h := Chain(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) }), AuditID, RequestInfo, Log(v2))
	r := httptest.NewRequest("PATCH", "/apis/g/v1/namespaces/ns/crontabs/a?x=1", nil)
	r.Header.Set("Content-Type", "application/apply-patch+yaml")
	r.Header.Set("User-Agent", "kubectl/v1.37")
	r.Header.Set("Audit-ID", "abc")
	h.ServeHTTP(httptest.NewRecorder(), r)
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/healthz", nil))

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want one line per request, got:\n%s", buf.String())
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"msg": "HTTP", "verb": "APPLY", "URI": "/apis/g/v1/namespaces/ns/crontabs/a?x=1", "userAgent": "kubectl/v1.37", "audit-ID": "abc", "srcIP": "192.0.2.1:1234", "resp": 201.0}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v (line %s)", k, got[k], v, lines[0])
		}
	}
	if _, ok := got["latency"]; !ok {
		t.Errorf("no latency in %s", lines[0])
	}
	if !strings.Contains(lines[1], `"verb":"GET"`) || !strings.Contains(lines[1], `"resp":201`) {
		t.Errorf("non-resource request logged as %s", lines[1])
	}

	// Below -v=2 nothing is logged.
	quietLog := slog.New(slog.NewJSONHandler(&buf, nil))
	next := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	buf.Reset()
	Log(quietLog)(next).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/healthz", nil))
	if buf.Len() != 0 {
		t.Errorf("logged at -v=0: %s", buf.String())
	}
}

// BenchmarkInstrument is what Instrument adds to a get: labels, the
// status-recording writer, a counter and a histogram.
func BenchmarkInstrument(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "off"
		filters := []Filter{RequestInfo}
		if on {
			name = "on"
			filters = append(filters, Instrument(metrics.New(), func(*request.Info) bool { return true }))
		}
		h := Chain(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) }), filters...)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				r := httptest.NewRequest("GET", "/apis/bench.crdserver.io/v1/namespaces/bench/widgets/w-1", nil)
				w := httptest.NewRecorder()
				for pb.Next() {
					h.ServeHTTP(w, r)
				}
			})
		})
	}
}
