package builtin

import (
	"strings"
	"testing"
)

func TestMutatingAdmissionPolicyValidation(t *testing.T) {
	h := MutatingAdmissionPolicies().Hooks.(mutatingPolicyHooks)
	const rules = `
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
`
	for _, tc := range []struct {
		name, spec string
		want       []string // the errors, in order; none for a valid policy
	}{
		{"json patch", rules + `  mutations: [{patchType: JSONPatch, jsonPatch: {expression: "[JSONPatch{op: 'add', path: '/metadata/labels/a', value: 'b'}]"}}]`, nil},
		{"apply configuration", rules + `  reinvocationPolicy: IfNeeded
  mutations: [{patchType: ApplyConfiguration, applyConfiguration: {expression: "Object{metadata: Object.metadata{labels: {'a': 'b'}}}"}}]`, nil},
		{"no mutations", rules, []string{"spec.mutations: Required value: mutations must contain at least one item"}},
		{"no match constraints", `  mutations: [{patchType: JSONPatch, jsonPatch: {expression: "[JSONPatch{op: 'test', path: '/a'}]"}}]`, []string{"spec.matchConstraints: Required value"}},
		{"no patch type", rules + `  mutations: [{jsonPatch: {expression: "[]"}}]`, []string{"spec.mutations[0].patchType: Required value"}},
		{"unknown patch type", rules + `  mutations: [{patchType: Merge}]`, []string{`spec.mutations[0].patchType: Unsupported value: "Merge": supported values: "ApplyConfiguration", "JSONPatch"`}},
		{"both set", rules + `  mutations: [{patchType: JSONPatch, applyConfiguration: {expression: "Object{}"}}]`, []string{
			"spec.mutations[0].jsonPatch: Required value: must be specified when patchType is JSONPatch",
			`spec.mutations[0].applyConfiguration: Invalid value: "{applyConfiguration}": must not be specified when patchType is JSONPatch`}},
		{"missing apply configuration", rules + `  mutations: [{patchType: ApplyConfiguration, jsonPatch: {expression: "[]"}}]`, []string{
			"spec.mutations[0].applyConfiguration: Required value: must be specified when patchType is ApplyConfiguration",
			`spec.mutations[0].jsonPatch: Invalid value: "{jsonPatch}": must not be specified when patchType is ApplyConfiguration`}},
		{"empty expression", rules + `  mutations: [{patchType: JSONPatch, jsonPatch: {expression: " "}}]`, []string{"spec.mutations[0].jsonPatch.expression: Required value"}},
		{"untyped empty list", rules + `  mutations: [{patchType: JSONPatch, jsonPatch: {expression: "[]"}}]`, []string{`spec.mutations[0].jsonPatch.expression: Invalid value: "[]": must evaluate to list(JSONPatch) but got list(dyn)`}},
		{"bad expression", rules + `  mutations: [{patchType: JSONPatch, jsonPatch: {expression: "[JSONPatch{op: 1 +}]"}}]`, []string{`spec.mutations[0].jsonPatch.expression: Invalid value: "[JSONPatch{op: 1 +}]": compilation failed: `}},
		{"wrong result type", rules + `  mutations: [{patchType: ApplyConfiguration, applyConfiguration: {expression: "[JSONPatch{op: 'add'}]"}}]`, []string{`spec.mutations[0].applyConfiguration.expression: Invalid value: "[JSONPatch{op: 'add'}]": must evaluate to Object but got list(JSONPatch)`}},
		{"bad reinvocation policy", rules + `  reinvocationPolicy: Always
  mutations: [{patchType: JSONPatch, jsonPatch: {expression: "[JSONPatch{op: 'test', path: '/a'}]"}}]`, []string{`spec.reinvocationPolicy: Unsupported value: "Always": supported values: "IfNeeded", "Never"`}},
		{"no reinvocation policy", rules + `  mutations: [{patchType: JSONPatch, jsonPatch: {expression: "[JSONPatch{op: 'test', path: '/a'}]"}}]`, []string{"spec.reinvocationPolicy: Required value"}},
		{"bad failure policy", rules + `  failurePolicy: Maybe
  mutations: [{patchType: JSONPatch, jsonPatch: {expression: "[JSONPatch{op: 'test', path: '/a'}]"}}]`, []string{`spec.failurePolicy: Unsupported value: "Maybe": supported values: "Fail", "Ignore"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := tc.spec
			if !strings.Contains(spec, "reinvocationPolicy") && tc.name != "no reinvocation policy" {
				// Required, without a default (upstream's v1).
				spec = "  reinvocationPolicy: Never\n" + spec
			}
			obj := decodeYAML(t, "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingAdmissionPolicy\nmetadata: {name: p}\nspec:\n"+spec)
			h.PrepareForCreate(obj)
			errs := h.Validate(obj)
			if len(errs) != len(tc.want) {
				t.Fatalf("errors %v, want %q", errs, tc.want)
			}
			for i, e := range errs {
				if !strings.HasPrefix(e.Error(), tc.want[i]) {
					t.Errorf("error %d: %q, want %q", i, e.Error(), tc.want[i])
				}
			}
		})
	}
}

func TestMutatingAdmissionPolicyBindingValidation(t *testing.T) {
	h := MutatingAdmissionPolicyBindings().Hooks.(mutatingBindingHooks)
	for _, tc := range []struct {
		spec string
		want []string
	}{
		{`{policyName: p}`, nil},
		{`{policyName: p, paramRef: {name: a, parameterNotFoundAction: Deny}}`, nil},
		{`{}`, []string{"spec.policyName: Required value"}},
		{`{policyName: p, paramRef: {name: a}}`, []string{"spec.paramRef.parameterNotFoundAction: Required value"}},
		{`{policyName: p, paramRef: {parameterNotFoundAction: Allow}}`, []string{"spec.paramRef: Required value: one of name or selector must be specified"}},
		{`{policyName: p, paramRef: {name: a, selector: {}, parameterNotFoundAction: Allow}}`, []string{"spec.paramRef.name: Forbidden: name and selector are mutually exclusive"}},
	} {
		obj := decodeYAML(t, "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingAdmissionPolicyBinding\nmetadata: {name: b}\nspec: "+tc.spec)
		h.PrepareForCreate(obj)
		errs := h.Validate(obj)
		if len(errs) != len(tc.want) {
			t.Fatalf("%s: errors %v, want %q", tc.spec, errs, tc.want)
		}
		for i, e := range errs {
			if !strings.HasPrefix(e.Error(), tc.want[i]) {
				t.Errorf("%s: error %q, want %q", tc.spec, e.Error(), tc.want[i])
			}
		}
	}
}
