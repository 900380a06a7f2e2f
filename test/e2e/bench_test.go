package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestBench runs the load generator against a fresh server, through both of
// its clients, on a few objects: every workload must complete without an
// error, and everything the run created must be gone afterwards.
func TestBench(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())
	for _, client := range []string{"raw", "raw-http1", "client-go"} {
		t.Run(client, func(t *testing.T) {
			args := []string{"bench", "--kubeconfig", srv.Kubeconfig, "--count", "30", "--concurrency", "4",
				"--watchers", "3", "--object-size", "2048", "--prefix", "e2e-" + client,
				"--workloads", "create,get,update,status,patch,apply,list,list-raw,list-paged,watch,delete"}
			switch client {
			case "client-go":
				args = append(args, "--client-go")
			case "raw-http1":
				args = append(args, "--http1")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			out, err := exec.CommandContext(ctx, binary, args...).CombinedOutput()
			if err != nil {
				t.Fatalf("crdserver bench: %v\n%s", err, out)
			}
			table := string(out)
			if !strings.Contains(table, "client="+client) {
				t.Errorf("report does not name the %s client:\n%s", client, table)
			}
			for _, w := range []string{"create", "get", "update", "status", "patch", "apply", "list", "list-raw", "list-paged", "watch-update", "watch", "delete"} {
				found := false
				for line := range strings.Lines(table) {
					f := strings.Fields(line)
					if len(f) >= 3 && f[0] == w {
						found = true
						if f[2] != "0" || f[1] == "0" {
							t.Errorf("%s: ops %s, errors %s; want some ops and no errors:\n%s", w, f[1], f[2], table)
						}
					}
				}
				if !found {
					t.Errorf("report has no %s row:\n%s", w, table)
				}
			}
		})
	}
	t.Run("crds,openapi", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, binary, "bench", "--kubeconfig", srv.Kubeconfig, "--resource", "namespaces",
			"--install-crd=false", "--workloads", "crds,openapi", "--count", "5").CombinedOutput()
		if err != nil {
			t.Fatalf("crdserver bench: %v\n%s", err, out)
		}
		for _, w := range []string{"crd-established", "openapi"} {
			found := false
			for line := range strings.Lines(string(out)) {
				if f := strings.Fields(line); len(f) >= 3 && f[0] == w {
					found = true
					if f[1] != "5" || f[2] != "0" {
						t.Errorf("%s: ops %s, errors %s; want 5 ops and no errors:\n%s", w, f[1], f[2], out)
					}
				}
			}
			if !found {
				t.Errorf("report has no %s row:\n%s", w, out)
			}
		}
	})
	// Deleted CRDs go once their cleanup finalizer has run.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		out := kubectl(t, srv, "get", "crd", "-o", "name")
		if !strings.Contains(out, "widgets") && !strings.Contains(out, "crds.bench") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the bench CRDs outlived the runs:\n%s", out)
		}
	}
}

// TestBenchWatchAs runs the watch workload with watchers that ask for
// metadata only, as controller-runtime's metadata informers and the
// garbage collector do: in JSON and in protobuf through the raw client,
// and in protobuf through client-go's metadata client; and, to compare,
// for whole objects. Every update must reach every watcher.
func TestBenchWatchAs(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())
	for _, tt := range []struct{ name, watchAs, client string }{
		{name: "json", watchAs: "json", client: "raw"},
		{name: "metadata", watchAs: "metadata", client: "raw"},
		{name: "metadata-protobuf", watchAs: "metadata-protobuf", client: "raw"},
		{name: "client-go metadata-protobuf", watchAs: "metadata-protobuf", client: "client-go"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"bench", "--kubeconfig", srv.Kubeconfig, "--workloads", "watch", "--objects", "10",
				"--count", "20", "--concurrency", "2", "--watchers", "2", "--watch-timeout", "20s",
				"--watch-as", tt.watchAs, "--prefix", "e2e-watch-as"}
			if tt.client == "client-go" {
				args = append(args, "--client-go")
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			out, err := exec.CommandContext(ctx, binary, args...).CombinedOutput()
			if err != nil {
				t.Fatalf("crdserver bench: %v\n%s", err, out)
			}
			table := string(out)
			header := "watchers=2 watchAs=" + tt.watchAs + " client=" + tt.client
			if tt.watchAs == "json" {
				header = "watchers=2 client=" + tt.client // the default goes unnamed
			}
			if !strings.Contains(table, header) {
				t.Errorf("report header lacks %q:\n%s", header, table)
			}
			want := map[string]string{"watch-update": "20", "watch": "40"} // 20 updates, each to 2 watchers
			for line := range strings.Lines(table) {
				f := strings.Fields(line)
				if len(f) < 3 || want[f[0]] == "" {
					continue
				}
				if f[1] != want[f[0]] || f[2] != "0" {
					t.Errorf("%s: ops %s, errors %s; want %s ops and no errors:\n%s", f[0], f[1], f[2], want[f[0]], table)
				}
				delete(want, f[0])
			}
			for w := range want {
				t.Errorf("report has no %s row:\n%s", w, table)
			}
		})
	}
}
