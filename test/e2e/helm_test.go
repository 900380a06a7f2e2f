package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/test/helmbin"
)

// helmLimit bounds one helm invocation (not the first build of helm).
const helmLimit = 2 * time.Minute

// helm runs helm against srv with private config, cache and data
// directories and returns its standard output; it fails the test if helm
// fails.
func helm(t *testing.T, srv *server, home string, args ...string) string {
	t.Helper()
	path, err := helmbin.Find()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), helmLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, append([]string{"--kubeconfig", srv.Kubeconfig}, args...)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KUBECONFIG=") && !strings.HasPrefix(kv, "HELM_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env,
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out.String(), errOut.String())
	}
	return out.String()
}

// TestHelm installs, upgrades, rolls back, lists and uninstalls a chart
// with a CRD, a custom resource, a ConfigMap, a Secret, a Service and a
// Deployment, with upstream's helm built from the Go module proxy
// (test/helmbin). helm keeps its releases in Secrets.
func TestHelm(t *testing.T) {
	t.Parallel()
	if _, err := helmbin.Find(); err != nil { // a first build takes minutes
		t.Fatal(err)
	}
	srv := startServer(t, t.TempDir())
	home := t.TempDir()
	chart := filepath.Join("testdata", "helm", "widgets")
	const ns = "helm"
	ctx := testContext(t, 5*time.Minute)
	widgets := srv.Dynamic.Resource(schema.GroupVersionResource{Group: "helm.example.com", Version: "v1", Resource: "widgets"}).Namespace(ns)
	cms := srv.Client.CoreV1().ConfigMaps(ns)

	check := func(greeting string, replicas, size int64) {
		t.Helper()
		cm, err := cms.Get(ctx, "web-config", metav1.GetOptions{})
		if err != nil || cm.Data["greeting"] != greeting {
			t.Errorf("ConfigMap: %v %v, want greeting %q", cm.Data, err, greeting)
		}
		d, err := srv.Client.AppsV1().Deployments(ns).Get(ctx, "web-app", metav1.GetOptions{})
		if err != nil || d.Spec.Replicas == nil || int64(*d.Spec.Replicas) != replicas || d.Spec.Template.Annotations["greeting"] != greeting {
			t.Errorf("Deployment: %v, want %d replicas greeting %q", err, replicas, greeting)
		}
		w, err := widgets.Get(ctx, "web-widget", metav1.GetOptions{})
		if err != nil {
			t.Errorf("Widget: %v", err)
		} else if spec, _ := w.Object["spec"].(map[string]any); spec["size"] != size || spec["greeting"] != greeting {
			t.Errorf("Widget spec %v, want size %d greeting %q", spec, size, greeting)
		}
		if s, err := srv.Client.CoreV1().Secrets(ns).Get(ctx, "web-secret", metav1.GetOptions{}); err != nil || string(s.Data["password"]) != "s3cret" {
			t.Errorf("Secret: %v", err)
		}
		if s, err := srv.Client.CoreV1().Services(ns).Get(ctx, "web-svc", metav1.GetOptions{}); err != nil || s.Spec.ClusterIP == "" {
			t.Errorf("Service: %v %v", s, err)
		}
	}

	helm(t, srv, home, "install", "web", chart, "--namespace", ns, "--create-namespace")
	check("hello", 1, 3)
	if _, err := srv.Client.CoreV1().Secrets(ns).Get(ctx, "sh.helm.release.v1.web.v1", metav1.GetOptions{}); err != nil {
		t.Errorf("helm's release Secret: %v", err)
	}

	helm(t, srv, home, "upgrade", "web", chart, "--namespace", ns, "--set", "greeting=bonjour,replicas=3,size=5")
	check("bonjour", 3, 5)

	helm(t, srv, home, "rollback", "web", "1", "--namespace", ns)
	check("hello", 1, 3)

	var releases []struct{ Name, Namespace, Revision, Status, Chart string }
	if err := json.Unmarshal([]byte(helm(t, srv, home, "list", "--namespace", ns, "-o", "json")), &releases); err != nil {
		t.Fatal(err)
	}
	if len(releases) != 1 || releases[0].Name != "web" || releases[0].Revision != "3" || releases[0].Status != "deployed" || releases[0].Chart != "widgets-0.1.0" {
		t.Errorf("helm list: %+v", releases)
	}
	if out := helm(t, srv, home, "history", "web", "--namespace", ns); !strings.Contains(out, "Rollback to 1") {
		t.Errorf("helm history:\n%s", out)
	}

	helm(t, srv, home, "uninstall", "web", "--namespace", ns)
	if _, err := cms.Get(ctx, "web-config", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap after uninstall: %v", err)
	}
	if _, err := widgets.Get(ctx, "web-widget", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Widget after uninstall: %v", err)
	}
	if _, err := srv.Client.AppsV1().Deployments(ns).Get(ctx, "web-app", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Deployment after uninstall: %v", err)
	}
	if out := strings.TrimSpace(helm(t, srv, home, "list", "--namespace", ns, "-q")); out != "" {
		t.Errorf("helm list after uninstall: %q", out)
	}
	// helm leaves the CRDs of crds/ installed, as it documents.
	kubectl(t, srv, "get", "crd", "widgets.helm.example.com")
}
