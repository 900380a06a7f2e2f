package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/version"
	"sigs.k8s.io/yaml"
)

// TestKubectl walks through what a user does with kubectl against a fresh
// server, step by step, checking what kubectl prints.
func TestKubectl(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())

	t.Run("version", func(t *testing.T) {
		out := kubectl(t, srv, "version")
		var server string
		for line := range strings.Lines(out) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "Server Version: "); ok {
				server = v
			}
		}
		if server == "" {
			t.Fatalf("kubectl version printed no Server Version line:\n%s", out)
		}
		v, err := version.ParseSemantic(server)
		if err != nil {
			t.Fatalf("server version %q does not parse: %v", server, err)
		}
		if v.Major() != 1 {
			t.Errorf("server version %q: major %d, want 1", server, v.Major())
		}

		// The JSON form carries major and minor separately; they must agree
		// with gitVersion.
		var doc struct {
			ServerVersion struct {
				Major, Minor, GitVersion string
			} `json:"serverVersion"`
		}
		if err := yaml.Unmarshal([]byte(kubectl(t, srv, "version", "-o", "json")), &doc); err != nil {
			t.Fatalf("kubectl version -o json: %v", err)
		}
		sv := doc.ServerVersion
		if sv.GitVersion != server || sv.Major != "1" || sv.Minor != strconv.Itoa(int(v.Minor())) {
			t.Errorf("serverVersion = %+v, want gitVersion %q with major 1 and minor %d", sv, server, v.Minor())
		}
	})

	t.Run("api-resources", func(t *testing.T) {
		out := kubectl(t, srv, "api-resources")
		rows := table(t, out)
		if want := []string{"NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"}; !slices.Equal(rows[0], want) {
			t.Fatalf("api-resources header = %q, want %q\n%s", rows[0], want, out)
		}
		row := findRow(rows, "namespaces")
		if want := []string{"namespaces", "ns", "v1", "false", "Namespace"}; !slices.Equal(row, want) {
			t.Errorf("api-resources row for namespaces = %q, want %q\n%s", row, want, out)
		}
	})

	t.Run("api-versions", func(t *testing.T) {
		out := kubectl(t, srv, "api-versions")
		if !slices.Contains(strings.Fields(out), "v1") {
			t.Errorf("api-versions does not list v1:\n%s", out)
		}
	})

	t.Run("create", func(t *testing.T) {
		if out := kubectl(t, srv, "create", "ns", "demo"); strings.TrimSpace(out) != "namespace/demo created" {
			t.Errorf("create ns demo printed %q, want %q", out, "namespace/demo created")
		}
	})

	t.Run("get", func(t *testing.T) {
		out := kubectl(t, srv, "get", "ns")
		rows := table(t, out)
		if want := []string{"NAME", "STATUS", "AGE"}; !slices.Equal(rows[0], want) {
			t.Fatalf("get ns header = %q, want %q\n%s", rows[0], want, out)
		}
		for _, name := range []string{"default", "kube-system", "kube-public", "kube-node-lease", "demo"} {
			row := findRow(rows, name)
			if len(row) != 3 || row[1] != "Active" {
				t.Errorf("get ns row for %s = %q, want %s Active <age>\n%s", name, row, name, out)
			}
		}
	})

	t.Run("get -o yaml", func(t *testing.T) {
		out := kubectl(t, srv, "get", "ns", "demo", "-o", "yaml")
		var ns map[string]any
		if err := yaml.Unmarshal([]byte(out), &ns); err != nil {
			t.Fatalf("get ns demo -o yaml is not YAML: %v\n%s", err, out)
		}
		checks := []struct {
			path string
			want any // nil: any non-empty value
		}{
			{"apiVersion", "v1"},
			{"kind", "Namespace"},
			{"metadata.name", "demo"},
			{"metadata.uid", nil},
			{"metadata.creationTimestamp", nil},
			{"metadata.resourceVersion", nil},
			{"metadata.labels.kubernetes\\.io/metadata\\.name", "demo"},
			{"spec.finalizers", []any{"kubernetes"}},
			{"status.phase", "Active"},
		}
		for _, c := range checks {
			got := lookup(ns, c.path)
			switch {
			case c.want == nil && (got == nil || got == ""):
				t.Errorf("%s is missing\n%s", c.path, out)
			case c.want != nil && !equalJSON(got, c.want):
				t.Errorf("%s = %#v, want %#v\n%s", c.path, got, c.want, out)
			}
		}
		if ts, _ := lookup(ns, "metadata.creationTimestamp").(string); ts != "" {
			created, err := time.Parse(time.RFC3339, ts)
			if err != nil || time.Since(created) > 10*time.Minute || time.Until(created) > time.Minute {
				t.Errorf("creationTimestamp %q is not a recent RFC 3339 time (%v)", ts, err)
			}
		}
	})

	t.Run("get -w", func(t *testing.T) {
		w := kubectlStream(t, srv, "get", "ns", "-w", "--output-watch-events")
		header, _ := w.waitLine(t, 20*time.Second, "header line", func(l string) bool { return strings.HasPrefix(l, "EVENT") })
		if got, want := strings.Fields(header), []string{"EVENT", "NAME", "STATUS", "AGE"}; !slices.Equal(got, want) {
			t.Errorf("get ns -w --output-watch-events header = %q, want %q", got, want)
		}
		// The initial list comes as ADDED events; once demo is there the
		// watch runs from the list's resourceVersion.
		w.waitLine(t, 20*time.Second, "initial ADDED demo", func(l string) bool {
			f := strings.Fields(l)
			return len(f) >= 3 && f[0] == "ADDED" && f[1] == "demo"
		})
		kubectl(t, srv, "create", "ns", "watched")
		line, _ := w.waitLine(t, 20*time.Second, "ADDED event for namespace watched", func(l string) bool {
			f := strings.Fields(l)
			return len(f) >= 2 && f[1] == "watched"
		})
		if f := strings.Fields(line); len(f) != 4 || f[0] != "ADDED" || f[2] != "Active" {
			t.Errorf("watch line for watched = %q, want ADDED watched Active <age>", line)
		}
	})

	t.Run("label", func(t *testing.T) {
		if out := kubectl(t, srv, "label", "ns", "demo", "team=a"); strings.TrimSpace(out) != "namespace/demo labeled" {
			t.Errorf("label printed %q, want %q", out, "namespace/demo labeled")
		}
		if out := kubectl(t, srv, "get", "ns", "-l", "team=a", "-o", "name"); out != "namespace/demo\n" {
			t.Errorf("get ns -l team=a -o name printed %q, want only namespace/demo", out)
		}
		out := kubectl(t, srv, "get", "ns", "-l", "team=a")
		rows := table(t, out)
		if len(rows) != 2 || rows[1][0] != "demo" {
			t.Errorf("get ns -l team=a shows other rows than demo:\n%s", out)
		}
	})

	t.Run("annotate", func(t *testing.T) {
		if out := kubectl(t, srv, "annotate", "ns", "demo", "note=x"); strings.TrimSpace(out) != "namespace/demo annotated" {
			t.Errorf("annotate printed %q, want %q", out, "namespace/demo annotated")
		}
		if out := kubectl(t, srv, "get", "ns", "demo", "-o", "jsonpath={.metadata.annotations.note}"); out != "x" {
			t.Errorf("annotation note = %q, want x", out)
		}
	})

	t.Run("apply", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "ns.yaml")
		manifest := func(app string) {
			doc := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: applied\n  labels:\n    app: " + app + "\n"
			if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		for _, step := range []struct{ app, want string }{
			{"one", "namespace/applied created"},
			{"one", "namespace/applied unchanged"},
			{"two", "namespace/applied configured"},
		} {
			manifest(step.app)
			if out := kubectl(t, srv, "apply", "-f", file); strings.TrimSpace(out) != step.want {
				t.Errorf("apply with app=%s printed %q, want %q", step.app, out, step.want)
			}
		}
		if out := kubectl(t, srv, "get", "ns", "applied", "-o", "jsonpath={.metadata.labels.app}"); out != "two" {
			t.Errorf("after apply, label app = %q, want two", out)
		}
		last := kubectl(t, srv, "get", "ns", "applied", "-o", `jsonpath={.metadata.annotations.kubectl\.kubernetes\.io/last-applied-configuration}`)
		if !strings.Contains(last, `"app":"two"`) {
			t.Errorf("last-applied-configuration = %q, want the applied manifest with app two", last)
		}
	})

	t.Run("delete", func(t *testing.T) {
		// kubectl delete waits until the namespace is gone: Terminating,
		// then its (empty) contents deleted, then the finalizer removed.
		if out := kubectl(t, srv, "delete", "ns", "demo"); strings.TrimSpace(out) != `namespace "demo" deleted` {
			t.Errorf("delete ns demo printed %q, want %q", out, `namespace "demo" deleted`)
		}
		_, stderr, err := kubectlResult(srv, "get", "ns", "demo")
		if want := `Error from server (NotFound): namespaces "demo" not found`; err == nil || strings.TrimSpace(stderr) != want {
			t.Errorf("get ns demo after delete: err %v, stderr %q, want %q", err, stderr, want)
		}
	})

	t.Run("get --raw /readyz", func(t *testing.T) {
		if out := kubectl(t, srv, "get", "--raw", "/readyz"); out != "ok" {
			t.Errorf("get --raw /readyz printed %q, want ok", out)
		}
	})

	t.Run("invalid name", func(t *testing.T) {
		_, stderr, err := kubectlResult(srv, "create", "ns", "Bad_Name")
		msgs := validation.IsDNS1123Label("Bad_Name")
		want := `The Namespace "Bad_Name" is invalid: ` + field.Invalid(field.NewPath("metadata", "name"), "Bad_Name", msgs[0]).Error()
		if err == nil || strings.TrimSpace(stderr) != want {
			t.Errorf("create ns Bad_Name: err %v\nstderr: %q\nwant:   %q", err, stderr, want)
		}
	})
}

