package metrics

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/request"
	"github.com/crdserver/crdserver/internal/storage"
)

// scrape fetches m's /metrics and parses it as Prometheus text, as a
// scraper would.
func scrape(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("Content-Type %q, want text/plain", ct)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return fams
}

// find returns the series of family name whose labels include want.
func find(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	t.Helper()
	f, ok := fams[name]
	if !ok {
		t.Fatalf("no metric family %s", name)
	}
next:
	for _, m := range f.Metric {
		got := map[string]string{}
		for _, l := range m.Label {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if got[k] != v {
				continue next
			}
		}
		return m
	}
	t.Fatalf("%s has no series with %v", name, want)
	return nil
}

func TestRequestsCountedConcurrently(t *testing.T) {
	m := New()
	create := Request{Verb: "POST", Group: "stable.example.com", Version: "v1", Resource: "crontabs", Scope: "resource"}
	get := Request{Verb: "GET", Group: "stable.example.com", Version: "v1", Resource: "crontabs", Scope: "resource"}
	const workers, each = 8, 250
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				m.ObserveRequest(create, 201, 3*time.Millisecond)
				m.ObserveRequest(get, 404, 30*time.Millisecond)
			}
		})
	}
	// Scrapes while counting must not race (go test -race).
	wg.Go(func() { scrape(t, m) })
	wg.Wait()

	fams := scrape(t, m)
	c := find(t, fams, "apiserver_request_total", map[string]string{"verb": "POST", "resource": "crontabs", "code": "201", "component": "apiserver", "scope": "resource", "dry_run": ""})
	if got := c.GetCounter().GetValue(); got != workers*each {
		t.Errorf("POST 201 count = %v, want %d", got, workers*each)
	}
	h := find(t, fams, "apiserver_request_duration_seconds", map[string]string{"verb": "GET", "resource": "crontabs"}).GetHistogram()
	if h.GetSampleCount() != workers*each {
		t.Errorf("GET latency count = %d, want %d", h.GetSampleCount(), workers*each)
	}
	var bounds []float64
	for _, b := range h.Bucket {
		bounds = append(bounds, b.GetUpperBound())
		// 30ms lands in 0.05 and above, not in 0.025 and below.
		if want := uint64(0); b.GetUpperBound() >= 0.05 {
			want = workers * each
			if b.GetCumulativeCount() != want {
				t.Errorf("bucket le=%v holds %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want)
			}
		} else if b.GetCumulativeCount() != want {
			t.Errorf("bucket le=%v holds %d, want 0", b.GetUpperBound(), b.GetCumulativeCount())
		}
	}
	if !slices.Equal(bounds, append(slices.Clone(latencyBuckets), math.Inf(1))) {
		t.Errorf("buckets %v, want upstream's %v", bounds, latencyBuckets)
	}
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes"} {
		if _, ok := fams[name]; !ok {
			t.Errorf("no %s", name)
		}
	}
}

func TestRequestOf(t *testing.T) {
	tests := []struct {
		method, target, contentType string
		known                       bool
		want                        Request
	}{
		{"GET", "/apis/g/v1/namespaces/ns/crontabs/a", "", true, Request{Verb: "GET", Group: "g", Version: "v1", Resource: "crontabs", Scope: "resource"}},
		{"HEAD", "/apis/g/v1/namespaces/ns/crontabs/a", "", true, Request{Verb: "GET", Group: "g", Version: "v1", Resource: "crontabs", Scope: "resource"}},
		{"GET", "/apis/g/v1/namespaces/ns/crontabs", "", true, Request{Verb: "LIST", Group: "g", Version: "v1", Resource: "crontabs", Scope: "namespace"}},
		{"GET", "/apis/g/v1/crontabs?fieldSelector=metadata.name%3Da", "", true, Request{Verb: "LIST", Group: "g", Version: "v1", Resource: "crontabs", Scope: "resource"}},
		{"GET", "/apis/g/v1/crontabs?watch=true", "", true, Request{Verb: "WATCH", Group: "g", Version: "v1", Resource: "crontabs", Scope: "cluster"}},
		{"GET", "/apis/g/v1/watch/namespaces/ns/crontabs", "", true, Request{Verb: "WATCH", Group: "g", Version: "v1", Resource: "crontabs", Scope: "namespace"}},
		{"POST", "/apis/g/v1/namespaces/ns/crontabs?dryRun=All", "", true, Request{Verb: "POST", DryRun: "All", Group: "g", Version: "v1", Resource: "crontabs", Scope: "resource"}},
		{"POST", "/apis/g/v1/namespaces/ns/crontabs?dryRun=Some", "", true, Request{Verb: "POST", DryRun: "invalid", Group: "g", Version: "v1", Resource: "crontabs", Scope: "resource"}},
		{"PUT", "/apis/g/v1/namespaces/ns/crontabs/a/status", "", true, Request{Verb: "PUT", Group: "g", Version: "v1", Resource: "crontabs", Subresource: "status", Scope: "resource"}},
		{"PATCH", "/apis/g/v1/namespaces/ns/crontabs/a", "application/merge-patch+json", true, Request{Verb: "PATCH", Group: "g", Version: "v1", Resource: "crontabs", Scope: "resource"}},
		{"PATCH", "/apis/g/v1/namespaces/ns/crontabs/a", "application/apply-patch+yaml", true, Request{Verb: "APPLY", Group: "g", Version: "v1", Resource: "crontabs", Scope: "resource"}},
		{"DELETE", "/apis/g/v1/namespaces/ns/crontabs/a", "", true, Request{Verb: "DELETE", Group: "g", Version: "v1", Resource: "crontabs", Scope: "resource"}},
		// upstream reports a deletecollection as a DELETE of the collection.
		{"DELETE", "/apis/g/v1/namespaces/ns/crontabs", "", true, Request{Verb: "DELETE", Group: "g", Version: "v1", Resource: "crontabs", Scope: "namespace"}},
		{"GET", "/api/v1/namespaces/default", "", true, Request{Verb: "GET", Version: "v1", Resource: "namespaces", Scope: "resource"}},
		{"OPTIONS", "/api/v1/namespaces", "", true, Request{Verb: "other", Version: "v1", Resource: "namespaces", Scope: "cluster"}},
		// Not served: no resource labels, whatever the path says.
		{"GET", "/apis/made.up/v9/things/x/y", "", false, Request{Verb: "GET", Scope: "resource"}},
	}
	for _, tt := range tests {
		r := httptest.NewRequest(tt.method, tt.target, nil)
		if tt.contentType != "" {
			r.Header.Set("Content-Type", tt.contentType)
		}
		info, err := request.Parse(r.Method, r.URL.Path, r.URL.Query())
		if err != nil {
			t.Fatalf("%s %s: %v", tt.method, tt.target, err)
		}
		if got := RequestOf(r, info, tt.known); got != tt.want {
			t.Errorf("%s %s (%s) = %+v, want %+v", tt.method, tt.target, tt.contentType, got, tt.want)
		}
	}
}

