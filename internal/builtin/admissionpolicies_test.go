package builtin

import (
	"strings"
	"testing"

	"github.com/crdserver/crdserver/internal/registry"
)

// Policies and bindings are refused in upstream's words (compat/e2e's
// requests.txt sends the same objects to kube-apiserver).
func TestValidatingAdmissionPolicyValidation(t *testing.T) {
	const rules = `
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
`
	for _, tc := range []struct {
		name string
		def  *registry.Definition
		spec string
		want []string // the errors, in order; none for a valid object
	}{
		{"valid", ValidatingAdmissionPolicies(), rules + `  validations: [{expression: "true", reason: Forbidden}]`, nil},
		{"unknown reason", ValidatingAdmissionPolicies(), rules + `  validations: [{expression: "true", reason: Nope}]`,
			[]string{`spec.validations[0].reason: Unsupported value: "Nope": supported values: "Forbidden", "Invalid", "RequestEntityTooLarge"`}},
		{"no match constraints", ValidatingAdmissionPolicies(), `  validations: [{expression: "true"}]`, []string{"spec.matchConstraints: Required value"}},
		{"no resource rules", ValidatingAdmissionPolicies(), `  matchConstraints: {namespaceSelector: {}}
  validations: [{expression: "true"}]`, []string{"spec.matchConstraints.resourceRules: Required value"}},
		{"variable not an identifier", ValidatingAdmissionPolicies(), rules + `  variables: [{name: 1x, expression: "true"}]
  validations: [{expression: "true"}]`, []string{`spec.variables[0].name: Invalid value: "1x": must be a valid CEL identifier`}},
		{"variable a reserved word", ValidatingAdmissionPolicies(), rules + `  variables: [{name: in, expression: "true"}]
  validations: [{expression: "true"}]`, []string{`spec.variables[0].name: Invalid value: "in": must be a valid CEL identifier`}},
		{"message expression of another type", ValidatingAdmissionPolicies(), rules + `  validations: [{expression: "true", messageExpression: "1"}]`,
			[]string{`spec.validations[0].messageExpression: Invalid value: "1": must evaluate to string but got int`}},
		{"expression of another type", ValidatingAdmissionPolicies(), rules + `  validations: [{expression: "'x'"}]`,
			[]string{`spec.validations[0].expression: Invalid value: "'x'": must evaluate to bool but got string`}},
		{"binding without actions", ValidatingAdmissionPolicyBindings(), `  policyName: p`, []string{"spec.validationActions: Required value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := decodeYAML(t, "apiVersion: admissionregistration.k8s.io/v1\nkind: "+tc.def.Kind+"\nmetadata: {name: p}\nspec:\n"+tc.spec)
			tc.def.Hooks.(registry.CreatePreparer).PrepareForCreate(obj)
			var got []string
			for _, e := range tc.def.Hooks.(registry.Validator).Validate(obj) {
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}
