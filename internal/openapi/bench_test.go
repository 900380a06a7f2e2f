package openapi

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crdserver/crdserver/internal/registry"
)

// manyDefinitions returns n CronTab-like definitions over n/4 groups, each
// with the crontab schema in two versions.
func manyDefinitions(n int) []*registry.Definition {
	var defs []*registry.Definition
	for i := 0; i < n; i++ {
		defs = append(defs, &registry.Definition{
			Group: fmt.Sprintf("g%d.example.com", i/4), Resource: fmt.Sprintf("things%d", i), Singular: fmt.Sprintf("thing%d", i),
			Kind: fmt.Sprintf("Thing%d", i), ListKind: fmt.Sprintf("Thing%dList", i), Scope: registry.Namespaced,
			Versions: []registry.Version{
				{Name: "v1beta1", Served: true, OpenAPISchema: []byte(crontabV1Schema)},
				{Name: "v1", Served: true, Storage: true, OpenAPISchema: []byte(crontabV1Schema),
					Subresources: registry.Subresources{Status: true, Scale: &registry.Scale{SpecReplicasPath: ".spec.replicas"}}},
			},
		})
	}
	return defs
}

// BenchmarkBuildAll builds every document of 200 CRDs (100 group versions).
func BenchmarkBuildAll(b *testing.B) {
	t := registry.NewTable(1, manyDefinitions(200))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := buildState(t, nil, time.Now()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRebuildOne rebuilds after one of 200 CRDs changed.
func BenchmarkRebuildOne(b *testing.B) {
	defs := manyDefinitions(200)
	prev, err := buildState(registry.NewTable(1, defs), nil, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	changed := manyDefinitions(200)
	changed[7].Versions[1].OpenAPISchema = []byte(`{"type":"object"}`)
	t := registry.NewTable(2, changed)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := buildState(t, prev, time.Now()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkV2 merges and encodes /openapi/v2 for 200 CRDs.
func BenchmarkV2(b *testing.B) {
	t := registry.NewTable(1, manyDefinitions(200))
	s, err := buildState(t, nil, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		s.v2Once = sync.Once{}
		if _, err := s.openAPIV2(time.Now()); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkServeV3Cached(b *testing.B) {
	h := New(registry.New(manyDefinitions(200)))
	req := httptest.NewRequest(http.MethodGet, "/openapi/v3/apis/g1.example.com/v1", nil)
	h.ServeHTTP(httptest.NewRecorder(), req) // build outside the loop
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
}

// oneGroupDefinitions returns n definitions in one group version, shaped
// like the load generator's crds workload (every kind in
// crds.bench.crdserver.io/v1) but with the crontab schema, so that one
// document holds n kinds.
func oneGroupDefinitions(n int) []*registry.Definition {
	defs := make([]*registry.Definition, 0, n)
	for i := 0; i < n; i++ {
		defs = append(defs, &registry.Definition{
			Group: "crds.bench.crdserver.io", Resource: fmt.Sprintf("t%ds", i), Singular: fmt.Sprintf("t%d", i),
			Kind: fmt.Sprintf("Tt%d", i), ListKind: fmt.Sprintf("Tt%dList", i), Scope: registry.Namespaced,
			Versions: []registry.Version{{Name: "v1", Served: true, Storage: true, OpenAPISchema: []byte(crontabV1Schema),
				Subresources: registry.Subresources{Status: true}}},
		})
	}
	return defs
}

// BenchmarkRebuildOneOf500 measures what a client waits for after one of
// 500 CRDs of one group version changed its schema: the first GET of that
// document after the swap (rebuild and serve), then the index. Each
// iteration swaps between two tables that differ in that one schema, so
// every iteration rebuilds.
func BenchmarkRebuildOneOf500(b *testing.B) {
	base := oneGroupDefinitions(500)
	changed := slices.Clone(base)
	d := *changed[250]
	d.Versions = slices.Clone(d.Versions)
	d.Versions[0].OpenAPISchema = []byte(strings.Replace(crontabV1Schema, `"image": {"type": "string"}`,
		`"image": {"type": "string"}, "added": {"type": "string", "description": "added by the benchmark"}`, 1))
	changed[250] = &d

	benchSwaps(b, base, changed,
		httptest.NewRequest(http.MethodGet, "/openapi/v3/apis/crds.bench.crdserver.io/v1", nil),
		httptest.NewRequest(http.MethodGet, "/openapi/v3", nil))
}

// benchSwaps swaps the registry between base and changed before each
// operation, then serves reqs, each of which must answer 200.
func benchSwaps(b *testing.B, base, changed []*registry.Definition, reqs ...*http.Request) {
	reg := registry.New(base)
	h := New(reg)
	h.ServeHTTP(httptest.NewRecorder(), reqs[0])
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i%2 == 0 {
			reg.Swap(changed)
		} else {
			reg.Swap(base)
		}
		i++
		for _, r := range reqs {
			if code := serveDiscard(h, r); code != http.StatusOK {
				b.Fatalf("GET %s: %d", r.URL.Path, code)
			}
		}
	}
}

// BenchmarkRebuildOneOf500V2 is BenchmarkRebuildOneOf500 for /openapi/v2,
// which merges every group version after each swap.
func BenchmarkRebuildOneOf500V2(b *testing.B) {
	base := oneGroupDefinitions(500)
	changed := slices.Clone(base)
	d := *changed[250]
	d.Versions = slices.Clone(d.Versions)
	d.Versions[0].OpenAPISchema = []byte(`{"type":"object"}`)
	changed[250] = &d

	benchSwaps(b, base, changed, httptest.NewRequest(http.MethodGet, "/openapi/v2", nil))
}

// discardWriter is a ResponseWriter that drops the body, so that the
// benchmarks measure the handler rather than a recorder's buffer growth.
type discardWriter struct {
	header http.Header
	code   int
}

func (w *discardWriter) Header() http.Header { return w.header }
func (w *discardWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return len(b), nil
}
func (w *discardWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func serveDiscard(h http.Handler, r *http.Request) int {
	w := &discardWriter{header: http.Header{}}
	h.ServeHTTP(w, r)
	return w.code
}
