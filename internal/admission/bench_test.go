package admission

import (
	"context"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/crdserver/crdserver/internal/codec"
)

// benchWidget is a widget as the load generator's admission workload
// updates it once the server stored it (managed fields and system
// metadata), padded to about 2.5 KiB.
const benchWidget = `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"annotations":{"bench.crdserver.io/padding":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx","bench.crdserver.io/seq":"12"},"creationTimestamp":"2026-11-28T05:17:54Z","generation":3,"labels":{"app":"a","app.kubernetes.io/instance":"bench-7","app.kubernetes.io/name":"widget","bench.crdserver.io/run":"d19365b2","tier":"data"},"managedFields":[{"apiVersion":"bench.crdserver.io/v1","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:annotations":{"f:bench.crdserver.io/padding":{},"f:bench.crdserver.io/seq":{}},"f:labels":{"f:app":{},"f:app.kubernetes.io/instance":{},"f:app.kubernetes.io/name":{},"f:bench.crdserver.io/run":{},"f:tier":{}}},"f:spec":{"f:config":{"f:backoff":{"f:initial":{},"f:max":{},"f:multiplier":{}},"f:retries":{},"f:timeout":{}},"f:displayName":{},"f:endpoints":{},"f:image":{},"f:owner":{},"f:paused":{},"f:port":{},"f:priority":{},"f:replicas":{},"f:resources":{"f:limits":{"f:cpu":{},"f:memory":{}},"f:requests":{"f:cpu":{},"f:memory":{}}},"f:schedule":{},"f:selector":{"f:app":{},"f:name":{}},"f:size":{},"f:tags":{},"f:weight":{}}},"manager":"crdserver-bench","operation":"Update","time":"2026-11-28T05:17:55Z"}],"name":"w1","namespace":"default","resourceVersion":"4711","uid":"6f1c0a52-8d5e-4b7f-9a43-2f0c6c1d9e11"},"spec":{"config":{"backoff":{"initial":"100ms","max":"10s","multiplier":1.5},"retries":5,"timeout":"45s"},"displayName":"Widget number 7","endpoints":[{"name":"ep-0","port":8080,"protocol":"TCP","url":"https://ep-0.bench-7.example.com/api"},{"name":"ep-1","port":8081,"protocol":"UDP","url":"https://ep-1.bench-7.example.com/api"},{"name":"ep-2","port":8082,"protocol":"TCP","url":"https://ep-2.bench-7.example.com/api"}],"image":"registry.example.com/widgets/widget:v1.7","owner":"team-0","paused":false,"port":"http","priority":-93,"replicas":7,"resources":{"limits":{"cpu":"500m","memory":"256Mi"},"requests":{"cpu":1,"memory":"128Mi"}},"schedule":"*/5 * * * *","selector":{"app":"widget","name":"bench-7"},"size":"medium","tags":["bench","widget","tag-7"],"weight":0.7}}`

// benchAttributes is an update of benchWidget that changes nothing, as
// the load generator's admission workload sends.
func benchAttributes() *Attributes {
	at := widgetAttributes(Update)
	obj, _, err := codec.Decode([]byte(benchWidget), codec.MediaJSON, codec.DecodeOptions{})
	if err != nil {
		panic(err)
	}
	at.Object, at.OldObject = obj, obj
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

// benchObjects are the two ways a webhook call gets the objects' JSON:
// encoded for the call (creates, deletes, mutated objects), or handed
// over by the caller (an update's stored old object, and its new object
// once in the storage version, as the handler does).
var benchObjects = []struct {
	name   string
	preset bool
}{{"encoded", false}, {"update", true}}

func benchAttributesFor(b *testing.B, preset bool) *Attributes {
	at := benchAttributes()
	if preset {
		obj, err := codec.Marshal(at.Object)
		if err != nil {
			b.Fatal(err)
		}
		at.ObjectJSON, at.OldObjectJSON = func() []byte { return obj }, obj
	}
	return at
}

// BenchmarkValidatingWebhook: one validating webhook that allows at
// once (the time includes the test's webhook server).
func BenchmarkValidatingWebhook(b *testing.B) {
	hook := startHook(&testing.T{})
	src := &source{validating: []Stored{stored("c", false, webhookAt("w.example.com", hook.on("/v", func(*admissionv1.AdmissionReview) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Allowed: true}
	}), hook.CABundle, admissionregistrationv1.Fail))}}
	a := New(Config{Source: src})
	for _, bo := range benchObjects {
		b.Run(bo.name, func(b *testing.B) {
			at := benchAttributesFor(b, bo.preset)
			b.ReportAllocs()
			for b.Loop() {
				if err := a.Validate(context.Background(), at); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReviewBody: the AdmissionReview a webhook call sends, the
// part of a call's CPU that is the server's own rather than HTTP's.
func BenchmarkReviewBody(b *testing.B) {
	w := webhookAt("w.example.com", "https://127.0.0.1:1/", nil, admissionregistrationv1.Fail)
	inv := &invocation{hook: compileHook("c", 0, w), kind: benchAttributes().Kind, resource: benchAttributes().Resource}
	for _, bo := range benchObjects {
		b.Run(bo.name, func(b *testing.B) {
			at := benchAttributesFor(b, bo.preset)
			b.ReportAllocs()
			for b.Loop() {
				// The objects of a request, as Validate gets them.
				vo, err := newVersions(at).get(context.Background(), at.Kind)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := reviewParts("v1", newRequest("uid", inv, at), vo); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
