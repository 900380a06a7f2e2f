package admission

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

type mutatingSource struct{ policies, bindings []Stored }

func (s *mutatingSource) MutatingAdmissionPolicies(context.Context) ([]Stored, error) {
	return s.policies, nil
}

func (s *mutatingSource) MutatingAdmissionPolicyBindings(context.Context) ([]Stored, error) {
	return s.bindings, nil
}

type oneParam map[string]any

func (p oneParam) Params(ctx context.Context, apiVersion, kind, namespace, name string, selector labels.Selector) ([]map[string]any, error) {
	return []map[string]any{p}, nil
}

// mergeShallowly stands in for the structured-merge-diff merge the handler
// supplies: maps merge key by key, everything else is replaced.
func mergeShallowly(obj, patch map[string]any) (map[string]any, error) {
	out := map[string]any{}
	for k, v := range obj {
		out[k] = v
	}
	for k, v := range patch {
		if pm, ok := v.(map[string]any); ok {
			if om, ok := out[k].(map[string]any); ok {
				out[k], _ = mergeShallowly(om, pm)
				continue
			}
		}
		out[k] = v
	}
	return out, nil
}

func mutatingPolicyYAML(failurePolicy, conditions, mutations string) string {
	return `
metadata: {name: p}
spec:
  failurePolicy: ` + failurePolicy + `
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules:
    - apiGroups: [example.com, ""]
      apiVersions: [v1]
      operations: [CREATE, UPDATE]
      resources: [widgets, namespaces]
  matchConditions: ` + conditions + `
  variables:
  - {name: team, expression: "params.data.team"}
  mutations: ` + mutations
}

