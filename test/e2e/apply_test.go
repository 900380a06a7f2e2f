package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

func applyFixture(name string) string { return filepath.Join("testdata", "apply", name) }

var gizmos = schema.GroupVersionResource{Group: "ssa.example.com", Version: "v1", Resource: "gizmos"}

// TestServerSideApply drives kubectl apply --server-side, kubectl diff and
// kubectl get --show-managed-fields as a user would, and sends the apply
// requests kubectl never sends to check that each is refused as upstream
// refuses it and leaves the object as it was.
func TestServerSideApply(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())

	// Every kind crdserver serves applies server-side: a CRD, a built-in,
	// and a custom resource of the CRD.
	for _, tc := range []struct{ file, want string }{
		{"crd.yaml", "customresourcedefinition.apiextensions.k8s.io/gizmos.ssa.example.com serverside-applied"},
		{"namespace.yaml", "namespace/ssa serverside-applied"},
		{"gizmo.yaml", "gizmo.ssa.example.com/g serverside-applied"},
	} {
		if got := kubectlLine(t, srv, "apply", "--server-side", "-f", applyFixture(tc.file)); got != tc.want {
			t.Fatalf("kubectl apply --server-side -f %s printed %q, want %q", tc.file, got, tc.want)
		}
		if tc.file == "crd.yaml" {
			waitEstablished(t, srv, "gizmos.ssa.example.com")
		}
	}
	// Applying the same file again changes nothing.
	rv := gizmoVersion(t, srv)
	kubectlLine(t, srv, "apply", "--server-side", "-f", applyFixture("gizmo.yaml"))
	if got := gizmoVersion(t, srv); got != rv {
		t.Errorf("applying the same configuration again: resourceVersion %s → %s, want unchanged", rv, got)
	}
	// Applying it again with values that kubectl alone owns changed, as a
	// GitOps tool re-applies, stores them and leaves every entry as it
	// was (its fields, manager and operation); then back.
	reapplyChanged(t, srv)

	t.Run("a second manager conflicts, then forces", func(t *testing.T) {
		stderr := kubectlFails(t, srv, "apply", "--server-side", "--field-manager=other", "-f", applyFixture("gizmo-other.yaml"))
		want := `error: Apply failed with 1 conflict: conflict with "kubectl": .spec.image`
		if firstLine(stderr) != want {
			t.Errorf("conflict: kubectl printed\n%s\nwant the first line %q", stderr, want)
		}
		if !strings.Contains(stderr, "--force-conflicts") {
			t.Errorf("conflict: kubectl did not print its advice on --force-conflicts (it does for a 409 with conflict causes):\n%s", stderr)
		}

		got := kubectlLine(t, srv, "apply", "--server-side", "--field-manager=other", "--force-conflicts", "-f", applyFixture("gizmo-other.yaml"))
		if want := "gizmo.ssa.example.com/g serverside-applied"; got != want {
			t.Errorf("--force-conflicts printed %q, want %q", got, want)
		}
		obj := kubectlYAML(t, srv, "get", "gizmo", "g", "-n", "ssa", "-o", "yaml", "--show-managed-fields")
		if got := lookup(obj, "spec.image"); got != "nginx:2" {
			t.Errorf("after --force-conflicts spec.image = %v, want nginx:2", got)
		}
		owners := fieldOwners(obj)
		if got, want := owners["kubectl/Apply"], `{"f:spec":{"f:ports":{"k:{\"name\":\"http\"}":{".":{},"f:name":{},"f:port":{}}},"f:replicas":{}}}`; got != want {
			t.Errorf("kubectl's entry after losing the image:\n got %s\nwant %s", got, want)
		}
		if got, want := owners["other/Apply"], `{"f:spec":{"f:image":{}}}`; got != want {
			t.Errorf("other's entry:\n got %s\nwant %s", got, want)
		}
	})

	t.Run("get shows managed fields only when asked", func(t *testing.T) {
		obj := kubectlYAML(t, srv, "get", "gizmo", "g", "-n", "ssa", "-o", "yaml", "--show-managed-fields")
		entries, _ := lookup(obj, "metadata.managedFields").([]any)
		if len(entries) != 2 {
			t.Fatalf("--show-managed-fields: %d entries, want 2 (kubectl, other):\n%v", len(entries), entries)
		}
		for _, e := range entries {
			checkFields(t, "managedFields entry", e.(map[string]any), []fieldCheck{
				{"manager", nil}, {"operation", "Apply"}, {"apiVersion", "ssa.example.com/v1"},
				{"fieldsType", "FieldsV1"}, {"time", nil}, {"fieldsV1", nil},
			})
		}
		obj = kubectlYAML(t, srv, "get", "gizmo", "g", "-n", "ssa", "-o", "yaml")
		if mf := lookup(obj, "metadata.managedFields"); mf != nil {
			t.Errorf("kubectl get -o yaml without --show-managed-fields shows managedFields: %v", mf)
		}
		ns := kubectlYAML(t, srv, "get", "namespace", "ssa", "-o", "yaml", "--show-managed-fields")
		if got := fieldOwners(ns)["kubectl/Apply"]; got != `{"f:metadata":{"f:labels":{"f:team":{}}}}` {
			t.Errorf("the namespace's kubectl entry = %s", got)
		}
	})

	t.Run("diff shows a change before it is applied", func(t *testing.T) {
		rv := gizmoVersion(t, srv)
		for _, args := range [][]string{
			{"diff", "--server-side", "-f", applyFixture("gizmo-replicas.yaml")},
			{"diff", "-f", applyFixture("gizmo-replicas.yaml")},
		} {
			stdout, stderr, err := kubectlResult(srv, args...)
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Errorf("kubectl %s: %v, want exit status 1 (differences found)\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout, stderr)
				continue
			}
			if !strings.Contains(stdout, "-  replicas: 1") || !strings.Contains(stdout, "+  replicas: 3") {
				t.Errorf("kubectl %s does not show replicas 1 → 3:\n%s", strings.Join(args, " "), stdout)
			}
		}
		if got := gizmoVersion(t, srv); got != rv {
			t.Errorf("kubectl diff changed the object: resourceVersion %s → %s", rv, got)
		}
	})

	t.Run("server dry run changes nothing", func(t *testing.T) {
		rv := gizmoVersion(t, srv)
		got := kubectlLine(t, srv, "apply", "--server-side", "--dry-run=server", "-f", applyFixture("gizmo-replicas.yaml"))
		if want := "gizmo.ssa.example.com/g serverside-applied (server dry run)"; got != want {
			t.Errorf("--dry-run=server printed %q, want %q", got, want)
		}
		obj := kubectlYAML(t, srv, "get", "gizmo", "g", "-n", "ssa", "-o", "yaml")
		if got := lookup(obj, "spec.replicas"); !equalJSON(got, 1) {
			t.Errorf("after a server dry run spec.replicas = %v, want 1", got)
		}
		if got := gizmoVersion(t, srv); got != rv {
			t.Errorf("a server dry run changed resourceVersion %s → %s", rv, got)
		}
	})

	t.Run("kubectl names a field the schema does not declare", func(t *testing.T) {
		rv := gizmoVersion(t, srv)
		stderr := kubectlFails(t, srv, "apply", "--server-side", "-f", applyFixture("gizmo-unknown.yaml"))
		if !strings.Contains(stderr, ".spec.x: field not declared in schema") {
			t.Errorf("kubectl printed\n%s\nwant it to name .spec.x: field not declared in schema", stderr)
		}
		if got := gizmoVersion(t, srv); got != rv {
			t.Errorf("the refused apply changed resourceVersion %s → %s", rv, got)
		}
	})

	t.Run("bad input is refused and stores nothing", func(t *testing.T) {
		const path = "/apis/ssa.example.com/v1/namespaces/ssa/gizmos/g"
		for _, tc := range []struct {
			name, manager, body string
			code                int32
			message             string // a part of the Status message
		}{
			{"malformed YAML", "m", "apiVersion: ssa.example.com/v1\nkind: Gizmo\nmetadata: {name: g\n", 400, "yaml"},
			{"a body of another kind", "m", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: g, namespace: ssa}\n", 400,
				"invalid object type: /v1, Kind=ConfigMap"},
			{"a fieldManager of 129 characters", strings.Repeat("m", 129), gizmoApply("spec: {replicas: 9}"), 422,
				"fieldManager: Too long: may not be more than 128 bytes"},
			{"no fieldManager", "", gizmoApply("spec: {replicas: 9}"), 422,
				"fieldManager: Required value: is required for apply patch"},
			{"a field the schema does not declare", "m", gizmoApply("spec: {x: 1}"), 400,
				"failed to create typed patch object (ssa/g; ssa.example.com/v1, Kind=Gizmo): .spec.x: field not declared in schema"},
			{"duplicate list-map keys", "m", gizmoApply("spec: {ports: [{name: http, port: 1}, {name: http, port: 2}]}"), 400,
				`.spec.ports: duplicate entries for key [name="http"]`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				rv := gizmoVersion(t, srv)
				req := srv.Client.Discovery().RESTClient().Patch(types.ApplyPatchType).AbsPath(path).Body([]byte(tc.body))
				if tc.manager != "" {
					req = req.Param("fieldManager", tc.manager)
				}
				var code int
				err := req.Do(testContext(t, kubectlLimit)).StatusCode(&code).Error()
				var status apierrors.APIStatus
				if !errors.As(err, &status) {
					t.Fatalf("got %v (code %d), want a Status", err, code)
				}
				st := status.Status()
				if st.Code != tc.code || !strings.Contains(st.Message, tc.message) {
					t.Errorf("got %d %q, want %d with %q", st.Code, st.Message, tc.code, tc.message)
				}
				if got := gizmoVersion(t, srv); got != rv {
					t.Errorf("the refused apply changed resourceVersion %s → %s", rv, got)
				}
			})
		}
	})
}

