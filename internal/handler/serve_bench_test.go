package handler

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/registry"
	"github.com/crdserver/crdserver/internal/request"
	"github.com/crdserver/crdserver/internal/storage/memory"
	"github.com/crdserver/crdserver/internal/watchcache"
)

// benchStores serves one store.
type benchStores struct {
	gr    schema.GroupResource
	store *Store
}

func (s benchStores) Store(gr schema.GroupResource) (*Store, bool) {
	return s.store, gr == s.gr
}

// discardWriter is a ResponseWriter that keeps nothing but its header
// map, cleared for each request, so that a benchmark counts the
// handler's work and not a recorder's.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(int)             {}
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }

// BenchmarkServeRead is a get of the load generator's 3.5 KB Widget and
// a list of 100 of them from the watch cache, through ServeHTTP as the
// router calls it, as plain JSON and indented.
func BenchmarkServeRead(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	def := &registry.Definition{
		Group: "bench.crdserver.io", Resource: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList",
		Scope: registry.Namespaced, Versions: []registry.Version{{Name: "v1", Served: true, Storage: true}},
	}
	reg := registry.New([]*registry.Definition{def})
	mem := memory.New()
	defer mem.Close()
	prefix := "/registry/bench.crdserver.io/widgets/"
	for i := range 100 {
		obj := strings.Replace(benchWidget(""), `"name":"bench-1"`, fmt.Sprintf(`"name":"bench-%d"`, i), 1)
		if _, err := mem.Create(ctx, fmt.Sprintf("%slt/bench-%d", prefix, i), []byte(obj)); err != nil {
			b.Fatal(err)
		}
	}
	cache := watchcache.New(mem, prefix, ItemDecoder(func() *registry.Definition { return def }), watchcache.Options{})
	cache.Start(ctx)
	defer cache.Stop()
	if err := cache.WaitReady(ctx); err != nil {
		b.Fatal(err)
	}
	h := New(Config{Registry: reg, Stores: benchStores{def.GroupResource(), &Store{Storage: mem, Cache: cache, Prefix: prefix}}})

	for _, tc := range []struct{ name, path, query, userAgent string }{
		{"get", "/apis/bench.crdserver.io/v1/namespaces/lt/widgets/bench-1", "", "kubectl/v1.37.2"},
		{"get-pretty", "/apis/bench.crdserver.io/v1/namespaces/lt/widgets/bench-1", "", "curl/8.5.0"},
		{"list", "/apis/bench.crdserver.io/v1/namespaces/lt/widgets", "resourceVersion=0", "kubectl/v1.37.2"},
		{"list-pretty", "/apis/bench.crdserver.io/v1/namespaces/lt/widgets", "resourceVersion=0&pretty=true", "kubectl/v1.37.2"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			q, _ := url.ParseQuery(tc.query)
			info, err := request.Parse(http.MethodGet, tc.path, q)
			if err != nil {
				b.Fatal(err)
			}
			r, err := http.NewRequestWithContext(request.WithInfo(ctx, info), http.MethodGet, tc.path+"?"+tc.query, nil)
			if err != nil {
				b.Fatal(err)
			}
			r.Header.Set("Accept", "application/json")
			r.Header.Set("User-Agent", tc.userAgent)
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				h.ServeHTTP(w, r)
			}
		})
	}
}
