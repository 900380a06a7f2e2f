package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"
)

// builtinsManifest has one object of each stored built-in that upstream's
// discovery specs look for beyond apps/v1.
const builtinsManifest = `
apiVersion: batch/v1
kind: Job
metadata: {name: pi}
spec:
  template:
    spec:
      containers: [{name: pi, image: perl:5.34}]
      restartPolicy: Never
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: hello}
spec:
  schedule: "*/5 * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          containers: [{name: hello, image: busybox}]
          restartPolicy: OnFailure
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 10
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 60}}
  - type: Pods
    pods: {metric: {name: qps}, target: {type: AverageValue, averageValue: 1k}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web}
spec:
  minAvailable: 2
  selector: {matchLabels: {app: web}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web}
spec:
  ingressClassName: nginx
  tls: [{hosts: [foo.example.com]}]
  rules:
  - host: foo.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: nginx}
spec: {controller: k8s.io/ingress-nginx}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny}
spec:
  podSelector: {matchLabels: {app: web}}
---
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: gvisor}
handler: runsc
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: storage.k8s.io/v1
kind: CSINode
metadata: {name: node1}
spec:
  drivers: [{name: ebs.csi.aws.com, nodeID: i-123}]
`

// TestStoredBuiltins drives batch, autoscaling, policy, networking,
// certificates, node, scheduling and storage built-ins with kubectl:
// create, list with upstream's columns, /status, the HPA's two versions,
// CSR approval, and upstream's 422s for bad objects.
func TestStoredBuiltins(t *testing.T) {
	t.Parallel()
	srv := startServer(t, t.TempDir())
	kubectl(t, srv, "create", "-f", writeManifest(t, "builtins.yaml", builtinsManifest))

	t.Run("get columns and rows", func(t *testing.T) {
		for _, tc := range []struct {
			resource, header string
			row              []string // the row's first cells
		}{
			{"jobs", "NAME STATUS COMPLETIONS DURATION AGE", []string{"pi", "Running", "0/1"}},
			{"cronjobs", "NAME SCHEDULE TIMEZONE SUSPEND ACTIVE LAST SCHEDULE AGE", []string{"hello", "*/5", "*", "*", "*", "*", "<none>", "False", "0", "<none>"}},
			{"hpa", "NAME REFERENCE TARGETS MINPODS MAXPODS REPLICAS AGE", []string{"web", "Deployment/web", "cpu:", "<unknown>/60%,", "<unknown>/1k", "2", "10", "0"}},
			{"pdb", "NAME MIN AVAILABLE MAX UNAVAILABLE ALLOWED DISRUPTIONS AGE", []string{"web", "2", "N/A", "0"}},
			{"ingress", "NAME CLASS HOSTS ADDRESS PORTS AGE", []string{"web", "nginx", "foo.example.com", "80,", "443"}},
			{"ingressclasses", "NAME CONTROLLER PARAMETERS AGE", []string{"nginx", "k8s.io/ingress-nginx", "<none>"}},
			{"networkpolicies", "NAME POD-SELECTOR AGE", []string{"deny", "app=web"}},
			{"runtimeclasses", "NAME HANDLER AGE", []string{"gvisor", "runsc"}},
			{"priorityclasses", "NAME VALUE GLOBAL-DEFAULT AGE PREEMPTIONPOLICY", []string{"high", "1000", "false"}},
			{"csinodes", "NAME DRIVERS AGE", []string{"node1", "1"}},
		} {
			out := kubectl(t, srv, "get", tc.resource)
			rows := table(t, out)
			if got := strings.Join(rows[0], " "); got != tc.header {
				t.Errorf("%s: columns %q, want %q", tc.resource, got, tc.header)
			}
			row := findRow(rows, tc.row[0])
			if len(row) < len(tc.row) || !slices.Equal(row[:len(tc.row)], tc.row) {
				t.Errorf("%s: row %q, want it to start with %q", tc.resource, row, tc.row)
			}
		}
	})

	t.Run("job delete warning", func(t *testing.T) {
		// A delete that leaves propagation to the Job default (orphan)
		// is warned, as upstream warns; kubectl delete asks for
		// background propagation and is not.
		const warning = "Warning: child pods are preserved by default when jobs are deleted; set propagationPolicy=Background to remove them or set propagationPolicy=Orphan to suppress this warning"
		kubectl(t, srv, "create", "job", "gone", "--image=busybox")
		kubectl(t, srv, "create", "job", "gone-too", "--image=busybox")
		if _, stderr, err := kubectlResult(srv, "delete", "--raw", "/apis/batch/v1/namespaces/default/jobs/gone"); err != nil || !strings.Contains(stderr, warning) {
			t.Errorf("DELETE without a propagation policy: %v, stderr %q, want %q", err, stderr, warning)
		}
		if _, stderr, err := kubectlResult(srv, "delete", "job", "gone-too"); err != nil || strings.Contains(stderr, "Warning") {
			t.Errorf("kubectl delete job: %v, stderr %q, want no warning", err, stderr)
		}
	})

	t.Run("job status and field selector", func(t *testing.T) {
		var job map[string]any
		if err := yaml.Unmarshal([]byte(kubectl(t, srv, "get", "job", "pi", "-o", "yaml")), &job); err != nil {
			t.Fatal(err)
		}
		uid, _ := lookup(job, "metadata.uid").(string)
		if lookup(job, `spec.selector.matchLabels.batch\.kubernetes\.io/controller-uid`) != uid || lookup(job, `spec.template.metadata.labels.job-name`) != "pi" ||
			lookup(job, "spec.backoffLimit") != float64(6) || lookup(job, "spec.completionMode") != "NonIndexed" {
			t.Errorf("job's generated selector and defaults: %v", job)
		}
		kubectl(t, srv, "patch", "job", "pi", "--subresource=status", "--type=merge", "-p",
			`{"status":{"succeeded":1,"conditions":[{"type":"Complete","status":"True"}]}}`)
		if row := findRow(table(t, kubectl(t, srv, "get", "jobs")), "pi"); len(row) < 3 || row[1] != "Complete" || row[2] != "1/1" {
			t.Errorf("job row after /status: %q, want Complete 1/1", row)
		}
		if out := kubectl(t, srv, "get", "jobs", "--field-selector", "status.successful=1", "-o", "name"); strings.TrimSpace(out) != "job.batch/pi" {
			t.Errorf("field selector status.successful=1 lists %q", out)
		}
		if out := kubectl(t, srv, "get", "jobs", "--field-selector", "status.successful=0", "-o", "name"); strings.TrimSpace(out) != "" {
			t.Errorf("field selector status.successful=0 lists %q", out)
		}
	})

	t.Run("hpa in v2 and v1", func(t *testing.T) {
		path := "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers/web"
		var v1 map[string]any
		if err := json.Unmarshal([]byte(kubectl(t, srv, "get", "--raw", path)), &v1); err != nil {
			t.Fatal(err)
		}
		if lookup(v1, "apiVersion") != "autoscaling/v1" || lookup(v1, "spec.targetCPUUtilizationPercentage") != float64(60) ||
			lookup(v1, `metadata.annotations.autoscaling\.alpha\.kubernetes\.io/metrics`) != `[{"type":"Pods","pods":{"metricName":"qps","targetAverageValue":"1k"}}]` {
			t.Errorf("v2 HPA read in v1: %v", v1)
		}
		// Written back through v1, the v2 object keeps its pods metric.
		v1["spec"].(map[string]any)["maxReplicas"] = 20
		b, _ := json.Marshal(v1)
		kubectl(t, srv, "replace", "--raw", path, "-f", writeManifest(t, "hpa-v1.json", string(b)))
		var v2 map[string]any
		if err := yaml.Unmarshal([]byte(kubectl(t, srv, "get", "hpa.v2.autoscaling", "web", "-o", "yaml")), &v2); err != nil {
			t.Fatal(err)
		}
		metrics, _ := lookup(v2, "spec.metrics").([]any)
		if lookup(v2, "spec.maxReplicas") != float64(20) || len(metrics) != 2 || lookup(v2, "metadata.annotations") != nil {
			t.Errorf("HPA after a v1 write: %v", v2)
		}
		// Created in v1, read in v2: upstream's default CPU target.
		kubectl(t, srv, "create", "-f", writeManifest(t, "hpa1.yaml", `{"apiVersion":"autoscaling/v1","kind":"HorizontalPodAutoscaler","metadata":{"name":"old"},"spec":{"scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"old"},"maxReplicas":3}}`))
		if out := kubectl(t, srv, "get", "hpa.v2.autoscaling", "old", "-o", "jsonpath={.spec.minReplicas} {.spec.metrics[0].resource.target.averageUtilization}"); out != "1 80" {
			t.Errorf("v1 HPA read in v2: minReplicas and CPU target %q, want 1 80", out)
		}
		kubectl(t, srv, "patch", "hpa", "web", "--subresource=status", "--type=merge", "-p", `{"status":{"currentReplicas":4,"desiredReplicas":4}}`)
		if row := findRow(table(t, kubectl(t, srv, "get", "hpa")), "web"); len(row) < 8 || row[7] != "4" {
			t.Errorf("hpa row after /status: %q, want 4 replicas", row)
		}
	})

	t.Run("pdb and ingress status", func(t *testing.T) {
		// The server keeps a budget's status as upstream's disruption
		// controller does for one that selects no pods: clients wait for
		// its observedGeneration, and a status written by a client is
		// put back.
		pdbStatus := func(want string) {
			t.Helper()
			const status = `{.metadata.generation} {.status.observedGeneration} {.status.desiredHealthy} {.status.disruptionsAllowed} {.status.conditions[?(@.type=="DisruptionAllowed")].reason}`
			var got string
			waitFor(t, 10*time.Second, "PodDisruptionBudget status "+want, func() (bool, error) {
				got = kubectl(t, srv, "get", "pdb", "web", "-o", "jsonpath="+status)
				return got == want, fmt.Errorf("status %q", got)
			})
		}
		pdbStatus("1 1 2 0 InsufficientPods")
		mf := kubectl(t, srv, "get", "pdb", "web", "--show-managed-fields", "-o", `jsonpath={.metadata.managedFields[?(@.manager=="kube-controller-manager")].subresource}`)
		if mf != "status" {
			t.Errorf("the status writes recorded as kube-controller-manager's to subresource %q, want status", mf)
		}
		kubectl(t, srv, "patch", "pdb", "web", "--subresource=status", "--type=merge", "-p", `{"status":{"disruptionsAllowed":1,"currentHealthy":3,"desiredHealthy":2,"expectedPods":3}}`)
		pdbStatus("1 1 2 0 InsufficientPods")
		kubectl(t, srv, "patch", "pdb", "web", "--type=merge", "-p", `{"spec":{"minAvailable":3}}`)
		pdbStatus("2 2 3 0 InsufficientPods")
		if row := findRow(table(t, kubectl(t, srv, "get", "pdb")), "web"); len(row) < 4 || row[1] != "3" || row[3] != "0" {
			t.Errorf("pdb row %q, want 3 available and no disruptions allowed", row)
		}
		kubectl(t, srv, "patch", "ingress", "web", "--subresource=status", "--type=merge", "-p", `{"status":{"loadBalancer":{"ingress":[{"ip":"192.0.2.1"}]}}}`)
		if row := findRow(table(t, kubectl(t, srv, "get", "ingress")), "web"); len(row) < 4 || row[3] != "192.0.2.1" {
			t.Errorf("ingress row after /status: %q", row)
		}
	})

	t.Run("default ingress class", func(t *testing.T) {
		// As upstream's DefaultIngressClass admission plugin: an Ingress
		// created without a class gets the class marked default, which
		// its creator does not own; one created before any default, or
		// naming its class, keeps what it had.
		const ingress = `{"apiVersion":"networking.k8s.io/v1","kind":"Ingress","metadata":{"name":%q},
"spec":{"defaultBackend":{"service":{"name":"web","port":{"number":80}}}}}`
		kubectl(t, srv, "create", "-f", writeManifest(t, "before.json", fmt.Sprintf(ingress, "before-default")))
		kubectl(t, srv, "create", "-f", writeManifest(t, "class.json", `{"apiVersion":"networking.k8s.io/v1","kind":"IngressClass","metadata":{"name":"house"},"spec":{"controller":"example.com/house"}}`))
		kubectl(t, srv, "annotate", "ingressclass", "house", "ingressclass.kubernetes.io/is-default-class=true")
		kubectl(t, srv, "create", "-f", writeManifest(t, "after.json", fmt.Sprintf(ingress, "after-default")))
		kubectl(t, srv, "create", "ingress", "named", "--class=nginx", "--rule=foo.example.com/=web:80")
		for name, want := range map[string]string{"before-default": "", "after-default": "house", "named": "nginx"} {
			if got := kubectl(t, srv, "get", "ingress", name, "-o", "jsonpath={.spec.ingressClassName}"); got != want {
				t.Errorf("ingress %s: class %q, want %q", name, got, want)
			}
		}
		owned := kubectl(t, srv, "get", "ingress", "after-default", "--show-managed-fields", "-o", "jsonpath={.metadata.managedFields[*].fieldsV1}")
		if strings.Contains(owned, "ingressClassName") {
			t.Errorf("the creator owns the defaulted class: %s", owned)
		}
		kubectl(t, srv, "delete", "ingressclass", "house")
	})

	t.Run("csr approval", func(t *testing.T) {
		csr := `{"apiVersion":"certificates.k8s.io/v1","kind":"CertificateSigningRequest","metadata":{"name":"alice"},
"spec":{"request":"` + csrPEM(t) + `","signerName":"example.com/signer","usages":["client auth"],"username":"mallory"}}`
		kubectl(t, srv, "create", "-f", writeManifest(t, "csr.json", csr))
		rows := table(t, kubectl(t, srv, "get", "csr"))
		if got := strings.Join(rows[0], " "); got != "NAME AGE SIGNERNAME REQUESTOR REQUESTEDDURATION CONDITION" {
			t.Errorf("csr columns %q", got)
		}
		if row := findRow(rows, "alice"); len(row) != 6 || row[3] != "admin" || row[5] != "Pending" {
			t.Errorf("csr row %q, want requester admin, Pending", row)
		}
		kubectl(t, srv, "certificate", "approve", "alice")
		// GET of /approval reads the whole object, as upstream's.
		var approval map[string]any
		if err := json.Unmarshal([]byte(kubectl(t, srv, "get", "--raw", "/apis/certificates.k8s.io/v1/certificatesigningrequests/alice/approval")), &approval); err != nil {
			t.Fatal(err)
		}
		if lookup(approval, "kind") != "CertificateSigningRequest" || lookup(approval, "status.conditions") == nil {
			t.Errorf("GET /approval: %v", approval)
		}
		if row := findRow(table(t, kubectl(t, srv, "get", "csr", "--field-selector", "spec.signerName=example.com/signer")), "alice"); len(row) != 6 || row[5] != "Approved" {
			t.Errorf("csr row after approval %q", row)
		}
		// A patch of /approval, as upstream's e2e spec sends one: its
		// conditions and metadata are kept, its spec is not.
		patch := `{"metadata":{"annotations":{"patched":"true"}},"spec":{"signerName":"example.com/other"},` +
			`"status":{"conditions":[{"type":"Approved","status":"True","reason":"E2E"},{"type":"Extra","status":"True","reason":"E2E"}]}}`
		patched, err := srv.Client.CertificatesV1().CertificateSigningRequests().Patch(context.Background(), "alice", types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "approval")
		if err != nil {
			t.Fatalf("patching /approval: %v", err)
		}
		if len(patched.Status.Conditions) != 2 || patched.Status.Conditions[1].Type != "Extra" {
			t.Errorf("conditions after patching /approval: %+v", patched.Status.Conditions)
		}
		if patched.Spec.SignerName != "example.com/signer" || patched.Annotations["patched"] != "true" {
			t.Errorf("patching /approval: signer %q, annotations %v; want the signer unchanged, the annotation set", patched.Spec.SignerName, patched.Annotations)
		}
		// A server-side apply of /approval is served as upstream's: its
		// condition applies (the patch's other one, another manager's,
		// stays), its spec does not.
		apply := `{"apiVersion":"certificates.k8s.io/v1","kind":"CertificateSigningRequest","metadata":{"name":"alice"},` +
			`"spec":{"signerName":"example.com/applied"},"status":{"conditions":[{"type":"Approved","status":"True","reason":"Applied"}]}}`
		applied, err := srv.Client.CertificatesV1().CertificateSigningRequests().Patch(context.Background(), "alice", types.ApplyPatchType, []byte(apply), metav1.PatchOptions{FieldManager: "e2e", Force: ptr(true)}, "approval")
		if err != nil {
			t.Fatalf("applying to /approval: %v", err)
		}
		if c := applied.Status.Conditions; len(c) != 2 || c[0].Reason != "Applied" || c[1].Type != "Extra" || applied.Spec.SignerName != "example.com/signer" {
			t.Errorf("applying to /approval: conditions %+v, signer %q; want Approved applied and Extra kept, the signer unchanged", c, applied.Spec.SignerName)
		}
	})

	t.Run("get all", func(t *testing.T) {
		var names []string
		for _, r := range table(t, kubectl(t, srv, "get", "all")) {
			names = append(names, r[0])
		}
		for _, want := range []string{"job.batch/pi", "cronjob.batch/hello", "horizontalpodautoscaler.autoscaling/web"} {
			if !slices.Contains(names, want) {
				t.Errorf("get all lists %q, want %s", names, want)
			}
		}
	})

	t.Run("bad objects", func(t *testing.T) {
		for _, tc := range []struct{ name, obj, want string }{
			{"job", `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"bad"},"spec":{"template":{"spec":{"containers":[{"name":"c","image":"i"}]}}}}`,
				`spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"`},
			{"cronjob", `{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"bad"},"spec":{"schedule":"TZ=UTC * * * * *","jobTemplate":{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"i"}],"restartPolicy":"Never"}}}}}}`,
				"cannot use TZ or CRON_TZ in schedule, use timeZone field instead"},
			{"horizontalpodautoscaler", `{"apiVersion":"autoscaling/v2","kind":"HorizontalPodAutoscaler","metadata":{"name":"bad"},"spec":{"scaleTargetRef":{"kind":"Deployment","name":"d"},"minReplicas":5,"maxReplicas":3}}`,
				"spec.maxReplicas: Invalid value: 3: must be greater than or equal to `minReplicas`"},
			{"poddisruptionbudget", `{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"bad"},"spec":{"minAvailable":1,"maxUnavailable":1}}`,
				"minAvailable and maxUnavailable cannot be both set"},
			{"priorityclass", `{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"bad"},"value":2000000000}`,
				"value: Forbidden: maximum allowed value of a user defined priority is 1000000000"},
		} {
			_, stderr, err := kubectlResult(srv, "create", "-f", writeManifest(t, "bad.json", tc.obj))
			if err == nil || !strings.Contains(stderr, tc.want) || !strings.Contains(stderr, "is invalid") {
				t.Errorf("create bad %s: err %v, stderr %q, want %q", tc.name, err, stderr, tc.want)
			}
			if _, stderr, err := kubectlResult(srv, "get", tc.name, "bad"); err == nil || !strings.Contains(stderr, "NotFound") {
				t.Errorf("the refused %s was stored: %v %s", tc.name, err, stderr)
			}
		}
	})
}

// csrPEM is a signed certificate request, base64-encoded PEM.
func csrPEM(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "alice"}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
}
