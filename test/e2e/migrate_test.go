package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestMigrateCommand walks seed 001's storage version story with
// `crdserver migrate`: objects stored at v1beta1, v1 made the storage
// version, the migration run with its progress bar, storedVersions down
// to [v1], and v1beta1 then removable from spec.versions.
func TestMigrateCommand(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())
	const crontabs = "crontabs.example.com"
	kubectlV1beta1(t, srv, "apply", "-f", v1beta1Fixture("my-versioned-crontab.yaml"))
	waitEstablished(t, srv, crontabs)

	const objects = 300
	var b strings.Builder
	for i := range objects {
		fmt.Fprintf(&b, "apiVersion: example.com/v1beta1\nkind: CronTab\nmetadata:\n  name: ct-%03d\nhost: h%d\nport: \"%d\"\n---\n", i, i, 8000+i)
	}
	file := filepath.Join(t.TempDir(), "crontabs.yaml")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	kubectl(t, srv, "create", "-f", file)

	// v1 becomes the storage version: storedVersions lists both, and
	// v1beta1 may not be removed while objects may be stored in it.
	kubectlV1beta1(t, srv, "patch", "customresourcedefinitions.v1beta1.apiextensions.k8s.io", crontabs, "--type=json", "-p",
		`[{"op":"replace","path":"/spec/versions/0/storage","value":false},{"op":"replace","path":"/spec/versions/1/storage","value":true}]`)
	crd := getRaw(t, srv, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"+crontabs)
	if got := lookup(crd, "status.storedVersions"); !equalJSON(got, []any{"v1beta1", "v1"}) {
		t.Fatalf("storedVersions %v, want [v1beta1 v1]", got)
	}
	dropV1beta1 := `[{"op":"remove","path":"/spec/versions/0"}]`
	if msg := kubectlFails(t, srv, "patch", "crd", crontabs, "--type=json", "-p", dropV1beta1); !strings.Contains(msg, "must remain in spec.versions until a storage migration ensures no data remains persisted in v1beta1") {
		t.Errorf("removing a stored version: %s", msg)
	}

	ctx := testContext(t, time.Minute)
	out, err := exec.CommandContext(ctx, binary, "migrate", "--kubeconfig", srv.Kubeconfig, "--poll", "10ms", crontabs).CombinedOutput()
	if err != nil {
		t.Fatalf("crdserver migrate: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 3 {
		t.Fatalf("crdserver migrate printed %d lines, want 3 (created, bar, result):\n%s", len(lines), out)
	}
	if !regexp.MustCompile(`^storageversionmigration\.storagemigration\.k8s\.io/crontabs\.example\.com-[a-z0-9]{5} created$`).MatchString(lines[0]) {
		t.Errorf("first line %q", lines[0])
	}
	// The bar is redrawn in place; its last state is full.
	draws := strings.Split(strings.TrimPrefix(lines[1], "\r"), "\r")
	if last := draws[len(draws)-1]; last != "["+strings.Repeat("#", 40)+fmt.Sprintf("] %d/%d objects (100%%)", objects, objects) {
		t.Errorf("last progress bar %q", last)
	}
	if !regexp.MustCompile(fmt.Sprintf(`^migrated %d objects to v1 \(%d rewritten\) in [0-9.]+m?s$`, objects, objects)).MatchString(lines[2]) {
		t.Errorf("last line %q", lines[2])
	}

	crd = getRaw(t, srv, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"+crontabs)
	if got := lookup(crd, "status.storedVersions"); !equalJSON(got, []any{"v1"}) {
		t.Errorf("storedVersions after the migration %v, want [v1]", got)
	}
	svms := kubectlYAML(t, srv, "get", "storageversionmigrations", "-o", "yaml")
	items, _ := svms["items"].([]any)
	if len(items) != 1 {
		t.Fatalf("%d StorageVersionMigrations", len(items))
	}
	conds := crdConditions(t, items[0].(map[string]any))
	if c := conds["Succeeded"]; c.Status != "True" || c.Reason != "StorageVersionMigrationSucceeded" {
		t.Errorf("Succeeded %+v", c)
	}
	if c := conds["Running"]; c.Status != "False" {
		t.Errorf("Running %+v", c)
	}

	// Now v1beta1 may go, and every object reads at v1.
	kubectl(t, srv, "patch", "crd", crontabs, "--type=json", "-p", dropV1beta1)
	ct := kubectlYAML(t, srv, "get", "crontab", "ct-007", "-o", "yaml")
	checkFields(t, "crontab", ct, []fieldCheck{{"apiVersion", "example.com/v1"}, {"host", "h7"}})

	// A resource the server does not serve fails the migration.
	out, err = exec.CommandContext(ctx, binary, "migrate", "--kubeconfig", srv.Kubeconfig, "--poll", "10ms", "gizmos.example.com").CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("migrating an unserved resource: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), `failed: the server does not serve the resource: "gizmos.example.com"`) {
		t.Errorf("migrating an unserved resource printed:\n%s", out)
	}
}
