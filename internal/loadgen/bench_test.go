package loadgen

import (
	"context"
	"io"
	"log/slog"
	"reflect"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
)

// TestBenchWorkloadsOnFakeClient runs every workload against client-go's
// fake dynamic client. It checks the plumbing — objects created, found,
// updated, watched and deleted, and nothing left behind — not performance.
func TestBenchWorkloadsOnFakeClient(t *testing.T) {
	for _, resource := range []string{ResourceNamespaces, ResourceWidgets} {
		t.Run(resource, func(t *testing.T) {
			client := fakeClient()
			cfg := Config{
				Resource:       resource,
				SkipInstallCRD: true, // the fake client never marks a CRD Established
				ClientGo:       true, // the fake client has no HTTP
				// client-go's fake dynamic client cannot apply; the apply
				// workload runs against a real server in test/e2e.
				Workloads:    slices.DeleteFunc(slices.Clone(Workloads), func(w string) bool { return w == "apply" }),
				Count:        40,
				Concurrency:  4,
				Watchers:     2,
				WatchTimeout: 10 * time.Second,
				Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
			}
			b := newFakeBench(t, cfg, client)
			var report Report
			ctx := context.Background()
			if err := b.run(ctx, &report); err != nil {
				t.Fatal(err)
			}
			want := []string{"create", "get", "update", "patch", "list", "list-paged", "watch-update", "watch", "delete"}
			if resource == ResourceWidgets {
				// Namespaces have no status to replace.
				want = slices.Insert(want, 3, "status")
			}
			if len(report.Results) != len(want) {
				t.Fatalf("got %d results, want %d: %+v", len(report.Results), len(want), report.Results)
			}
			for i, r := range report.Results {
				if r.Name != want[i] {
					t.Errorf("result %d is %q, want %q", i, r.Name, want[i])
				}
				wantOps := 40
				if r.Name == "watch" {
					wantOps = 40 * cfg.Watchers
				}
				if r.Ops != wantOps || r.Errors != 0 {
					t.Errorf("%s: ops=%d errors=%d (%s), want %d ops and no error", r.Name, r.Ops, r.Errors, r.FirstError, wantOps)
				}
			}
			if err := b.cleanup(ctx); err != nil {
				t.Fatal(err)
			}
			l, err := client.Resource(widgetsGVR).Namespace(b.namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(l.Items) != 0 {
				t.Errorf("%d widgets left after cleanup", len(l.Items))
			}
			l, err = client.Resource(namespacesGVR).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(l.Items) != 0 {
				t.Errorf("%d namespaces left after cleanup", len(l.Items))
			}
		})
	}
}

func TestConfigComplete(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr bool
		check   func(Config) bool
	}{
		{name: "zero value", check: func(c Config) bool {
			return c.Resource == ResourceWidgets && c.Count == 1000 && c.Concurrency == 10 && c.ObjectSize == 2048 &&
				len(c.Workloads) == len(Workloads)-3 && !slices.ContainsFunc(c.Workloads, namedOnly)
		}},
		{name: "duration only keeps count unbounded", cfg: Config{Duration: time.Second}, check: func(c Config) bool { return c.Count == 0 }},
		{name: "unknown resource", cfg: Config{Resource: "pods"}, wantErr: true},
		{name: "unknown workload", cfg: Config{Workloads: []string{"evict"}}, wantErr: true},
		{name: "negative count", cfg: Config{Count: -1}, wantErr: true},
		{name: "watch form defaults to json", check: func(c Config) bool { return c.WatchAs == WatchAsJSON }},
		{name: "metadata-protobuf watch with client-go", cfg: Config{ClientGo: true, WatchAs: WatchAsMetadataProtobuf}, check: func(c Config) bool { return c.WatchAs == WatchAsMetadataProtobuf }},
		{name: "unknown watch form", cfg: Config{WatchAs: "yaml"}, wantErr: true},
		{name: "metadata watch in JSON with client-go", cfg: Config{ClientGo: true, WatchAs: WatchAsMetadata}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.complete()
			if (err != nil) != tt.wantErr {
				t.Fatalf("complete() = %v, wantErr %v", err, tt.wantErr)
			}
			if tt.check != nil && !tt.check(tt.cfg) {
				t.Errorf("completed config %+v", tt.cfg)
			}
		})
	}
}

