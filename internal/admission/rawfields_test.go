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
// managedFields as they are, and the objects stay encoded through a call;
// what reads them as values (matchConditions, a patch, a policy) decodes
// them, object and old object alike. With nothing registered, nothing is
// decoded.
func TestEncodedManagedFieldsDecodedWhereRead(t *testing.T) {
	want := []any{map[string]any{"apiVersion": "example.com/v1", "fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:spec": map[string]any{}}, "manager": "m", "operation": "Update"}}
	hook := startHook(t)
	conditional := func(w admissionregistrationv1.MutatingWebhook) admissionregistrationv1.MutatingWebhook {
		w.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "a", Expression: "object.spec.size > 0"}}
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
	}{
		{name: "nothing registered", cfg: Config{}},
		{name: "mutating webhook", mutating: true,
			cfg: Config{Source: &source{mutating: []Stored{stored("c", true, webhookAt("w.example.com", hook.on("/m", allowed), hook.CABundle, admissionregistrationv1.Fail))}}}},
		{name: "validating webhook",
			cfg: Config{Source: &source{validating: []Stored{stored("c", false, webhookAt("w.example.com", hook.on("/v", allowed), hook.CABundle, admissionregistrationv1.Fail))}}}},
		{name: "mutating webhook with matchConditions", mutating: true, decoded: true,
			cfg: Config{Source: &source{mutating: []Stored{stored("c", true, conditional(webhookAt("w.example.com", hook.on("/m", allowed), hook.CABundle, admissionregistrationv1.Fail)))}}}},
		{name: "validating webhook with matchConditions", decoded: true,
			cfg: Config{Source: &source{validating: []Stored{stored("c", false, conditional(webhookAt("w.example.com", hook.on("/v", allowed), hook.CABundle, admissionregistrationv1.Fail)))}}}},
		{name: "patching webhook", mutating: true, decoded: true,
			cfg: Config{Source: &source{mutating: []Stored{stored("c", true, webhookAt("w.example.com", hook.on("/p", patch(`[{"op":"add","path":"/spec/color","value":"red"}]`)), hook.CABundle, admissionregistrationv1.Fail))}}}},
		{name: "webhook of another version", decoded: true,
			cfg: Config{Source: &source{validating: []Stored{stored("c", false, other)}}}},
		{name: "validating policy", decoded: true, cfg: Config{Policies: validatingPolicies(t)}},
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
		if err := run(context.Background(), at); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
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
	for _, path := range []string{"/m", "/v", "/p", "/o"} {
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
// policy of either phase is registered; webhooks leave it so.
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
	if New(Config{Policies: validatingPolicies(t)}).KeepsEncoded(ctx) {
		t.Error("a policy binding registered: kept encoded")
	}
	if New(Config{MutatingPolicies: mutatingPolicies(t)}).KeepsEncoded(ctx) {
		t.Error("a mutating policy registered: kept encoded")
	}
}

// widgetUpdates is a policy's spec matching updates of widgets.
const widgetUpdates = `spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [example.com], apiVersions: [v1], operations: [UPDATE], resources: [widgets]}
`

// validatingPolicies holds one ValidatingAdmissionPolicy, bound, that
// admits updates of widgets.
func validatingPolicies(t *testing.T) *policySource {
	return &policySource{
		policies: []Stored{storedYAML(t, `
metadata: {name: p}
`+widgetUpdates+`  validations: [{expression: 'true'}]
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