func TestMutatingPolicy(t *testing.T) {
	const (
		applyLabel = `[{patchType: ApplyConfiguration, applyConfiguration: {expression: "Object{metadata: Object.metadata{labels: {'team': variables.team}}}"}}]`
		addAnno    = `[{patchType: JSONPatch, jsonPatch: {expression: "[JSONPatch{op: 'add', path: '/metadata/annotations', value: {}}, JSONPatch{op: 'add', path: '/metadata/annotations/' + jsonpatch.escapeKey('example.com/team'), value: variables.team}]"}}]`
		failedTest = `[{patchType: JSONPatch, jsonPatch: {expression: "[JSONPatch{op: 'test', path: '/spec/size', value: 9}, JSONPatch{op: 'add', path: '/spec/size', value: 2}]"}}]`
		badPath    = `[{patchType: JSONPatch, jsonPatch: {expression: "[JSONPatch{op: 'remove', path: '/spec/missing'}]"}}]`
		notList    = `[{patchType: JSONPatch, jsonPatch: {expression: "JSONPatch{op: 'add', path: '/x', value: 2}"}}]`
		wrongType  = `[{patchType: ApplyConfiguration, applyConfiguration: {expression: "Object{metadata: Object.spec{labels: {'a': 'b'}}}"}}]`
	)
	for _, tc := range []struct {
		name, failurePolicy, conditions, mutations string
		namespace                                  bool
		want                                       string // the mutated metadata, as JSON
		err                                        string
	}{
		{name: "apply label", failurePolicy: "Fail", conditions: "[]", mutations: applyLabel,
			want: `{"labels":{"app":"a","team":"blue"},"name":"w1","namespace":"default"}`},
		{name: "apply label on a namespace", failurePolicy: "Fail", conditions: "[]", mutations: applyLabel, namespace: true,
			want: `{"labels":{"team":"blue"},"name":"ns1"}`},
		{name: "json patch annotation", failurePolicy: "Fail", conditions: "[]", mutations: addAnno,
			want: `{"annotations":{"example.com/team":"blue"},"labels":{"app":"a"},"name":"w1","namespace":"default"}`},
		{name: "condition false", failurePolicy: "Fail", conditions: `[{name: c, expression: "object.metadata.name != 'w1'"}]`, mutations: addAnno,
			want: `{"labels":{"app":"a"},"name":"w1","namespace":"default"}`},
		{name: "failed test op leaves the object", failurePolicy: "Fail", conditions: "[]", mutations: failedTest,
			want: `{"labels":{"app":"a"},"name":"w1","namespace":"default"}`},
		{name: "bad path fails", failurePolicy: "Fail", conditions: "[]", mutations: badPath,
			err: `policy 'p' with binding 'b' denied request: JSON Patch: `},
		{name: "bad path ignored", failurePolicy: "Ignore", conditions: "[]", mutations: badPath,
			want: `{"labels":{"app":"a"},"name":"w1","namespace":"default"}`},
		{name: "not a list", failurePolicy: "Fail", conditions: "[]", mutations: notList,
			err: `policy 'p' with binding 'b' denied request: must evaluate to list(JSONPatch) but got JSONPatch`},
		{name: "type names", failurePolicy: "Fail", conditions: "[]", mutations: wrongType,
			err: `policy 'p' with binding 'b' denied request: type mismatch:`},
		{name: "condition error", failurePolicy: "Fail", conditions: `[{name: c, expression: "object.nope == 1"}]`, mutations: addAnno,
			err: `policy 'p' with binding 'b' denied request: expression 'object.nope == 1' resulted in error: no such key: nope`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &mutatingSource{
				policies: []Stored{storedYAML(t, mutatingPolicyYAML(tc.failurePolicy, tc.conditions, tc.mutations), &admissionregistrationv1.MutatingAdmissionPolicy{})},
				bindings: []Stored{storedYAML(t, "metadata: {name: b}\nspec: {policyName: p, paramRef: {name: cm, parameterNotFoundAction: Deny}}", &admissionregistrationv1.MutatingAdmissionPolicyBinding{})},
			}
			a := New(Config{MutatingPolicies: src, Params: oneParam{"data": map[string]any{"team": "blue"}}})
			at := widgetAttributes(Create)
			if tc.namespace {
				at.Kind = schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
				at.Resource = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
				at.Name, at.Namespace = "ns1", "ns1"
				at.Object = map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "ns1"}}
			}
			at.MergeApplyConfiguration = mergeShallowly
			err := a.Mutate(context.Background(), at)
			if tc.err != "" {
				if !isForbiddenCode(err) || !strings.Contains(err.Error(), tc.err) {
					got, _ := json.Marshal(at.Object)
					t.Fatalf("error %v (object %s), want a 403 containing %q", err, got, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(at.Object["metadata"])
			if string(got) != tc.want {
				t.Errorf("metadata %s, want %s", got, tc.want)
			}
		})
	}
}

// A mutation's variables read the object the mutations before it made,
// as upstream evaluates each mutation afresh; one no mutation reads may
// fail.
func TestMutatingPolicyVariables(t *testing.T) {
	src := &mutatingSource{
		policies: []Stored{storedYAML(t, `
metadata: {name: p}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {apiGroups: [example.com], apiVersions: [v1], operations: [CREATE], resources: [widgets]}
  variables:
  - {name: size, expression: "object.spec.size"}
  - {name: unread, expression: "object.spec.missing"}
  mutations:
  - {patchType: JSONPatch, jsonPatch: {expression: "[JSONPatch{op: 'replace', path: '/spec/size', value: variables.size + 1}]"}}
  - {patchType: JSONPatch, jsonPatch: {expression: "[JSONPatch{op: 'replace', path: '/spec/size', value: variables.size * 10}]"}}
`, &admissionregistrationv1.MutatingAdmissionPolicy{})},
		bindings: []Stored{storedYAML(t, "metadata: {name: b}\nspec: {policyName: p}", &admissionregistrationv1.MutatingAdmissionPolicyBinding{})},
	}
	a := New(Config{MutatingPolicies: src})
	at := widgetAttributes(Create)
	if err := a.Mutate(context.Background(), at); err != nil {
		t.Fatal(err)
	}
	if got := at.Object["spec"].(map[string]any)["size"]; got != int64(20) {
		t.Errorf("size %v, want 20: (1 + 1) * 10", got)
	}
}

