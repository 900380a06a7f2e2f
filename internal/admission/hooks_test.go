package admission

import (
	"context"
	"slices"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// TestCompiledOnce: registrations are compiled again only when the
// source's list changed; the same list again, or a new one with the same
// revisions, reuses what was compiled.
func TestCompiledOnce(t *testing.T) {
	ctx := context.Background()
	hook := startHook(t)
	src := &source{validating: []Stored{stored("c", false, webhookAt("w.example.com", hook.on("/v", allowed), hook.CABundle, admissionregistrationv1.Fail))}}
	policies := validatingPolicies(t, "true")
	a := New(Config{Source: src, Policies: policies})
	first, err := a.hooks(ctx, &a.validating)
	if err != nil || len(first) != 1 {
		t.Fatalf("hooks %v, %v", first, err)
	}
	_, firstBindings, err := a.policies(ctx)
	if err != nil || len(firstBindings) != 1 {
		t.Fatalf("bindings %v, %v", firstBindings, err)
	}
	for _, tc := range []struct {
		name    string
		change  func()
		compile bool
	}{
		{"the same lists", func() {}, false},
		{"new lists, same revisions", func() {
			src.validating = slices.Clone(src.validating)
			policies.policies, policies.bindings = slices.Clone(policies.policies), slices.Clone(policies.bindings)
		}, false},
		{"a new revision", func() {
			src.validating = []Stored{src.validating[0]}
			src.validating[0].Revision++
			policies.bindings = []Stored{policies.bindings[0]}
			policies.bindings[0].Revision++
		}, true},
	} {
		tc.change()
		hooks, err := a.hooks(ctx, &a.validating)
		if err != nil {
			t.Fatal(err)
		}
		_, bindings, err := a.policies(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := hooks[0] != first[0]; got != tc.compile {
			t.Errorf("%s: webhooks compiled again: %v, want %v", tc.name, got, tc.compile)
		}
		if got := bindings[0] != firstBindings[0]; got != tc.compile {
			t.Errorf("%s: bindings compiled again: %v, want %v", tc.name, got, tc.compile)
		}
	}
}
