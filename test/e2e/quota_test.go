package e2e

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const quotaManifest = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.quota.example.com
spec:
  group: quota.example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
---
apiVersion: v1
kind: Namespace
metadata:
  name: limited
`

const quotaObject = `apiVersion: v1
kind: ResourceQuota
metadata:
  name: small
  namespace: limited
spec:
  hard:
    configmaps: "2"
    count/gadgets.quota.example.com: "1"
    services.nodeports: "1"
    limits.cpu: "2"
    pods: "3"
`

// TestResourceQuotas walks a ResourceQuota as a user meets one with
// kubectl: its status counted (kube-root-ca.crt among the ConfigMaps,
// pods at 0), creates past it refused with upstream's message and nothing
// stored, a delete giving its usage back, a dry run checked but not
// charged, and a quota kubectl cannot create.
func TestResourceQuotas(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())
	kubectl(t, srv, "apply", "-f", writeManifest(t, "crd.yaml", quotaManifest))
	waitEstablished(t, srv, "gadgets.quota.example.com")
	kubectl(t, srv, "apply", "-f", writeManifest(t, "quota.yaml", quotaObject))

	used := func(name string) string {
		return kubectl(t, srv, "get", "quota", "small", "-n", "limited", "-o", fmt.Sprintf(`jsonpath={.status.used.%s}`, strings.ReplaceAll(name, ".", `\.`)))
	}
	waitUsed := func(name, want string) {
		t.Helper()
		waitFor(t, 30*time.Second, name+" used "+want, func() (bool, error) { return used(name) == want, nil })
	}
	waitUsed("configmaps", "1") // kube-root-ca.crt
	for name, want := range map[string]string{"count/gadgets.quota.example.com": "0", "services.nodeports": "0", "pods": "0", "limits.cpu": "0"} {
		if got := used(name); got != want {
			t.Errorf("used %s %q, want %q", name, got, want)
		}
	}
	rows := table(t, kubectl(t, srv, "get", "quota", "-n", "limited"))
	if got := strings.Join(rows[0], " "); got != "NAME REQUEST LIMIT AGE" {
		t.Errorf("kubectl get quota columns %q", got)
	}
	if row := strings.Join(findRow(rows, "small"), " "); !strings.Contains(row, "configmaps: 1/2, count/gadgets.quota.example.com: 0/1, pods: 0/3, services.nodeports: 0/1 limits.cpu: 0/2") {
		t.Errorf("kubectl get quota row %q", row)
	}

	kubectl(t, srv, "create", "configmap", "one", "-n", "limited")
	refused := func(want string, args ...string) {
		t.Helper()
		if got := kubectlFails(t, srv, args...); !strings.Contains(got, want) {
			t.Errorf("kubectl %s: %q, want %q in it", strings.Join(args, " "), got, want)
		}
	}
	refused(`configmaps "two" is forbidden: exceeded quota: small, requested: configmaps=1, used: configmaps=2, limited: configmaps=2`,
		"create", "configmap", "two", "-n", "limited")
	refused(`configmaps "two" is forbidden: exceeded quota: small`, "create", "configmap", "two", "-n", "limited", "--dry-run=server")
	if _, _, err := kubectlResult(srv, "get", "configmap", "two", "-n", "limited"); err == nil {
		t.Error("a refused ConfigMap was stored")
	}

	gadget := func(name string) string {
		return writeManifest(t, name+".yaml", "apiVersion: quota.example.com/v1\nkind: Gadget\nmetadata: {name: "+name+", namespace: limited}\n")
	}
	// A dry run under the limit is not charged.
	kubectl(t, srv, "create", "-f", gadget("first"), "--dry-run=server")
	if got := used("count/gadgets.quota.example.com"); got != "0" {
		t.Errorf("a dry run was charged: used %q", got)
	}
	kubectl(t, srv, "create", "-f", gadget("first"))
	refused(`gadgets.quota.example.com "second" is forbidden: exceeded quota: small, requested: count/gadgets.quota.example.com=1, used: count/gadgets.quota.example.com=1, limited: count/gadgets.quota.example.com=1`,
		"create", "-f", gadget("second"))
	kubectl(t, srv, "delete", "gadget", "first", "-n", "limited")
	waitUsed("count/gadgets.quota.example.com", "0")
	kubectl(t, srv, "create", "-f", gadget("second"))

	kubectl(t, srv, "create", "service", "nodeport", "np", "--tcp=80:80", "-n", "limited")
	refused(`services "np2" is forbidden: exceeded quota: small, requested: services.nodeports=1, used: services.nodeports=1, limited: services.nodeports=1`,
		"create", "service", "nodeport", "np2", "--tcp=80:80", "-n", "limited")
	kubectl(t, srv, "create", "service", "clusterip", "plain", "--tcp=80:80", "-n", "limited")
	// An update is charged what it adds: node ports here.
	refused(`services "plain" is forbidden: exceeded quota: small, requested: services.nodeports=1, used: services.nodeports=1, limited: services.nodeports=1`,
		"patch", "service", "plain", "-n", "limited", "-p", `{"spec":{"type":"NodePort"}}`)
	if got := kubectl(t, srv, "get", "service", "plain", "-n", "limited", "-o", "jsonpath={.spec.type}"); got != "ClusterIP" {
		t.Errorf("a refused update changed the Service's type to %q", got)
	}

	refused(`spec.hard[apples]: Invalid value: "apples": must be a standard resource for quota`,
		"create", "quota", "bad", "-n", "limited", "--hard=apples=1")
	refused(`spec.hard[configmaps]: Invalid value: "-1": must be greater than or equal to 0`,
		"create", "quota", "bad", "-n", "limited", "--hard=configmaps=-1")
}

// TestLimitRanges: a LimitRange is stored with upstream's defaults,
// listed by its short name with the default columns, and refused with
// upstream's message when its amounts contradict each other.
func TestLimitRanges(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())
	kubectl(t, srv, "apply", "-f", writeManifest(t, "limits.yaml", `apiVersion: v1
