package watchcache

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"
)

// bigObject is a ~2 KB object.
func bigObject(ns, name, app string) []byte {
	b, _ := json.Marshal(map[string]any{
		"apiVersion": "example.com/v1",
		"kind":       "Widget",
		"metadata":   map[string]any{"name": name, "namespace": ns, "labels": map[string]string{"app": app, "tier": "backend"}},
		"spec":       map[string]any{"payload": strings.Repeat("x", 1900)},
	})
	return b
}

// benchRig fills a cache with n ~2 KB objects in 10 namespaces, one in
// ten labelled app=x.
func benchRig(b *testing.B, n int) *rig {
	r := newRig(b, newMemStore(), Options{Clock: clock.RealClock{}})
	var last int64
	for i := range n {
		ns := fmt.Sprintf("ns%d", i%10)
		name := fmt.Sprintf("obj-%05d", i)
		app := "y"
		if i%10 == 3 {
			app = "x"
		}
		rev, err := r.store.Create(r.ctx, key(ns, name), bigObject(ns, name, app))
		if err != nil {
			b.Fatal(err)
		}
		last = rev
	}
	r.waitRev(last)
	return r
}

func BenchmarkList(b *testing.B) {
	r := benchRig(b, 10000)
	ctx := context.Background()
	sel, _ := labels.Parse("app=x")
	cases := []struct {
		name string
		opts ListOptions
		want int
	}{
		{"rv0", ListOptions{ResourceVersion: "0"}, 10000},
		{"consistent", ListOptions{}, 10000},
		{"rv0-label", ListOptions{ResourceVersion: "0", Labels: sel}, 1000},
		{"rv0-namespace", ListOptions{ResourceVersion: "0", Namespace: "ns3"}, 1000},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				res, err := r.cache.List(ctx, tc.opts)
				if err != nil {
					b.Fatal(err)
				}
				if len(res.Items) != tc.want {
					b.Fatalf("%d items, want %d", len(res.Items), tc.want)
				}
			}
		})
	}
}

// BenchmarkListPaginated reads all 10,000 objects in pages of 500; one op
// is the whole walk (20 pages).
func BenchmarkListPaginated(b *testing.B) {
	r := benchRig(b, 10000)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		opts := ListOptions{Limit: 500}
		n := 0
		for {
			res, err := r.cache.List(ctx, opts)
			if err != nil {
				b.Fatal(err)
			}
			n += len(res.Items)
			if res.Continue == "" {
				break
			}
			opts.Continue = res.Continue
		}
		if n != 10000 {
			b.Fatalf("%d items", n)
		}
	}
}

// BenchmarkFanout measures the latency of one write reaching 100 watchers:
// each op is one storage write, applied by the cache and delivered to
// every watcher.
func BenchmarkFanout(b *testing.B) {
	for _, watchers := range []int{1, 100} {
		b.Run(strconv.Itoa(watchers)+"-watchers", func(b *testing.B) {
			r := newRig(b, newMemStore(), Options{Clock: clock.RealClock{}})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var wg sync.WaitGroup
			var delivered sync.WaitGroup
			for range watchers {
				w, err := r.cache.Watch(ctx, WatchOptions{ResourceVersion: strconv.FormatInt(r.cache.Revision(), 10)})
				if err != nil {
					b.Fatal(err)
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range w.ResultChan() {
						delivered.Done()
					}
				}()
			}
			value := bigObject("ns", "obj", "x")
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				delivered.Add(watchers)
				if _, err := r.store.Create(ctx, key("ns", strconv.Itoa(i)), value); err != nil {
					b.Fatal(err)
				}
				delivered.Wait()
				i++
			}
			cancel()
			wg.Wait()
		})
	}
}
