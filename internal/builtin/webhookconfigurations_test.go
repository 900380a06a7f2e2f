package builtin

import (
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/crdserver/crdserver/internal/registry"
)

func mutatingHooks() webhookConfigHooks[admissionregistrationv1.MutatingWebhookConfiguration] {
	return MutatingWebhookConfigurations().Hooks.(webhookConfigHooks[admissionregistrationv1.MutatingWebhookConfiguration])
}

const minimalWebhook = `
metadata: {name: c}
webhooks:
- name: w.example.com
  clientConfig:
    service: {namespace: ns, name: svc}
  rules:
  - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
`

func TestWebhookConfigurationDefaults(t *testing.T) {
	h := mutatingHooks()
	for _, tc := range []struct {
		apiVersion string
		want       map[string]any
	}{
		{"admissionregistration.k8s.io/v1beta1", map[string]any{"failurePolicy": "Fail", "matchPolicy": "Exact", "sideEffects": "Unknown", "timeoutSeconds": int64(30), "reinvocationPolicy": "Never"}},
		{"admissionregistration.k8s.io/v1", map[string]any{"failurePolicy": "Fail", "matchPolicy": "Equivalent", "timeoutSeconds": int64(10), "reinvocationPolicy": "Never"}},
	} {
		obj := decodeYAML(t, "apiVersion: "+tc.apiVersion+"\nkind: MutatingWebhookConfiguration"+minimalWebhook)
		if strings.HasSuffix(tc.apiVersion, "v1beta1") {
			delete(tc.want, "failurePolicy")
		}
		h.PrepareForCreate(obj)
		wh := obj["webhooks"].([]any)[0].(map[string]any)
		for k, v := range tc.want {
			if wh[k] != v {
				t.Errorf("%s: %s = %v, want %v", tc.apiVersion, k, wh[k], v)
			}
		}
		if strings.HasSuffix(tc.apiVersion, "v1beta1") && wh["failurePolicy"] != "Ignore" {
			t.Errorf("v1beta1 failurePolicy %v", wh["failurePolicy"])
		}
		if port := wh["clientConfig"].(map[string]any)["service"].(map[string]any)["port"]; port != int64(443) {
			t.Errorf("%s: service port %v", tc.apiVersion, port)
		}
		if errs := h.Validate(obj); strings.HasSuffix(tc.apiVersion, "v1beta1") != (len(errs) == 0) {
			// v1 requires sideEffects and admissionReviewVersions.
			t.Errorf("%s: validation %v", tc.apiVersion, errs)
		}
	}
}

func TestWebhookConfigurationValidation(t *testing.T) {
	h := mutatingHooks()
	for _, tc := range []struct {
		name, edit string
		want       []string
	}{
		{line(), "", []string{
			`webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun`,
			`webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1`,
		}},
		{line(), "  sideEffects: Some\n  admissionReviewVersions: [v2]\n", []string{
			`webhooks[0].sideEffects: Unsupported value: "Some": supported values: "None", "NoneOnDryRun"`,
			`webhooks[0].admissionReviewVersions: Invalid value: ["v2"]: must include at least one of v1, v1beta1`,
		}},
		{line(), "  sideEffects: None\n  admissionReviewVersions: [v1]\n  timeoutSeconds: 31\n  failurePolicy: Maybe\n  reinvocationPolicy: Always\n", []string{
			`webhooks[0].failurePolicy: Unsupported value: "Maybe": supported values: "Fail", "Ignore"`,
			`webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds`,
			`webhooks[0].reinvocationPolicy: Unsupported value: "Always": supported values: "IfNeeded", "Never"`,
		}},
		{line(), "  sideEffects: None\n  admissionReviewVersions: [v1]\n  matchConditions:\n  - {name: a, expression: 'object.x =='}\n  - {name: a, expression: 'true'}\n", []string{
			`webhooks[0].matchConditions[0].expression: Invalid value: "object.x ==": compilation failed`,
			`webhooks[0].matchConditions[1].name: Duplicate value: "a"`,
		}},
	} {
		obj := decodeYAML(t, "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration"+minimalWebhook+tc.edit)
		h.PrepareForCreate(obj)
		errs := h.Validate(obj)
		var got []string
		for _, e := range errs {
			got = append(got, e.Error())
		}
		all := strings.Join(got, "\n")
		for _, w := range tc.want {
			if !strings.Contains(all, w) {
				t.Errorf("%s: missing %q in\n%s", tc.name, w, all)
			}
		}
		if len(got) != len(tc.want) {
			t.Errorf("%s: %d errors, want %d:\n%s", tc.name, len(got), len(tc.want), all)
		}
	}
	// The client config, rules and names.
	obj := decodeYAML(t, `
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: c}
webhooks:
- name: w
  sideEffects: None
  admissionReviewVersions: [v1]
  clientConfig: {url: "http://x/?a=b", service: {namespace: ns, name: s}}
  rules: [{apiGroups: ["*", "x"], apiVersions: [], operations: [CREATE, BOGUS], resources: ["*/*", pods]}]
- name: w
  sideEffects: None
  admissionReviewVersions: [v1]
  clientConfig: {url: "http://x/?a=b"}
`)
	vh := ValidatingWebhookConfigurations().Hooks.(webhookConfigHooks[admissionregistrationv1.ValidatingWebhookConfiguration])
	vh.PrepareForCreate(obj)
	var got []string
	for _, e := range vh.Validate(obj) {
		got = append(got, e.Error())
	}
	all := strings.Join(got, "\n")
	for _, w := range []string{
		`webhooks[0].name: Invalid value: "w": should be a domain with at least three segments separated by dots`,
		`webhooks[0].rules[0].operations[1]: Unsupported value: "BOGUS"`,
		`webhooks[0].rules[0].apiGroups: Invalid value: ["*","x"]: if '*' is present, must not specify other API groups`,
		`webhooks[0].rules[0].apiVersions: Required value`,
		`webhooks[0].rules[0].resources: Invalid value: ["*/*","pods"]: if '*/*' is present, must not specify other resources`,
		`webhooks[0].clientConfig: Required value: exactly one of url or service is required`,
		`webhooks[1].clientConfig.url: Invalid value: "http": 'https' is the only allowed URL scheme; desired format: https://host[/path]`,
		`webhooks[1].clientConfig.url: Invalid value: "a=b": query parameters are not permitted in the URL`,
		`webhooks[1].name: Duplicate value: "w"`,
	} {
		if !strings.Contains(all, w) {
			t.Errorf("missing %q in\n%s", w, all)
		}
	}
}

var _ registry.Validator = webhookConfigHooks[admissionregistrationv1.ValidatingWebhookConfiguration]{}