kind: LimitRange
metadata:
  name: defaults
spec:
  limits:
  - type: Container
    max: {cpu: "2"}
    min: {memory: 64Mi}
`))
	if got := kubectl(t, srv, "get", "limitrange", "defaults", "-o", `jsonpath={.spec.limits[0].default.cpu} {.spec.limits[0].defaultRequest.cpu} {.spec.limits[0].defaultRequest.memory}`); got != "2 2 64Mi" {
		t.Errorf("defaults %q, want the max as default and request, the min as request", got)
	}
	rows := table(t, kubectl(t, srv, "get", "limits"))
	if got := strings.Join(rows[0], " "); got != "NAME CREATED AT" || findRow(rows, "defaults") == nil {
		t.Errorf("kubectl get limits:\n%q", rows)
	}
	got := kubectlFails(t, srv, "create", "-f", writeManifest(t, "bad.yaml", `apiVersion: v1
kind: LimitRange
metadata:
  name: bad
spec:
  limits:
  - type: Container
    max: {cpu: "1"}
    min: {cpu: "2"}
`))
	if want := `spec.limits[0].min[cpu]: Invalid value: "2": min value 2 is greater than max value 1`; !strings.Contains(got, want) {
		t.Errorf("kubectl create of a min above the max: %q, want %q in it", got, want)
	}
}

// TestResourceQuotaConcurrentCreates: creates racing for the last room in
// a quota are charged one at a time: exactly as many succeed as it has
// room for, the rest are refused, and the quota counts what was stored.
func TestResourceQuotaConcurrentCreates(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())
	ctx := testContext(t, time.Minute)
	kubectl(t, srv, "create", "namespace", "race")
	kubectl(t, srv, "create", "quota", "room", "-n", "race", "--hard=count/secrets=7")
	waitFor(t, 30*time.Second, "the quota counted", func() (bool, error) {
		q, err := srv.Client.CoreV1().ResourceQuotas("race").Get(ctx, "room", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		_, ok := q.Status.Used["count/secrets"]
		return ok, nil
	})
	var wg sync.WaitGroup
	var created, refused atomic.Int32
	for i := range 20 {
		wg.Go(func() {
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s%d", i)}}
			_, err := srv.Client.CoreV1().Secrets("race").Create(ctx, s, metav1.CreateOptions{})
			switch {
			case err == nil:
				created.Add(1)
			case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "exceeded quota: room"):
				refused.Add(1)
			default:
				t.Errorf("create %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if created.Load() != 7 || refused.Load() != 13 {
		t.Errorf("%d created and %d refused, want 7 and 13", created.Load(), refused.Load())
	}
	q, err := srv.Client.CoreV1().ResourceQuotas("race").Get(ctx, "room", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if used := q.Status.Used["count/secrets"]; used.Value() != 7 {
		t.Errorf("used %s, want 7", used.String())
	}
}

// TestResourceQuotaAfterRestart: a restarted server watches what its
// quotas count from the start: a deletion gives its usage back at once,
// not at the next full count a minute on.
func TestResourceQuotaAfterRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv := startServer(t, dir)
	kubectl(t, srv, "create", "namespace", "kept")
	kubectl(t, srv, "create", "quota", "q", "-n", "kept", "--hard=count/secrets=5")
	used := func(srv *server) string {
		return kubectl(t, srv, "get", "quota", "q", "-n", "kept", "-o", `jsonpath={.status.used.count/secrets}`)
	}
	waitFor(t, 30*time.Second, "the quota counted", func() (bool, error) { return used(srv) == "0", nil })
	kubectl(t, srv, "create", "secret", "generic", "a", "-n", "kept")
	kubectl(t, srv, "create", "secret", "generic", "b", "-n", "kept")
	if got := used(srv); got != "2" {
		t.Fatalf("used %q after two creates, want 2", got)
	}
	srv.stop(t)
	srv = startServer(t, dir)
	kubectl(t, srv, "delete", "secret", "a", "-n", "kept")
	waitFor(t, 20*time.Second, "the deletion's usage given back", func() (bool, error) { return used(srv) == "1", nil })
}

const podQuotaManifest = `apiVersion: v1
kind: Namespace
metadata:
  name: compute