// fakeStorage answers every call at once; its methods come from the
// embedded nil interface for the calls the test does not make.
type fakeStorage struct{ storage.Interface }

func (fakeStorage) Get(context.Context, string) (storage.KeyValue, error) {
	return storage.KeyValue{}, storage.ErrNotFound
}
func (fakeStorage) Create(context.Context, string, []byte) (int64, error) { return 7, nil }
func (fakeStorage) LocalRevision() (int64, bool)                          { return 9, true }

func TestStorageTimed(t *testing.T) {
	m := New()
	s := m.Storage(fakeStorage{}, schema.GroupResource{Group: "stable.example.com", Resource: "crontabs"})
	ctx := context.Background()
	s.Get(ctx, "/k")
	s.Get(ctx, "/k")
	s.Create(ctx, "/k", nil)
	lr, ok := s.(storage.LocalRevisioner)
	if !ok {
		t.Fatal("the timed storage hides storage.LocalRevisioner")
	}
	if rev, ok := lr.LocalRevision(); rev != 9 || !ok {
		t.Errorf("LocalRevision() = %d, %v; want 9, true", rev, ok)
	}
	fams := scrape(t, m)
	for op, n := range map[string]uint64{"get": 2, "create": 1} {
		h := find(t, fams, "etcd_request_duration_seconds", map[string]string{"operation": op, "group": "stable.example.com", "resource": "crontabs"})
		if got := h.GetHistogram().GetSampleCount(); got != n {
			t.Errorf("%s count = %d, want %d", op, got, n)
		}
	}
	if len(fams["etcd_request_duration_seconds"].Metric) != 2 {
		t.Errorf("series for operations that never ran: %v", fams["etcd_request_duration_seconds"].Metric)
	}
}

func TestCaches(t *testing.T) {
	m := New()
	m.Register(Caches(func() []CacheStats {
		return []CacheStats{{GroupResource: schema.GroupResource{Group: "stable.example.com", Resource: "crontabs"}, Objects: 3, EventsReceived: 5, EventsDispatched: 4}}
	}))
	m.WatchEvents("stable.example.com", "v1", "crontabs").Add(2)
	fams := scrape(t, m)
	checks := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"apiserver_storage_objects", map[string]string{"resource": "crontabs.stable.example.com"}, 3},
		{"apiserver_watch_cache_events_received_total", map[string]string{"group": "stable.example.com", "resource": "crontabs"}, 5},
		{"apiserver_watch_cache_events_dispatched_total", map[string]string{"group": "stable.example.com", "resource": "crontabs"}, 4},
		{"apiserver_watch_events_total", map[string]string{"group": "stable.example.com", "version": "v1", "resource": "crontabs"}, 2},
	}
	for _, c := range checks {
		s := find(t, fams, c.name, c.labels)
		got := s.GetCounter().GetValue() + s.GetGauge().GetValue()
		if got != c.want {
			t.Errorf("%s = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestNilMetricsRecordNothing(t *testing.T) {
	var m *Metrics
	m.ObserveRequest(Request{}, 200, time.Second)
	m.WatchEvents("", "v1", "x").Add(1)
	m.AdmissionWebhook("w", "admit", "CREATE", false, time.Second)
	m.ConversionWebhook("c", "v1", "v2", true, time.Second)
	if s := m.Storage(fakeStorage{}, schema.GroupResource{}); s != (fakeStorage{}) {
		t.Errorf("nil Metrics wrapped storage: %T", s)
	}
}

// BenchmarkObserveRequest is the hot path's cost per request: one counter
// and one histogram, each looked up by its labels.
func BenchmarkObserveRequest(b *testing.B) {
	m := New()
	r := Request{Verb: "GET", Group: "bench.crdserver.io", Version: "v1", Resource: "widgets", Scope: "resource"}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.ObserveRequest(r, 200, time.Millisecond)
		}
	})
}
