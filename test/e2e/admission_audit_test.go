package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
)

// A ValidatingAdmissionPolicy with the Audit action and auditAnnotations,
// and a webhook answering with auditAnnotations: the request's audit
// events carry them under upstream's keys.

const auditedPolicy = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: crontab-audit.example.com
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [stable.example.com], apiVersions: [v1], operations: [CREATE], resources: [crontabs]}
  validations:
  - expression: "true"
  - expression: "object.spec.replicas <= 5"
    messageExpression: "'replicas must be no greater than 5, got ' + string(object.spec.replicas)"
  auditAnnotations:
  - key: replicas
    valueExpression: "'replicas: ' + string(object.spec.replicas)"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: crontab-audit
spec:
  policyName: crontab-audit.example.com
  validationActions: [Audit]
`

func TestValidatingAdmissionPolicyAudit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	policy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policy, []byte(e2eAuditPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "audit.log")
	srv := startServerArgs(t, filepath.Join(dir, "data"), "--audit-policy-file", policy, "--audit-log-path", logPath)
	applyCRD(t, srv, "crontab-crd.yaml", "crontabs.stable.example.com", "created")

	hook := startAdmissionWebhook(t)
	hook.handle("/audit", func(*http.Request, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Allowed: true, AuditAnnotations: map[string]string{"checked": "yes"}}
	})
	registerWebhooks(t, srv, webhookConfig("ValidatingWebhookConfiguration", "audit.example.com", hook.URL+"/audit", hook.CABundle,
		"  rules: [{apiGroups: [stable.example.com], apiVersions: [v1], operations: [CREATE], resources: [crontabs]}]\n"))
	kubectl(t, srv, "create", "-f", writeManifest(t, "policy.yaml", auditedPolicy))
	syncPolicies(t, srv)

	// Audit only: both are created, the failed validation is in the log.
	kubectl(t, srv, "create", "-f", writeManifest(t, "few.yaml", cronTab("few", "cron", 3)))
	kubectl(t, srv, "create", "-f", writeManifest(t, "many.yaml", cronTab("many", "cron", 7)))

	var few, many *auditEvent
	waitFor(t, 10*time.Second, "the creates' audit events", func() (bool, error) {
		evs, _ := readAuditLog(t, logPath)
		for i := range evs {
			ev := &evs[i]
			if ev.Verb != "create" || ev.Stage != "ResponseComplete" || ev.ObjectRef == nil || ev.ObjectRef.Resource != "crontabs" {
				continue
			}
			switch {
			case strings.Contains(string(ev.RequestObject), `"few"`):
				few = ev
			case strings.Contains(string(ev.RequestObject), `"many"`):
				many = ev
			}
		}
		return few != nil && many != nil, nil
	})
	for _, ev := range []*auditEvent{few, many} {
		if ev.ResponseStatus == nil || ev.ResponseStatus.Code != 201 {
			t.Errorf("create under Audit: status %+v, want 201", ev.ResponseStatus)
		}
		if got := ev.Annotations["audit.example.com/checked"]; got != "yes" {
			t.Errorf("webhook annotation audit.example.com/checked = %q, want yes (annotations %q)", got, ev.Annotations)
		}
	}
	if got := few.Annotations["crontab-audit.example.com/replicas"]; got != "replicas: 3" {
		t.Errorf("policy annotation = %q, want %q", got, "replicas: 3")
	}
	if _, ok := few.Annotations["validation.policy.admission.k8s.io/validation_failure"]; ok {
		t.Errorf("a valid CronTab has a validation failure annotation: %q", few.Annotations)
	}
	if got := many.Annotations["crontab-audit.example.com/replicas"]; got != "replicas: 7" {
		t.Errorf("policy annotation = %q, want %q", got, "replicas: 7")
	}
	var failures []map[string]any
	if err := json.Unmarshal([]byte(many.Annotations["validation.policy.admission.k8s.io/validation_failure"]), &failures); err != nil {
		t.Fatalf("validation_failure annotation %q: %v", many.Annotations["validation.policy.admission.k8s.io/validation_failure"], err)
	}
	want := []map[string]any{{"message": "replicas must be no greater than 5, got 7", "policy": "crontab-audit.example.com",
		"binding": "crontab-audit", "expressionIndex": float64(1), "validationActions": []any{"Audit"}}}
	if b1, b2 := mustJSON(failures), mustJSON(want); b1 != b2 {
		t.Errorf("validation_failure annotation\n got %s\nwant %s", b1, b2)
	}

	// The policy's auditAnnotations are validated as upstream validates them.
	_, stderr, err := kubectlResult(srv, "create", "-f", writeManifest(t, "bad.yaml", `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: bad.example.com}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: ["*"], apiVersions: ["*"], operations: ["*"], resources: ["*"]}
  auditAnnotations:
  - {key: "no spaces", valueExpression: "'x'"}
  - {key: count, valueExpression: "1"}
  - {key: count, valueExpression: "object.metadata.name +"}
`))
	for _, want := range []string{
		`spec.auditAnnotations[0].key: Invalid value: "bad.example.com/no spaces"`,
		`spec.auditAnnotations[1].valueExpression: Invalid value: "1": must evaluate to one of [string null_type] but got int`,
		`spec.auditAnnotations[2].valueExpression: Invalid value: "object.metadata.name +": compilation failed`,
		`spec.auditAnnotations[2].key: Duplicate value: "count"`,
	} {
		if err == nil || !strings.Contains(stderr, want) {
			t.Errorf("invalid auditAnnotations: %v\n%s\nwant %s", err, stderr, want)
		}
	}
}
