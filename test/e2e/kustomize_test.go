package e2e

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// kubectlStdin is kubectl with stdin as its standard input.
func kubectlStdin(t *testing.T, srv *server, stdin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kubectlLimit)
	defer cancel()
	cmd, err := kubectlCommand(ctx, srv, args...)
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out.String(), errOut.String())
	}
	return out.String()
}

// TestKustomize: `kubectl kustomize DIR | kubectl apply -f -` of an
// overlay (namespace, name prefix, labels, generated ConfigMap and Secret
// with hashed names, replicas, a JSON patch of a custom resource) creates
// everything, and applying it again changes nothing.
func TestKustomize(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())
	dir := filepath.Join("testdata", "kustomize")
	kubectl(t, srv, "apply", "-f", filepath.Join(dir, "gizmo-crd.yaml"))
	kubectl(t, srv, "wait", "--for=condition=Established", "crd/gizmos.kustomize.example.com", "--timeout=60s")

	manifests := kubectl(t, srv, "kustomize", filepath.Join(dir, "overlay"))
	out := kubectlStdin(t, srv, manifests, "apply", "-f", "-")
	for _, want := range []string{
		"namespace/kust created", "configmap/prod-app-config-", "secret/prod-app-secret-",
		"service/prod-app created", "deployment.apps/prod-app created", "gizmo.kustomize.example.com/prod-gizmo created",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl apply output lacks %q:\n%s", want, out)
		}
	}

	ctx := testContext(t, 60*time.Second)
	d, err := srv.Client.AppsV1().Deployments("kust").Get(ctx, "prod-app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *d.Spec.Replicas != 3 || d.Labels["env"] != "prod" {
		t.Errorf("Deployment: replicas %d, labels %v", *d.Spec.Replicas, d.Labels)
	}
	cmName := d.Spec.Template.Spec.Containers[0].EnvFrom[0].ConfigMapRef.Name
	cm, err := srv.Client.CoreV1().ConfigMaps("kust").Get(ctx, cmName, metav1.GetOptions{})
	if err != nil || cm.Data["greeting"] != "bonjour" || !strings.HasPrefix(cmName, "prod-app-config-") {
		t.Errorf("generated ConfigMap %q: %v %v", cmName, cm, err)
	}
	secretName := d.Spec.Template.Spec.Containers[0].EnvFrom[1].SecretRef.Name
	if s, err := srv.Client.CoreV1().Secrets("kust").Get(ctx, secretName, metav1.GetOptions{}); err != nil || string(s.Data["password"]) != "s3cret" {
		t.Errorf("generated Secret %q: %v", secretName, err)
	}
	g, err := srv.Dynamic.Resource(schema.GroupVersionResource{Group: "kustomize.example.com", Version: "v1", Resource: "gizmos"}).
		Namespace("kust").Get(ctx, "prod-gizmo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if spec, _ := g.Object["spec"].(map[string]any); spec["size"] != int64(5) {
		t.Errorf("patched Gizmo spec: %v", g.Object["spec"])
	}

	out = kubectlStdin(t, srv, manifests, "apply", "-f", "-")
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasSuffix(line, " unchanged") {
			t.Errorf("second apply changed something:\n%s", out)
			break
		}
	}
}
