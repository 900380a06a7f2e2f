package admission

import (
	"context"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// benchAttributes is an update of a widget of about 2 KiB, as the load
// generator's admission workload sends.
func benchAttributes() *Attributes {
	at := widgetAttributes(Update)
	at.Object["spec"].(map[string]any)["padding"] = strings.Repeat("x", 2000)
	at.Object["spec"].(map[string]any)["replicas"] = int64(3)
	at.OldObject = at.Object
	return at
}

// BenchmarkPolicy: one ValidatingAdmissionPolicy of two validations, as
// the load generator registers it.
func BenchmarkPolicy(b *testing.B) {
	t := &testing.T{}
	src := &policySource{
		policies: []Stored{storedYAML(t, `
metadata: {name: p}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {apiGroups: [example.com], apiVersions: ["*"], operations: [CREATE, UPDATE], resources: [widgets]}
  validations:
  - expression: "object.spec.replicas >= 0"
  - expression: "!('probe' in object.metadata.labels)"
`, &admissionregistrationv1.ValidatingAdmissionPolicy{})},
		bindings: []Stored{storedYAML(t, "metadata: {name: b}\nspec: {policyName: p, validationActions: [Deny], matchResources: {objectSelector: {matchLabels: {app: a}}}}", &admissionregistrationv1.ValidatingAdmissionPolicyBinding{})},
	}
	a := New(Config{Policies: src})
	at := benchAttributes()
	b.ReportAllocs()
	for b.Loop() {
		if err := a.Validate(context.Background(), at); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkValidatingWebhook: one validating webhook that allows at
// once (the time includes the test's webhook server).
func BenchmarkValidatingWebhook(b *testing.B) {
	hook := startHook(&testing.T{})
	src := &source{validating: []Stored{stored("c", false, webhookAt("w.example.com", hook.on("/v", func(*admissionv1.AdmissionReview) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Allowed: true}
	}), hook.CABundle, admissionregistrationv1.Fail))}}
	a := New(Config{Source: src})
	at := benchAttributes()
	b.ReportAllocs()
	for b.Loop() {
		if err := a.Validate(context.Background(), at); err != nil {
			b.Fatal(err)
		}
	}
}
