package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/crdserver/crdserver/internal/authz"
)

type policySource struct{ policies, bindings []Stored }

func (s *policySource) ValidatingAdmissionPolicies(context.Context) ([]Stored, error) {
	return s.policies, nil
}

func (s *policySource) ValidatingAdmissionPolicyBindings(context.Context) ([]Stored, error) {
	return s.bindings, nil
}

func storedYAML(t *testing.T, y string, into any) Stored {
	t.Helper()
	if err := yaml.Unmarshal([]byte(y), into); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(into)
	rev++
	var md struct {
		Metadata struct{ Name string } `json:"metadata"`
	}
	json.Unmarshal(b, &md)
	return Stored{Name: md.Metadata.Name, Revision: rev, JSON: b}
}

const testPolicy = `
metadata: {name: limits}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: [example.com]
      apiVersions: [v1]
      operations: [CREATE, UPDATE]
      resources: [widgets]
  variables:
  - name: size
    expression: "object.spec.size"
  validations:
  - expression: "variables.size <= 5"
    messageExpression: "'size must be at most 5, got ' + string(variables.size)"
  - expression: "object.metadata.name != 'w1'"
    message: "not w1"
    reason: Forbidden
`

func TestPolicyDenyAndWarn(t *testing.T) {
	for _, tc := range []struct {
		actions string
		size    int64
		code    int32
		msg     string
		warning string
	}{
		{"[Deny]", 1, 403, `widgets.example.com "w1" is forbidden: ValidatingAdmissionPolicy 'limits' with binding 'b' denied request: not w1`, ""},
		{"[Deny]", 7, 422, `ValidatingAdmissionPolicy 'limits' with binding 'b' denied request: size must be at most 5, got 7`, ""},
		{"[Warn]", 7, 0, "", `Validation failed for ValidatingAdmissionPolicy 'limits' with binding 'b': size must be at most 5, got 7`},
	} {
		src := &policySource{
			policies: []Stored{storedYAML(t, testPolicy, &admissionregistrationv1.ValidatingAdmissionPolicy{})},
			bindings: []Stored{storedYAML(t, "metadata: {name: b}\nspec: {policyName: limits, validationActions: "+tc.actions+"}", &admissionregistrationv1.ValidatingAdmissionPolicyBinding{})},
		}
		a := New(Config{Policies: src})
		at := widgetAttributes(Create)
		at.Object["spec"].(map[string]any)["size"] = tc.size
		var warnings []string
		at.Warn = func(s string) { warnings = append(warnings, s) }
		err := a.Validate(context.Background(), at)
		if tc.code == 0 {
			if err != nil {
				t.Errorf("%s size %d: %v", tc.actions, tc.size, err)
			}
		} else if st, ok := err.(*apierrors.StatusError); !ok || st.ErrStatus.Code != tc.code || !strings.Contains(st.ErrStatus.Message, tc.msg) {
			t.Errorf("%s size %d: %v, want %d %q", tc.actions, tc.size, err, tc.code, tc.msg)
		}
		if tc.warning != "" && (len(warnings) == 0 || warnings[0] != tc.warning) {
			t.Errorf("%s size %d: warnings %q", tc.actions, tc.size, warnings)
		}
	}
}

type paramsFunc func(ctx context.Context, apiVersion, kind, namespace, name string, selector labels.Selector) ([]map[string]any, error)

func (f paramsFunc) Params(ctx context.Context, apiVersion, kind, namespace, name string, selector labels.Selector) ([]map[string]any, error) {
	return f(ctx, apiVersion, kind, namespace, name, selector)
}

func TestPolicyParams(t *testing.T) {
	policy := `
metadata: {name: limits}
spec:
  paramKind: {apiVersion: example.com/v1, kind: Limit}
  matchConstraints:
    resourceRules:
    - {apiGroups: [example.com], apiVersions: [v1], operations: [CREATE], resources: [widgets]}
  validations:
  - expression: "object.spec.size <= params.spec.max"
    messageExpression: "'at most ' + string(params.spec.max)"
`
	params := paramsFunc(func(_ context.Context, apiVersion, kind, namespace, name string, _ labels.Selector) ([]map[string]any, error) {
		if apiVersion != "example.com/v1" || kind != "Limit" || namespace != "default" {
			return nil, fmt.Errorf("unexpected %s %s %s", apiVersion, kind, namespace)
		}
		if name != "small" {
			return nil, nil
		}
		return []map[string]any{{"spec": map[string]any{"max": int64(3)}}}, nil
	})
	for _, tc := range []struct {
		ref  string
		want string
	}{
		{"{name: small, parameterNotFoundAction: Deny}", "denied request: at most 3"},
		{"{name: missing, parameterNotFoundAction: Deny}", "failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"},
		{"{name: missing, parameterNotFoundAction: Allow}", ""},
	} {
		src := &policySource{
			policies: []Stored{storedYAML(t, policy, &admissionregistrationv1.ValidatingAdmissionPolicy{})},
			bindings: []Stored{storedYAML(t, "metadata: {name: b}\nspec: {policyName: limits, validationActions: [Deny], paramRef: "+tc.ref+"}", &admissionregistrationv1.ValidatingAdmissionPolicyBinding{})},
		}
		a := New(Config{Policies: src, Params: params})
		at := widgetAttributes(Create)
		at.Object["spec"].(map[string]any)["size"] = int64(5)
		err := a.Validate(context.Background(), at)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.ref, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.ref, err, tc.want)
		}
	}
}

