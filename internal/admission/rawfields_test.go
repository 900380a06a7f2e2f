package admission

import (
	"context"
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

// TestEncodedManagedFieldsDecodedForWebhooks: what a webhook or policy
// may read is decoded; with nothing registered, nothing is.
func TestEncodedManagedFieldsDecodedForWebhooks(t *testing.T) {
	want := []any{map[string]any{"apiVersion": "example.com/v1", "fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:spec": map[string]any{}}, "manager": "m", "operation": "Update"}}
	idle := New(Config{})
	at := widgetAttributes(Update)
	at.Object = withEncodedManagedFields(t, at.Object)
	at.OldObject = withEncodedManagedFields(t, widgetAttributes(Update).Object)
	if err := idle.Mutate(context.Background(), at); err != nil {
		t.Fatal(err)
	}
	if err := idle.Validate(context.Background(), at); err != nil {
		t.Fatal(err)
	}
	if !encodedManagedFields(at.Object) || !encodedManagedFields(at.OldObject) {
		t.Errorf("with nothing registered, managedFields were decoded")
	}

	hook := startHook(t)
	for _, mutating := range []bool{true, false} {
		src := &source{validating: []Stored{stored("c", false, webhookAt("w.example.com", hook.on("/v", allowed), hook.CABundle, admissionregistrationv1.Fail))}}
		if mutating {
			src = &source{mutating: []Stored{stored("c", true, webhookAt("w.example.com", hook.on("/m", allowed), hook.CABundle, admissionregistrationv1.Fail))}}
		}
		a := New(Config{Source: src})
		at := widgetAttributes(Update)
		at.Object = withEncodedManagedFields(t, at.Object)
		at.OldObject = withEncodedManagedFields(t, widgetAttributes(Update).Object)
		run := a.Validate
		if mutating {
			run = a.Mutate
		}
		if err := run(context.Background(), at); err != nil {
			t.Fatal(err)
		}
		for what, obj := range map[string]map[string]any{"object": at.Object, "oldObject": at.OldObject} {
			if got := obj["metadata"].(map[string]any)["managedFields"]; !reflect.DeepEqual(got, want) {
				t.Errorf("mutating %v: %s managedFields %#v, want %#v", mutating, what, got, want)
			}
		}
	}
}

// TestIdle: admission is idle, and the handler keeps managedFields
// encoded, only while no webhook or policy of either phase is registered.
func TestIdle(t *testing.T) {
	ctx := context.Background()
	if !New(Config{}).Idle(ctx) {
		t.Error("nothing registered: not idle")
	}
	if !New(Config{Source: &source{}, Policies: &policySource{}}).Idle(ctx) {
		t.Error("empty sources: not idle")
	}
	hook := startHook(t)
	for name, src := range map[string]*source{
		"mutating":   {mutating: []Stored{stored("c", true, webhookAt("w.example.com", hook.on("/m", allowed), hook.CABundle, admissionregistrationv1.Fail))}},
		"validating": {validating: []Stored{stored("c", false, webhookAt("w.example.com", hook.on("/v", allowed), hook.CABundle, admissionregistrationv1.Fail))}},
	} {
		if New(Config{Source: src}).Idle(ctx) {
			t.Errorf("a %s webhook registered: idle", name)
		}
	}
	policies := &policySource{
		policies: []Stored{storedYAML(t, "metadata: {name: p}\nspec: {validations: [{expression: 'true'}]}", &admissionregistrationv1.ValidatingAdmissionPolicy{})},
		bindings: []Stored{storedYAML(t, "metadata: {name: b}\nspec: {policyName: p, validationActions: [Deny]}", &admissionregistrationv1.ValidatingAdmissionPolicyBinding{})},
	}
	if New(Config{Policies: policies}).Idle(ctx) {
		t.Error("a policy binding registered: idle")
	}
}