// table splits kubectl's column output into rows of fields; row 0 is the
// header.
func table(t *testing.T, out string) [][]string {
	t.Helper()
	var rows [][]string
	for line := range strings.Lines(out) {
		if f := strings.Fields(line); len(f) > 0 {
			rows = append(rows, f)
		}
	}
	if len(rows) == 0 {
		t.Fatalf("kubectl printed no table:\n%q", out)
	}
	return rows
}

// findRow is the first row whose first field is name, or nil.
func findRow(rows [][]string, name string) []string {
	for _, r := range rows[1:] {
		if r[0] == name {
			return r
		}
	}
	return nil
}

// lookup follows a dotted path through decoded JSON/YAML; `\.` escapes a dot
// inside a key.
func lookup(obj map[string]any, path string) any {
	var cur any = obj
	for _, key := range splitPath(path) {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[key]
	}
	return cur
}

func splitPath(path string) []string {
	const placeholder = "\x00"
	parts := strings.Split(strings.ReplaceAll(path, `\.`, placeholder), ".")
	for i, p := range parts {
		parts[i] = strings.ReplaceAll(p, placeholder, ".")
	}
	return parts
}

func equalJSON(a, b any) bool {
	ja, err1 := yaml.Marshal(a)
	jb, err2 := yaml.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}