// TestUpdatesAreNeverNoOps guards the watch workload: an API server does not
// write (or send an event for) an update that changes nothing, so every
// update must change the object, whatever its index.
func TestUpdatesAreNeverNoOps(t *testing.T) {
	b := newFakeBench(t, Config{Resource: ResourceWidgets, ClientGo: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, fakeClient())
	ctx := context.Background()
	if err := b.create(ctx, 0); err != nil {
		t.Fatal(err)
	}
	prev := b.pop.at(0).obj.DeepCopy()
	var lastSeq int64
	// Index 0 twice, as the update and watch workloads both start there.
	for _, i := range []int{0, 0, 1} {
		if err := b.update(ctx, i, func(seq int64) {
			if seq <= lastSeq {
				t.Errorf("update number %d after %d", seq, lastSeq)
			}
			lastSeq = seq
		}); err != nil {
			t.Fatal(err)
		}
		cur := b.pop.at(0).obj
		if cur.GetAnnotations()[annotationSeq] == prev.GetAnnotations()[annotationSeq] {
			t.Errorf("update %d left %s unchanged", i, annotationSeq)
		}
		prev = cur.DeepCopy()
	}
}

// TestUnchangedRepeatsWrites: with Config.Unchanged every update writes
// the same values, so that an object's updates after its first change
// nothing, but the watch workload's updates (which wait for their events)
// still change their objects.
func TestUnchangedRepeatsWrites(t *testing.T) {
	b := newFakeBench(t, Config{Resource: ResourceWidgets, ClientGo: true, Unchanged: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, fakeClient())
	ctx := context.Background()
	if err := b.create(ctx, 0); err != nil {
		t.Fatal(err)
	}
	var written []map[string]any
	for range 2 {
		if err := b.update(ctx, 0, nil); err != nil {
			t.Fatal(err)
		}
		written = append(written, b.pop.at(0).obj.DeepCopy().Object)
	}
	for _, obj := range written {
		delete(obj["metadata"].(map[string]any), "resourceVersion")
	}
	if !reflect.DeepEqual(written[0], written[1]) {
		t.Errorf("a second update wrote other values:\n%v\n%v", written[0], written[1])
	}
	seq := b.pop.at(0).obj.GetAnnotations()[annotationSeq]
	if err := b.update(ctx, 0, func(int64) {}); err != nil {
		t.Fatal(err)
	}
	if got := b.pop.at(0).obj.GetAnnotations()[annotationSeq]; got == seq {
		t.Errorf("the watch workload's update left %s at %s", annotationSeq, got)
	}
}

// TestPrefillAdoptsKeptObjects: a run without "create" works on the objects
// an earlier run kept (--cleanup=false) instead of failing on their names.
func TestPrefillAdoptsKeptObjects(t *testing.T) {
	client := fakeClient()
	ctx := context.Background()
	for run, workloads := range [][]string{{"create"}, {"get", "update"}} {
		cfg := Config{
			Resource: ResourceWidgets, Namespace: "kept", SkipInstallCRD: true, ClientGo: true,
			Workloads: workloads, Count: 5, Objects: 5, Concurrency: 2, SkipCleanup: true,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		}
		var report Report
		if err := newFakeBench(t, cfg, client).run(ctx, &report); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		for _, r := range report.Results {
			if r.Errors > 0 || r.Ops != 5 {
				t.Errorf("run %d, %s: %d ops, %d errors (%s); want 5 ops and none", run, r.Name, r.Ops, r.Errors, r.FirstError)
			}
		}
	}
}

// fakeClient is client-go's fake dynamic client, knowing the list kinds of
// the resources the load generator uses.
func fakeClient() *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		namespacesGVR: "NamespaceList",
		widgetsGVR:    "WidgetList",
		crdsGVR:       "CustomResourceDefinitionList",
	})
}

// newFakeBench completes cfg and builds a bench on client.
func newFakeBench(t *testing.T, cfg Config, client *dynamicfake.FakeDynamicClient) *bench {
	t.Helper()
	if err := cfg.complete(); err != nil {
		t.Fatal(err)
	}
	b, err := newBench(cfg, client)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
