package e2e

import (
	"path/filepath"
	"strings"
	"testing"
)

// schemaFixture is the path of a file in testdata/schema.
func schemaFixture(name string) string { return filepath.Join("testdata", "schema", name) }

// applySchemaCRD applies a CRD fixture from testdata/schema, checks
// kubectl's one-line answer and waits until the CRD is Established.
func applySchemaCRD(t *testing.T, srv *server, file, name, verb string) {
	t.Helper()
	want := "customresourcedefinition.apiextensions.k8s.io/" + name + " " + verb
	if got := kubectlLine(t, srv, "apply", "-f", schemaFixture(file)); got != want {
		t.Fatalf("kubectl apply -f %s printed %q, want %q", file, got, want)
	}
	waitEstablished(t, srv, name)
}

// wantOutput fails the test unless got equals the lines of want, and shows
// both in full when they differ: kubectl's multi-line errors are hard to
// read in %q form.
func wantOutput(t *testing.T, what, got string, want ...string) {
	t.Helper()
	if w := strings.Join(want, "\n"); got != w {
		t.Errorf("%s printed:\n%s\nwant:\n%s", what, got, w)
	}
}
