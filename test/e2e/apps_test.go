package e2e

import (
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestWorkloadsAndServices drives the apps/v1 workloads, the kubernetes
// Service, `kubectl get all` and the APIServices with kubectl, as a user
// of a node-less kube-apiserver would.
func TestWorkloadsAndServices(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())

	t.Run("kubernetes service", func(t *testing.T) {
		rows := table(t, kubectl(t, srv, "get", "svc", "kubernetes", "-n", "default"))
		if want := []string{"NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"}; !slices.Equal(rows[0], want) {
			t.Errorf("columns %q, want %q", rows[0], want)
		}
		if row := findRow(rows, "kubernetes"); len(row) != 6 || !slices.Equal(row[1:5], []string{"ClusterIP", "10.0.0.1", "<none>", "443/TCP"}) {
			t.Errorf("kubernetes Service row %q, want ClusterIP 10.0.0.1 <none> 443/TCP", row)
		}
		var eps map[string]any
		if err := yaml.Unmarshal([]byte(kubectl(t, srv, "get", "endpointslice", "kubernetes", "-n", "default", "-o", "yaml")), &eps); err != nil {
			t.Fatal(err)
		}
		if lookup(eps, "addressType") != "IPv4" || lookup(eps, `metadata.labels.kubernetes\.io/service-name`) != "kubernetes" {
			t.Errorf("kubernetes EndpointSlice %v", eps)
		}
	})

	// kubectl explain prints an enum's values and what each means, as
	// kube-apiserver's OpenAPI has them (its published documents do not).
	t.Run("explain enums", func(t *testing.T) {
		for _, c := range []struct {
			field string
			want  []string
		}{
			{"deployment.spec.strategy", []string{
				"enum: Recreate, RollingUpdate",
				"Possible enum values:",
				"- `\"Recreate\"` Kill all existing pods before creating new ones.",
			}},
			{"service.spec.type", []string{
				"ENUM:", "    ClusterIP", "    ExternalName", "    LoadBalancer", "    NodePort",
				"- `\"ExternalName\"` means a service consists of only a reference to an",
			}},
		} {
			out := kubectl(t, srv, "explain", c.field)
			for _, want := range c.want {
				if !strings.Contains(out, want) {
					t.Errorf("kubectl explain %s lacks %q; output:\n%s", c.field, want, out)
				}
			}
		}
	})

	t.Run("create and scale a deployment", func(t *testing.T) {
		kubectl(t, srv, "create", "deployment", "web", "--image=nginx:1.27")
		rows := table(t, kubectl(t, srv, "get", "deploy"))
		if want := []string{"NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"}; !slices.Equal(rows[0], want) {
			t.Errorf("columns %q, want %q", rows[0], want)
		}
		if row := findRow(rows, "web"); len(row) < 4 || row[1] != "0/1" || row[2] != "0" || row[3] != "0" {
			t.Errorf("web row %q, want 0/1 0 0", row)
		}
		if out := kubectl(t, srv, "scale", "deployment", "web", "--replicas=3"); !strings.Contains(out, "deployment.apps/web scaled") {
			t.Errorf("scale printed %q", out)
		}
		var d map[string]any
		if err := yaml.Unmarshal([]byte(kubectl(t, srv, "get", "deploy", "web", "-o", "yaml")), &d); err != nil {
			t.Fatal(err)
		}
		if lookup(d, "spec.replicas") != float64(3) || lookup(d, "metadata.generation") != float64(2) ||
			lookup(d, "spec.strategy.rollingUpdate.maxSurge") != "25%" || lookup(d, "spec.revisionHistoryLimit") != float64(10) {
			t.Errorf("deployment after scale: %v", d)
		}
		var scale map[string]any
		if err := yaml.Unmarshal([]byte(kubectl(t, srv, "get", "--raw", "/apis/apps/v1/namespaces/default/deployments/web/scale")), &scale); err != nil {
			t.Fatal(err)
		}
		if lookup(scale, "apiVersion") != "autoscaling/v1" || lookup(scale, "spec.replicas") != float64(3) || lookup(scale, "status.selector") != "app=web" {
			t.Errorf("scale %v", scale)
		}
	})

	t.Run("bad deployment", func(t *testing.T) {
		bad := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"bad"},"spec":{"replicas":-1,
"selector":{"matchLabels":{"app":"a"}},"template":{"metadata":{"labels":{"app":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}`
		_, stderr, err := kubectlResult(srv, "create", "-f", writeManifest(t, "bad.json", bad))
		for _, want := range []string{`The Deployment "bad" is invalid`, "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
			"spec.template.metadata.labels: Invalid value: {\"app\":\"b\"}: `selector` does not match template `labels`"} {
			if err == nil || !strings.Contains(stderr, want) {
				t.Errorf("create bad deployment: err %v, stderr %q, want %q", err, stderr, want)
			}
		}
		if _, stderr, err := kubectlResult(srv, "get", "deploy", "bad"); err == nil || !strings.Contains(stderr, "NotFound") {
			t.Errorf("the refused deployment was stored: %v %s", err, stderr)
		}
	})

	t.Run("get all", func(t *testing.T) {
		rows := table(t, kubectl(t, srv, "get", "all", "-n", "default"))
		var names []string
		for _, r := range rows {
			names = append(names, r[0])
		}
		for _, want := range []string{"service/kubernetes", "deployment.apps/web"} {
			if !slices.Contains(names, want) {
				t.Errorf("get all lists %q, want %s", names, want)
			}
		}
	})

	t.Run("apiservices", func(t *testing.T) {
		rows := table(t, kubectl(t, srv, "get", "apiservices"))
		if want := []string{"NAME", "SERVICE", "AVAILABLE", "AGE"}; !slices.Equal(rows[0], want) {
			t.Errorf("columns %q, want %q", rows[0], want)
		}
		for _, name := range []string{"v1.", "v1.apps", "v1.apiextensions.k8s.io"} {
			if row := findRow(rows, name); len(row) < 3 || row[1] != "Local" || row[2] != "True" {
				t.Errorf("apiservice %s: row %q, want Local True", name, row)
			}
		}
	})
}
