package admission

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/crdserver/crdserver/internal/codec"
)

// withEncodedManagedFields is obj with its managedFields kept encoded, as
// the handler hands replacements of custom resources to admission.
func withEncodedManagedFields(t *testing.T, obj map[string]any) map[string]any {
	t.Helper()
	md := obj["metadata"].(map[string]any)
	md["managedFields"] = []any{map[string]any{"apiVersion": "example.com/v1", "fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:spec": map[string]any{}}, "manager": "m", "operation": "Update"}}
	b, err := codec.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := codec.Decode(b, "", codec.DecodeOptions{RawManagedFields: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := out["metadata"].(map[string]any)["managedFields"].(codec.Raw); !ok {
		t.Fatal("managedFields not kept encoded")
	}
	return out
}

// TestEncodedManagedFieldsDecodedWhereRead: webhooks receive encoded
// managedFields as they are, and the objects stay encoded through a call
// and through CEL expressions that read them (matchConditions, validating
// policies); what changes or converts the objects (a patch, a mutating
// policy, another version) decodes them, object and old object alike.
// With nothing registered, nothing is decoded.
func TestEncodedManagedFieldsDecodedWhereRead(t *testing.T) {
	want := []any{map[string]any{"apiVersion": "example.com/v1", "fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:spec": map[string]any{}}, "manager": "m", "operation": "Update"}}
	hook := startHook(t)
	conditional := func(w admissionregistrationv1.MutatingWebhook) admissionregistrationv1.MutatingWebhook {
		// It holds only if the entries read as the values they encode.
		w.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "a", Expression: "object.spec.size > 0 && object.metadata.managedFields[0].manager == 'm' && oldObject.metadata.managedFields == object.metadata.managedFields"}}
		return w
	}
	// other matches only the widgets' other version, v2.
	other := webhookAt("w.example.com", hook.on("/o", allowed), hook.CABundle, admissionregistrationv1.Fail)
	other.Rules[0].APIVersions = []string{"v2"}
	other.MatchPolicy = ptr(admissionregistrationv1.Equivalent)
	for _, tc := range []struct {
		name     string
		cfg      Config
		mutating bool
		decoded  bool
		// called is the webhook that must have been called once;
		// refused, that admission refuses the request.
		called  string
		refused bool
	}{
		{name: "nothing registered", cfg: Config{}},
		{name: "mutating webhook", mutating: true,
			cfg: Config{Source: &source{mutating: []Stored{stored("c", true, webhookAt("w.example.com", hook.on("/m", allowed), hook.CABundle, admissionregistrationv1.Fail))}}}},
		{name: "validating webhook",
			cfg: Config{Source: &source{validating: []Stored{stored("c", false, webhookAt("w.example.com", hook.on("/v", allowed), hook.CABundle, admissionregistrationv1.Fail))}}}},
		{name: "mutating webhook with matchConditions", mutating: true, called: "/mc",
			cfg: Config{Source: &source{mutating: []Stored{stored("c", true, conditional(webhookAt("w.example.com", hook.on("/mc", allowed), hook.CABundle, admissionregistrationv1.Fail)))}}}},
		{name: "validating webhook with matchConditions", called: "/vc",
			cfg: Config{Source: &source{validating: []Stored{stored("c", false, conditional(webhookAt("w.example.com", hook.on("/vc", allowed), hook.CABundle, admissionregistrationv1.Fail)))}}}},
		{name: "patching webhook", mutating: true, decoded: true,
			cfg: Config{Source: &source{mutating: []Stored{stored("c", true, webhookAt("w.example.com", hook.on("/p", patch(`[{"op":"add","path":"/spec/color","value":"red"}]`)), hook.CABundle, admissionregistrationv1.Fail))}}}},
		{name: "webhook of another version", decoded: true,
			cfg: Config{Source: &source{validating: []Stored{stored("c", false, other)}}}},
		{name: "validating policy", cfg: Config{Policies: validatingPolicies(t, "object.metadata.managedFields[0].operation == 'Update'")}},
		{name: "validating policy refusing", cfg: Config{Policies: validatingPolicies(t, "object.metadata.managedFields[0].manager != 'm'")}, refused: true},
		{name: "mutating policy", mutating: true, decoded: true, cfg: Config{MutatingPolicies: mutatingPolicies(t)}},
	} {
		a := New(tc.cfg)
		at := widgetAttributes(Update)
		at.Object = withEncodedManagedFields(t, at.Object)
		at.OldObject = withEncodedManagedFields(t, widgetAttributes(Update).Object)
		oldJSON, err := codec.Marshal(at.OldObject)
		if err != nil {
			t.Fatal(err)
		}
		at.OldObjectJSON = oldJSON
		at.Versions = []string{"v1", "v2"}
		at.Convert = func(_ context.Context, obj map[string]any, av string) (map[string]any, error) {
			obj["apiVersion"] = av
			return obj, nil
		}
		run := a.Validate
		if tc.mutating {
			run = a.Mutate
		}
		before := len(hook.reviews(tc.called))
		if err := run(context.Background(), at); (err != nil) != tc.refused {
			t.Fatalf("%s: admission returned %v, want refused %v", tc.name, err, tc.refused)
		}
		if tc.called != "" && len(hook.reviews(tc.called)) != before+1 {
			t.Errorf("%s: the webhook was not called", tc.name)
		}
		for what, obj := range map[string]map[string]any{"object": at.Object, "oldObject": at.OldObject} {
			got := obj["metadata"].(map[string]any)["managedFields"]
			if !tc.decoded {
				if !encodedManagedFields(obj) {
					t.Errorf("%s: %s managedFields decoded: %#v", tc.name, what, got)
				}
				continue
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: %s managedFields %#v, want %#v", tc.name, what, got, want)
			}
		}
	}
	// Webhooks received the entries as they are.
	for _, path := range []string{"/m", "/v", "/mc", "/vc", "/p", "/o"} {
		for _, r := range hook.reviews(path) {
			for what, raw := range map[string][]byte{"object": r.Request.Object.Raw, "oldObject": r.Request.OldObject.Raw} {
				var obj struct {
					Metadata struct {
						ManagedFields []any `json:"managedFields"`
					} `json:"metadata"`
				}
				if err := json.Unmarshal(raw, &obj); err != nil {
					t.Fatalf("%s: %s: %v", path, what, err)
				}
				if !reflect.DeepEqual(obj.Metadata.ManagedFields, want) {
					t.Errorf("%s: the webhook received %s managedFields %#v, want %#v", path, what, obj.Metadata.ManagedFields, want)
				}
			}
		}
	}
}

