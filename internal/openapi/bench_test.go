package openapi

import (
	"fmt"
	"net/http"
	"net/http/httptest"
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
