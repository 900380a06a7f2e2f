package crdtest_test

import (
	"context"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/crdserver/crdserver/crdtest"
)

// widgetCRD is a small CRD with a schema, as operators' CRDs start.
func widgetCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.bench.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "bench.example.com",
			Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"size": {Type: "integer", Minimum: ptr(0.0)},
						}},
						"status": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"ready": {Type: "boolean"},
						}},
					},
				}},
			}},
		},
	}
}

func ptr[T any](v T) *T { return &v }

var widgetGVR = schema.GroupVersionResource{Group: "bench.example.com", Version: "v1", Resource: "widgets"}

func createWidget(ctx context.Context, client dynamic.Interface, name string) error {
	_, err := client.Resource(widgetGVR).Namespace("default").Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "bench.example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"size": int64(1)},
	}}, metav1.CreateOptions{})
	return err
}

// BenchmarkStart measures what a test waits for: a server started, one
// CRD Established and one object of it written. It reports the median
// and 99th percentile over the iterations.
func BenchmarkStart(b *testing.B) {
	ctx := context.Background()
	var took []time.Duration
	var cpu time.Duration
	for b.Loop() {
		cpuStart := cpuTime()
		start := time.Now()
		s, err := crdtest.StartServer(ctx, crdtest.Options{CRDs: []*apiextensionsv1.CustomResourceDefinition{widgetCRD()}})
		if err != nil {
			b.Fatal(err)
		}
		if err := createWidget(ctx, dynamic.NewForConfigOrDie(s.Config), "w"); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
		cpu += cpuTime() - cpuStart
		b.StopTimer()
		if err := s.Stop(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	slices.Sort(took)
	b.ReportMetric(float64(percentile(took, 50).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(percentile(took, 99).Microseconds())/1000, "p99-ms")
	// CPU time is what a loaded machine cannot hide: wall times grow with
	// the load, the work a start takes does not.
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(len(took)), "cpu-ms/start")
}

// cpuTime is the CPU time (user and system) the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func percentile(sorted []time.Duration, p int) time.Duration {
	return sorted[(len(sorted)-1)*p/100]
}

// BenchmarkIdleServers reports the heap each idle server holds: the heap
// in use after starting idleServers servers (each with one CRD and one
// object), less the heap before, divided by their number.
func BenchmarkIdleServers(b *testing.B) {
	const idleServers = 10
	ctx := context.Background()
	for b.Loop() {
		before := heapInUse()
		servers := make([]*crdtest.Server, 0, idleServers)
		for range idleServers {
			s, err := crdtest.StartServer(ctx, crdtest.Options{CRDs: []*apiextensionsv1.CustomResourceDefinition{widgetCRD()}})
			if err != nil {
				b.Fatal(err)
			}
			servers = append(servers, s)
			if err := createWidget(ctx, dynamic.NewForConfigOrDie(s.Config), "w"); err != nil {
				b.Fatal(err)
			}
		}
		time.Sleep(100 * time.Millisecond) // let start-up goroutines settle
		after := heapInUse()
		b.ReportMetric(float64(after-before)/idleServers/(1<<20), "MB/server")
		for _, s := range servers {
			if err := s.Stop(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}