// TestKeepsEncoded: the handler keeps managedFields encoded while no
// mutating policy is registered; webhooks and validating policies leave
// it so.
func TestKeepsEncoded(t *testing.T) {
	ctx := context.Background()
	if !New(Config{}).KeepsEncoded(ctx) {
		t.Error("nothing registered: not kept encoded")
	}
	if !New(Config{Source: &source{}, Policies: &policySource{}}).KeepsEncoded(ctx) {
		t.Error("empty sources: not kept encoded")
	}
	hook := startHook(t)
	for name, src := range map[string]*source{
		"mutating":   {mutating: []Stored{stored("c", true, webhookAt("w.example.com", hook.on("/m", allowed), hook.CABundle, admissionregistrationv1.Fail))}},
		"validating": {validating: []Stored{stored("c", false, webhookAt("w.example.com", hook.on("/v", allowed), hook.CABundle, admissionregistrationv1.Fail))}},
	} {
		if !New(Config{Source: src}).KeepsEncoded(ctx) {
			t.Errorf("a %s webhook registered: not kept encoded", name)
		}
	}
	if !New(Config{Policies: validatingPolicies(t, "true")}).KeepsEncoded(ctx) {
		t.Error("a validating policy registered: not kept encoded")
	}
	if New(Config{MutatingPolicies: mutatingPolicies(t)}).KeepsEncoded(ctx) {
		t.Error("a mutating policy registered: kept encoded")
	}
}

// TestIdle: admission is idle only while no webhook, policy or binding
// of either kind is registered.
func TestIdle(t *testing.T) {
	ctx := context.Background()
	if !New(Config{}).Idle(ctx) {
		t.Error("nothing registered: not idle")
	}
	if !New(Config{Source: &source{}, Policies: &policySource{}, MutatingPolicies: &mutatingSource{}}).Idle(ctx) {
		t.Error("empty sources: not idle")
	}
	hook := startHook(t)
	busy := map[string]Config{
		"a mutating webhook":   {Source: &source{mutating: []Stored{stored("c", true, webhookAt("w.example.com", hook.on("/m", allowed), hook.CABundle, admissionregistrationv1.Fail))}}},
		"a validating webhook": {Source: &source{validating: []Stored{stored("c", false, webhookAt("w.example.com", hook.on("/v", allowed), hook.CABundle, admissionregistrationv1.Fail))}}},
		"a validating policy":  {Policies: validatingPolicies(t, "true")},
		"a binding alone":      {Policies: &policySource{bindings: validatingPolicies(t, "true").bindings}},
		"a mutating policy":    {MutatingPolicies: mutatingPolicies(t)},
	}
	for name, cfg := range busy {
		if New(cfg).Idle(ctx) {
			t.Errorf("%s registered: idle", name)
		}
	}
}

// widgetUpdates is a policy's spec matching updates of widgets.
const widgetUpdates = `spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [example.com], apiVersions: [v1], operations: [UPDATE], resources: [widgets]}
`

// validatingPolicies holds one ValidatingAdmissionPolicy, bound, whose one
// validation of updates of widgets is expr.
func validatingPolicies(t *testing.T, expr string) *policySource {
	return &policySource{
		policies: []Stored{storedYAML(t, `
metadata: {name: p}
`+widgetUpdates+`  validations: [{expression: "`+expr+`"}]
`, &admissionregistrationv1.ValidatingAdmissionPolicy{})},
		bindings: []Stored{storedYAML(t, "metadata: {name: b}\nspec: {policyName: p, validationActions: [Deny]}", &admissionregistrationv1.ValidatingAdmissionPolicyBinding{})},
	}
}

// mutatingPolicies holds one MutatingAdmissionPolicy, bound, that labels
// updates of widgets.
func mutatingPolicies(t *testing.T) *mutatingSource {
	return &mutatingSource{
		policies: []Stored{storedYAML(t, `
metadata: {name: p}
`+widgetUpdates+`  mutations:
  - patchType: JSONPatch
    jsonPatch: {expression: "[JSONPatch{op: 'add', path: '/metadata/labels', value: {'a': 'b'}}]"}
`, &admissionregistrationv1.MutatingAdmissionPolicy{})},
		bindings: []Stored{storedYAML(t, "metadata: {name: b}\nspec: {policyName: p}", &admissionregistrationv1.MutatingAdmissionPolicyBinding{})},
	}
}