// A policy with reinvocationPolicy IfNeeded runs again when a later
// policy changed the object.
func TestMutatingPolicyReinvocation(t *testing.T) {
	policy := func(name, reinvoke, expr string) Stored {
		return storedYAML(t, `
metadata: {name: `+name+`}
spec:
  reinvocationPolicy: `+reinvoke+`
  matchConstraints:
    resourceRules:
    - {apiGroups: [example.com], apiVersions: [v1], operations: [CREATE], resources: [widgets]}
  mutations:
  - patchType: JSONPatch
    jsonPatch: {expression: "`+expr+`"}
`, &admissionregistrationv1.MutatingAdmissionPolicy{})
	}
	binding := func(name, policy string) Stored {
		return storedYAML(t, "metadata: {name: "+name+"}\nspec: {policyName: "+policy+"}", &admissionregistrationv1.MutatingAdmissionPolicyBinding{})
	}
	// a copies size into labels.size when size is 2; b sets size to 2.
	src := &mutatingSource{
		policies: []Stored{
			policy("a", "IfNeeded", `object.spec.size == 2 ? [JSONPatch{op: 'add', path: '/metadata/labels/size', value: 'two'}] : []`),
			policy("b", "Never", `[JSONPatch{op: 'replace', path: '/spec/size', value: 2}]`),
		},
		bindings: []Stored{binding("a", "a"), binding("b", "b")},
	}
	at := widgetAttributes(Create)
	if err := New(Config{MutatingPolicies: src}).Mutate(context.Background(), at); err != nil {
		t.Fatal(err)
	}
	if got := at.Object["metadata"].(map[string]any)["labels"].(map[string]any)["size"]; got != "two" {
		t.Errorf("labels.size = %v, want two (policy a reinvoked)", got)
	}
}

// isForbiddenCode: policy failures are 403s whose reason is Invalid, as
// upstream answers them.
func isForbiddenCode(err error) bool {
	var s apierrors.APIStatus
	return errors.As(err, &s) && s.Status().Code == 403 && s.Status().Reason == "Invalid"
}

// Policies run before the webhooks; a policy with reinvocationPolicy
// IfNeeded runs again when a webhook changed the object after it.
func TestMutatingPolicyBeforeWebhooks(t *testing.T) {
	hook := startHook(t)
	var colorSeen []any
	wh := webhookAt("color.example.com", hook.on("/color", func(r *admissionv1.AdmissionReview) *admissionv1.AdmissionResponse {
		var obj map[string]any
		json.Unmarshal(r.Request.Object.Raw, &obj)
		colorSeen = append(colorSeen, obj["metadata"].(map[string]any)["labels"].(map[string]any)["copied"])
		return patch(`[{"op":"add","path":"/spec/color","value":"red"}]`)(r)
	}), hook.CABundle, admissionregistrationv1.Fail)
	src := &mutatingSource{
		policies: []Stored{storedYAML(t, `
metadata: {name: copy}
spec:
  reinvocationPolicy: IfNeeded
  matchConstraints:
    resourceRules:
    - {apiGroups: [example.com], apiVersions: [v1], operations: [CREATE], resources: [widgets]}
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: "[JSONPatch{op: 'add', path: '/metadata/labels/copied', value: has(object.spec.color) ? object.spec.color : 'none'}]"
`, &admissionregistrationv1.MutatingAdmissionPolicy{})},
		bindings: []Stored{storedYAML(t, "metadata: {name: copy}\nspec: {policyName: copy}", &admissionregistrationv1.MutatingAdmissionPolicyBinding{})},
	}
	a := New(Config{Source: &source{mutating: []Stored{stored("c", true, wh)}}, MutatingPolicies: src})
	at := widgetAttributes(Create)
	if err := a.Mutate(context.Background(), at); err != nil {
		t.Fatal(err)
	}
	if len(colorSeen) != 1 || colorSeen[0] != "none" {
		t.Errorf("the webhook saw labels.copied %v, want [none] (once, after the policy)", colorSeen)
	}
	if got := at.Object["metadata"].(map[string]any)["labels"].(map[string]any)["copied"]; got != "red" {
		t.Errorf("labels.copied = %v, want red (the policy reinvoked)", got)
	}
}