---
apiVersion: v1
kind: ResourceQuota
metadata:
  name: compute
  namespace: compute
spec:
  hard:
    pods: "1"
    count/pods: "5"
    requests.cpu: "1"
`

// TestResourceQuotaPods: a quota of compute refuses a pod that does not
// say what it requests, charges one that does, refuses one past it, and
// gives the pod's compute back once it has finished, while its object
// still counts.
func TestResourceQuotaPods(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())
	kubectl(t, srv, "apply", "-f", writeManifest(t, "quota.yaml", podQuotaManifest))
	used := func(name string) string {
		return kubectl(t, srv, "get", "quota", "compute", "-n", "compute", "-o", fmt.Sprintf(`jsonpath={.status.used.%s}`, strings.ReplaceAll(name, ".", `\.`)))
	}
	waitUsed := func(name, want string) {
		t.Helper()
		waitFor(t, 30*time.Second, name+" used "+want, func() (bool, error) { return used(name) == want, nil })
	}
	waitUsed("requests.cpu", "0")
	waitServiceAccount(t, srv, "compute")
	refused := func(want string, args ...string) {
		t.Helper()
		if got := kubectlFails(t, srv, args...); !strings.Contains(got, want) {
			t.Errorf("kubectl %s: %q, want %q in it", strings.Join(args, " "), got, want)
		}
	}
	refused(`pods "bare" is forbidden: failed quota: compute: must specify requests.cpu for: bare`,
		"run", "bare", "--image=busybox", "-n", "compute")
	pod := func(name string) string {
		return writeManifest(t, name+".yaml", `apiVersion: v1
kind: Pod
metadata: {name: `+name+`, namespace: compute}
spec:
  initContainers:
  - {name: setup, image: busybox, resources: {requests: {cpu: 600m}}}
  containers:
  - {name: app, image: busybox, resources: {requests: {cpu: 250m}}}
  - {name: log, image: busybox, resources: {requests: {cpu: 100m}}}
`)
	}
	kubectl(t, srv, "create", "-f", pod("first"))
	for name, want := range map[string]string{"pods": "1", "count/pods": "1", "requests.cpu": "600m"} {
		if got := used(name); got != want {
			t.Errorf("used %s %q, want %q", name, got, want)
		}
	}
	refused(`pods "second" is forbidden: exceeded quota: compute, requested: pods=1,requests.cpu=600m, used: pods=1,requests.cpu=600m, limited: pods=1,requests.cpu=1`,
		"create", "-f", pod("second"))
	kubectl(t, srv, "patch", "pod", "first", "-n", "compute", "--subresource=status", "--type=merge", "-p", `{"status":{"phase":"Succeeded"}}`)
	waitUsed("pods", "0")
	waitUsed("requests.cpu", "0")
	if got := used("count/pods"); got != "1" {
		t.Errorf("a finished pod's object: count/pods used %q, want 1", got)
	}
	kubectl(t, srv, "create", "-f", pod("second"))
}