// gizmoApply is an apply configuration of Gizmo g with the given YAML
// after its metadata.
func gizmoApply(rest string) string {
	return "apiVersion: ssa.example.com/v1\nkind: Gizmo\nmetadata: {name: g, namespace: ssa}\n" + rest + "\n"
}

// reapplyChanged applies gizmo.yaml with its image and replicas changed,
// checks that the object has them and the same managedFields entries but
// for their times, and applies gizmo.yaml back.
func reapplyChanged(t *testing.T, srv *server) {
	t.Helper()
	entries := func() (map[string]any, []any) {
		obj, err := srv.Dynamic.Resource(gizmos).Namespace("ssa").Get(context.Background(), "g", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("reading gizmo g: %v", err)
		}
		var out []any
		for _, e := range obj.GetManagedFields() {
			e.Time = nil
			out = append(out, e)
		}
		return obj.Object, out
	}
	_, before := entries()
	orig, err := os.ReadFile(applyFixture("gizmo.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	changed := filepath.Join(t.TempDir(), "gizmo.yaml")
	body := strings.NewReplacer("image: nginx:1", "image: nginx:1b", "replicas: 1", "replicas: 2").Replace(string(orig))
	if err := os.WriteFile(changed, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	kubectlLine(t, srv, "apply", "--server-side", "-f", changed)
	obj, after := entries()
	spec, _ := obj["spec"].(map[string]any)
	if spec["image"] != "nginx:1b" || spec["replicas"] != int64(2) {
		t.Errorf("applying changed values: spec is %v, want image nginx:1b and replicas 2", spec)
	}
	if !reflect.DeepEqual(before, after) {
		t.Errorf("applying changed values that kubectl alone owns changed the entries:\nbefore %+v\nafter  %+v", before, after)
	}
	kubectlLine(t, srv, "apply", "--server-side", "-f", applyFixture("gizmo.yaml"))
	if obj, _ := entries(); obj["spec"].(map[string]any)["image"] != "nginx:1" {
		t.Errorf("applying gizmo.yaml back: spec is %v", obj["spec"])
	}
}

func gizmoVersion(t *testing.T, srv *server) string {
	t.Helper()
	obj, err := srv.Dynamic.Resource(gizmos).Namespace("ssa").Get(context.Background(), "g", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading gizmo g: %v", err)
	}
	return obj.GetResourceVersion()
}

// fieldOwners maps "manager/operation" to each managedFields entry's
// fieldsV1, as compact JSON.
func fieldOwners(obj map[string]any) map[string]string {
	out := map[string]string{}
	entries, _ := lookup(obj, "metadata.managedFields").([]any)
	for _, x := range entries {
		e, _ := x.(map[string]any)
		b, _ := json.Marshal(e["fieldsV1"])
		out[e["manager"].(string)+"/"+e["operation"].(string)] = string(b)
	}
	return out
}