func TestPolicyAuditAnnotations(t *testing.T) {
	policy := `
metadata: {name: limits}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [example.com], apiVersions: [v1], operations: [CREATE], resources: [widgets]}
  validations:
  - expression: "true"
  - expression: "object.spec.size <= 5"
    message: too big
  auditAnnotations:
  - key: size
    valueExpression: "'size ' + string(object.spec.size)"
  - key: empty
    valueExpression: "null"
`
	for _, tc := range []struct {
		actions string
		size    int64
		denied  bool
		want    map[string]string
	}{
		{"[Audit]", 1, false, map[string]string{"limits/size": "size 1"}},
		{"[Audit]", 7, false, map[string]string{
			"limits/size":        "size 7",
			validationFailureKey: `[{"message":"too big","policy":"limits","binding":"b","expressionIndex":1,"validationActions":["Audit"]}]`,
		}},
		{"[Deny, Audit]", 7, true, map[string]string{
			"limits/size":        "size 7",
			validationFailureKey: `[{"message":"too big","policy":"limits","binding":"b","expressionIndex":1,"validationActions":["Deny","Audit"]}]`,
		}},
		{"[Deny]", 7, true, map[string]string{"limits/size": "size 7"}},
	} {
		src := &policySource{
			policies: []Stored{storedYAML(t, policy, &admissionregistrationv1.ValidatingAdmissionPolicy{})},
			bindings: []Stored{storedYAML(t, "metadata: {name: b}\nspec: {policyName: limits, validationActions: "+tc.actions+"}", &admissionregistrationv1.ValidatingAdmissionPolicyBinding{})},
		}
		a := New(Config{Policies: src})
		at := widgetAttributes(Create)
		at.Object["spec"].(map[string]any)["size"] = tc.size
		got := map[string]string{}
		at.Annotate = func(k, v string) { got[k] = v }
		err := a.Validate(context.Background(), at)
		if (err != nil) != tc.denied {
			t.Errorf("%s size %d: %v, want denied %v", tc.actions, tc.size, err, tc.denied)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s size %d: annotations %q, want %q", tc.actions, tc.size, got, tc.want)
		}
	}
}

func TestPolicyAuditAnnotationError(t *testing.T) {
	for _, tc := range []struct {
		failurePolicy string
		want          string
	}{
		{"Fail", `ValidatingAdmissionPolicy 'p' with binding 'b' denied request: valueExpression 'object.spec.size' resulted in unsupported return type: int. Return type must be either string or null.`},
		{"Ignore", ""},
	} {
		policy := `
metadata: {name: p}
spec:
  failurePolicy: ` + tc.failurePolicy + `
  matchConstraints:
    resourceRules:
    - {apiGroups: [example.com], apiVersions: [v1], operations: [CREATE], resources: [widgets]}
  auditAnnotations:
  - {key: size, valueExpression: "object.spec.size"}
`
		src := &policySource{
			policies: []Stored{storedYAML(t, policy, &admissionregistrationv1.ValidatingAdmissionPolicy{})},
			bindings: []Stored{storedYAML(t, "metadata: {name: b}\nspec: {policyName: p, validationActions: [Audit]}", &admissionregistrationv1.ValidatingAdmissionPolicyBinding{})},
		}
		at := widgetAttributes(Create)
		at.Object["spec"].(map[string]any)["size"] = int64(3)
		err := New(Config{Policies: src}).Validate(context.Background(), at)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("failurePolicy %s: %v, want %q", tc.failurePolicy, err, tc.want)
		}
	}
}

