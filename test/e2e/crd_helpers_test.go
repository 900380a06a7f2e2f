package e2e

import (
	"context"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"
)

// crdSettle bounds how long a CRD change may take to show in discovery and
// routes. Upstream's docs say "a few seconds"; the CRD watch makes it much
// faster, but the machine running the tests may be loaded.
const crdSettle = 10 * time.Second

// crdFixture is the path of a file in testdata/crd.
func crdFixture(name string) string { return filepath.Join("testdata", "crd", name) }

// crdAge matches the AGE column of an object made moments ago ("7s",
// "1m2s").
var crdAge = regexp.MustCompile(`^[0-9]+(s|m[0-9]*s?)$`)

// kubectlFails runs kubectl, fails the test if kubectl succeeds, and returns
// what it printed on standard error, trimmed.
func kubectlFails(t *testing.T, srv *server, args ...string) string {
	t.Helper()
	stdout, stderr, err := kubectlResult(srv, args...)
	if err == nil {
		t.Fatalf("kubectl %s succeeded, want it to fail; stdout:\n%s\nstderr:\n%s", strings.Join(args, " "), stdout, stderr)
	}
	return strings.TrimSpace(stderr)
}

// kubectlLine runs kubectl and returns standard output trimmed: the one line
// that commands such as create, apply and delete print. Standard error must
// stay empty: kubectl's warnings (from a Warning header or a schema it could
// not use) are part of what the user sees.
func kubectlLine(t *testing.T, srv *server, args ...string) string {
	t.Helper()
	return kubectlLineWarned(t, srv, "", args...)
}

// kubectlLineWarned is kubectlLine where standard error may also have
// warning, a line upstream prints as well, however often.
func kubectlLineWarned(t *testing.T, srv *server, warning string, args ...string) string {
	t.Helper()
	stdout, stderr, err := kubectlResult(srv, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout, stderr)
	}
	rest := stderr
	if warning != "" {
		rest = strings.TrimSpace(strings.ReplaceAll(stderr, warning, ""))
	}
	if rest != "" {
		t.Errorf("kubectl %s printed on standard error:\n%s", strings.Join(args, " "), stderr)
	}
	return strings.TrimSpace(stdout)
}

// kubectlYAML runs kubectl with -o yaml (or -o json, given in args) and
// decodes what it prints.
func kubectlYAML(t *testing.T, srv *server, args ...string) map[string]any {
	t.Helper()
	out := kubectl(t, srv, args...)
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(out), &obj); err != nil {
		t.Fatalf("kubectl %s: output is not YAML/JSON: %v\n%s", strings.Join(args, " "), err, out)
	}
	return obj
}

// applyCRD applies a CRD fixture, checks kubectl's one-line answer, and
// waits until the CRD is Established the way the seed says to: with
// kubectl wait.
func applyCRD(t *testing.T, srv *server, file, name, verb string) {
	t.Helper()
	want := "customresourcedefinition.apiextensions.k8s.io/" + name + " " + verb
	if got := kubectlLine(t, srv, "apply", "-f", crdFixture(file)); got != want {
		t.Fatalf("kubectl apply -f %s printed %q, want %q", file, got, want)
	}
	waitEstablished(t, srv, name)
}

// waitEstablished runs kubectl wait --for condition=established.
func waitEstablished(t *testing.T, srv *server, name string) {
	t.Helper()
	out := kubectlLine(t, srv, "wait", "--for", "condition=established", "--timeout=30s", "crd/"+name)
	if want := "customresourcedefinition.apiextensions.k8s.io/" + name + " condition met"; out != want {
		t.Fatalf("kubectl wait --for condition=established crd/%s printed %q, want %q", name, out, want)
	}
}

// condition is one entry of a CRD's status.conditions.
type condition struct{ Type, Status, Reason, Message string }

// crdConditions returns the CRD's conditions by type.
func crdConditions(t *testing.T, crd map[string]any) map[string]condition {
	t.Helper()
	list, _ := lookup(crd, "status.conditions").([]any)
	conds := map[string]condition{}
	for _, c := range list {
		m, _ := c.(map[string]any)
		s := func(k string) string { v, _ := m[k].(string); return v }
		conds[s("type")] = condition{Type: s("type"), Status: s("status"), Reason: s("reason"), Message: s("message")}
		if ts := s("lastTransitionTime"); ts == "" {
			t.Errorf("condition %s has no lastTransitionTime", s("type"))
		} else if _, err := time.Parse(time.RFC3339, ts); err != nil {
			t.Errorf("condition %s lastTransitionTime %q: %v", s("type"), ts, err)
		}
	}
	return conds
}

// mapKeys lists the keys of a decoded JSON object, sorted.
func mapKeys(v any) []string {
	m, _ := v.(map[string]any)
	return slices.Sorted(maps.Keys(m))
}

// fieldCheck is a dotted path into a decoded object and its wanted value;
// want nil means any non-empty value.
type fieldCheck struct {
	path string
	want any
}

func checkFields(t *testing.T, what string, obj map[string]any, checks []fieldCheck) {
	t.Helper()
	for _, c := range checks {
		got := lookup(obj, c.path)
		switch {
		case c.want == nil && (got == nil || got == ""):
			t.Errorf("%s: %s is missing", what, c.path)
		case c.want != nil && !equalJSON(got, c.want):
			t.Errorf("%s: %s = %#v, want %#v", what, c.path, got, c.want)
		}
	}
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// createCRD creates crd, waits until it is established, and returns it
// with a client in namespace ns for each of its versions.
func createCRD(ctx context.Context, t *testing.T, srv *server, crd *apiextensionsv1.CustomResourceDefinition, ns string) (*apiextensionsv1.CustomResourceDefinition, map[string]dynamic.ResourceInterface) {
	t.Helper()
	crd, err := apiextensionsclient.NewForConfigOrDie(srv.Config).ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitEstablished(t, srv, crd.Name)
	clients := map[string]dynamic.ResourceInterface{}
	for _, v := range crd.Spec.Versions {
		clients[v.Name] = srv.Dynamic.Resource(schema.GroupVersionResource{Group: crd.Spec.Group, Version: v.Name, Resource: crd.Spec.Names.Plural}).Namespace(ns)
	}
	return crd, clients
}
