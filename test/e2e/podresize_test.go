package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestPodResize resizes a pod with kubectl as a user would, through
// pods/resize: the containers' cpu and memory change in place (a new
// generation, which kubectl get shows), what else the patch names is
// left as it was, and a change of QoS class or of a resource other than
// cpu and memory is refused with upstream's message; a namespace's
// quota refuses a resize past it.
func TestPodResize(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())
	kubectl(t, srv, "create", "namespace", "resize")
	waitServiceAccount(t, srv, "resize")
	kubectl(t, srv, "apply", "-f", writeManifest(t, "web.yaml", `apiVersion: v1
kind: Pod
metadata: {name: web, namespace: resize}
spec:
  containers:
  - name: app
    image: nginx:1.27
    resizePolicy: [{resourceName: memory, restartPolicy: RestartContainer}]
    resources: {requests: {cpu: 100m, memory: 64Mi}, limits: {cpu: 200m, memory: 128Mi}}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: compute, namespace: resize}
spec:
  hard: {requests.cpu: "1"}
`))
	// The quota refuses every charge until it is counted.
	waitFor(t, 30*time.Second, "the quota counted", func() (bool, error) {
		out, _, err := kubectlResult(srv, "get", "quota", "compute", "-n", "resize", "-o", `jsonpath={.status.used.requests\.cpu}`)
		return err == nil && out == "100m", nil
	})
	get := func(jsonpath string) string {
		return kubectlLine(t, srv, "get", "pod", "web", "-n", "resize", "-o", "jsonpath="+jsonpath)
	}
	resize := func(patch string) (stdout, stderr string, err error) {
		return kubectlResult(srv, "patch", "pod", "web", "-n", "resize", "--subresource", "resize", "--patch", patch)
	}
	if out, stderr, err := resize(`{"spec":{"containers":[{"name":"app","image":"nginx:9","resources":{"requests":{"cpu":"250m","memory":"96Mi"},"limits":{"cpu":"500m"}}}]}}`); err != nil || strings.TrimSpace(out) != "pod/web patched" {
		t.Fatalf("kubectl patch --subresource resize: %v\n%s%s", err, out, stderr)
	}
	if got, want := get("{.metadata.generation} {.spec.containers[0].image} {.spec.containers[0].resources.requests.cpu} "+
		"{.spec.containers[0].resources.requests.memory} {.spec.containers[0].resources.limits.cpu} {.spec.containers[0].resizePolicy[0].resourceName}"),
		"2 nginx:1.27 250m 96Mi 500m memory"; got != want {
		t.Errorf("after the resize kubectl get shows %q, want %q", got, want)
	}
	// The same resize again changes nothing.
	if out, _, err := resize(`{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"250m"}}}]}}`); err != nil || strings.TrimSpace(out) != "pod/web patched (no change)" {
		t.Errorf("a resize to what the pod has: %v %s", err, out)
	}
	for _, c := range []struct{ patch, want string }{
		{`{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"500m","memory":"128Mi"}}}]}}`,
			`The Pod "web" is invalid: spec: Invalid value: "Burstable": Pod QOS Class may not change as a result of resizing`},
		{`{"spec":{"containers":[{"name":"app","resources":{"requests":{"ephemeral-storage":"1Gi"}}}]}}`,
			`The Pod "web" is invalid: spec: Forbidden: only cpu and memory resources are mutable`},
		{`{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"2"},"limits":{"cpu":"2"}}}]}}`,
			`pods "web" is forbidden: exceeded quota: compute, requested: requests.cpu=1750m, used: requests.cpu=250m, limited: requests.cpu=1`},
	} {
		_, stderr, err := resize(c.patch)
		if err == nil || !strings.Contains(stderr, c.want) {
			t.Errorf("kubectl patch --subresource resize %s: %v %q, want %q", c.patch, err, stderr, c.want)
		}
	}
	if got := get("{.metadata.generation} {.spec.containers[0].resources.requests.cpu}"); got != "2 250m" {
		t.Errorf("after the refusals kubectl get shows %q, want the pod as the resize left it", got)
	}
}