// TestPolicyAuthorizer: the authorizer variables ask the server's
// authorizer about the requesting user (or a service account), a
// resource or a path, and the request's own resource.
func TestPolicyAuthorizer(t *testing.T) {
	var asked []authz.Attributes
	authorizer := authz.AuthorizerFunc(func(_ context.Context, at authz.Attributes) (authz.Decision, string, error) {
		asked = append(asked, at)
		switch {
		case at.User.Name == "alice" && at.Verb == "update" && at.Resource == "widgets" && at.Name == "w1":
			return authz.Allow, "alice may", nil
		case at.User.Name == "system:serviceaccount:ns:robot" && at.Path == "/healthz":
			return authz.Allow, "", nil
		case at.Resource == "broken":
			return authz.NoOpinion, "", errors.New("no answer")
		}
		return authz.NoOpinion, "nobody said yes", nil
	})
	for _, tc := range []struct {
		expr   string
		denied bool
		want   authz.Attributes
	}{
		{"authorizer.group('example.com').resource('widgets').namespace('default').name('w1').check('update').allowed()", false,
			authz.Attributes{Verb: "update", ResourceRequest: true, APIGroup: "example.com", APIVersion: "*", Resource: "widgets", Namespace: "default", Name: "w1"}},
		{"authorizer.group('example.com').resource('widgets').namespace('default').name('w2').check('update').allowed()", true,
			authz.Attributes{Verb: "update", ResourceRequest: true, APIGroup: "example.com", APIVersion: "*", Resource: "widgets", Namespace: "default", Name: "w2"}},
		{"authorizer.requestResource.check('update').reason() == 'alice may'", false,
			authz.Attributes{Verb: "update", ResourceRequest: true, APIGroup: "example.com", APIVersion: "*", Resource: "widgets", Namespace: "default", Name: "w1"}},
		{"authorizer.group('').resource('broken').check('get').errored()", false,
			authz.Attributes{Verb: "get", ResourceRequest: true, APIVersion: "*", Resource: "broken"}},
		{"authorizer.serviceAccount('ns', 'robot').path('/healthz').check('get').allowed()", false,
			authz.Attributes{Verb: "get", Path: "/healthz"}},
	} {
		policy := `
metadata: {name: p}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [example.com], apiVersions: [v1], operations: [CREATE], resources: [widgets]}
  validations:
  - expression: "` + tc.expr + `"
`
		src := &policySource{
			policies: []Stored{storedYAML(t, policy, &admissionregistrationv1.ValidatingAdmissionPolicy{})},
			bindings: []Stored{storedYAML(t, "metadata: {name: b}\nspec: {policyName: p, validationActions: [Deny]}", &admissionregistrationv1.ValidatingAdmissionPolicyBinding{})},
		}
		asked = nil
		err := New(Config{Policies: src, Authorizer: authorizer}).Validate(context.Background(), widgetAttributes(Create))
		if (err != nil) != tc.denied {
			t.Errorf("%s: %v, want denied %v", tc.expr, err, tc.denied)
		}
		if len(asked) != 1 {
			t.Errorf("%s: asked %+v, want one check", tc.expr, asked)
			continue
		}
		got := asked[0]
		got.User = nil
		if got != tc.want {
			t.Errorf("%s: asked %+v, want %+v", tc.expr, got, tc.want)
		}
	}
}

// The warnings of a policy whose match conditions or variables fail to
// evaluate, in upstream's words: each condition's error names its
// expression, several are one aggregate; a variable is evaluated when an
// expression reads it, so one that fails fails only the expressions that
// read it.
func TestPolicyEvaluationErrorWarnings(t *testing.T) {
	const policy = `
metadata: {name: p}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {apiGroups: [example.com], apiVersions: [v1], operations: [CREATE], resources: [widgets]}
`
	const prefix = "Validation failed for ValidatingAdmissionPolicy 'p' with binding 'b': "
	for _, tc := range []struct {
		name, spec string
		warnings   []string
	}{
		{
			name: "a condition",
			spec: `
  matchConditions: [{name: a, expression: "object.spec.missing == 1"}]
  validations: [{expression: "false", message: never}]`,
			warnings: []string{prefix + "expression 'object.spec.missing == 1' resulted in error: no such key: missing"},
		},
		{
			name: "two conditions",
			spec: `
  matchConditions:
  - {name: a, expression: "object.spec.missing == 1"}
  - {name: b, expression: "object.spec.other == 1"}
  validations: [{expression: "false", message: never}]`,
			warnings: []string{prefix + "[expression 'object.spec.missing == 1' resulted in error: no such key: missing, " +
				"expression 'object.spec.other == 1' resulted in error: no such key: other]"},
		},
		{
			name: "a variable no expression reads",
			spec: `
  variables: [{name: bad, expression: "object.spec.missing"}]
  validations: [{expression: "object.spec.size > 1", message: "too small"}]`,
			warnings: []string{prefix + "too small"},
		},
		{
			name: "a variable an expression reads",
			spec: `
  variables:
  - {name: bad, expression: "object.spec.missing"}
  - {name: size, expression: "object.spec.size"}
  validations:
  - {expression: "variables.bad == 1", message: "reads bad"}
  - {expression: "variables.size > 1", message: "too small"}`,
			warnings: []string{
				prefix + "expression 'variables.bad == 1' resulted in error: composited variable \"bad\" fails to evaluate: no such key: missing",
				prefix + "too small",
			},
		},
	} {
		src := &policySource{
			policies: []Stored{storedYAML(t, policy+tc.spec, &admissionregistrationv1.ValidatingAdmissionPolicy{})},
			bindings: []Stored{storedYAML(t, "metadata: {name: b}\nspec: {policyName: p, validationActions: [Warn]}", &admissionregistrationv1.ValidatingAdmissionPolicyBinding{})},
		}
		a := New(Config{Policies: src})
		at := widgetAttributes(Create)
		var warnings []string
		at.Warn = func(s string) { warnings = append(warnings, s) }
		if err := a.Validate(context.Background(), at); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		if !reflect.DeepEqual(warnings, tc.warnings) {
			t.Errorf("%s: warnings\n got %q\nwant %q", tc.name, warnings, tc.warnings)
		}
	}
}
