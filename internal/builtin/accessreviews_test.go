package builtin

import (
	"context"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/crdserver/crdserver/internal/authn"
	"github.com/crdserver/crdserver/internal/authz"
	"github.com/crdserver/crdserver/internal/registry"
)

// reviewer allows bob to get pods, and holds one rule for everyone.
type reviewer struct{}

func (reviewer) Authorize(_ context.Context, a authz.Attributes) (authz.Decision, string, error) {
	if a.User.Name == "bob" && a.Verb == "get" && a.Resource == "pods" {
		return authz.Allow, "allowed by test", nil
	}
	return authz.NoOpinion, "", nil
}

func (reviewer) RulesFor(u *authn.User, ns string) ([]rbacv1.PolicyRule, bool, error) {
	return []rbacv1.PolicyRule{
		{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}},
		{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}},
	}, false, nil
}

func TestAccessReviews(t *testing.T) {
	ctx := authn.WithUser(context.Background(), &authn.User{Name: "bob"})
	tests := []struct {
		name string
		def  *registry.Definition
		obj  string
		want string // the status's allowed, or the error
	}{
		{line(), SubjectAccessReviews(reviewer{}), `{spec: {user: bob, resourceAttributes: {verb: get, resource: pods, namespace: a}}}`, "allowed"},
		{line(), SubjectAccessReviews(reviewer{}), `{spec: {user: eve, resourceAttributes: {verb: get, resource: pods}}}`, "denied"},
		{line(), SubjectAccessReviews(reviewer{}), `{spec: {resourceAttributes: {verb: get, resource: pods}}}`,
			`SubjectAccessReview.authorization.k8s.io "" is invalid: spec.user: Invalid value: "": at least one of user or group must be specified`},
		{line(), SubjectAccessReviews(reviewer{}), `{spec: {user: bob}}`,
			`SubjectAccessReview.authorization.k8s.io "" is invalid: spec: Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes must be specified`},
		{line(), SubjectAccessReviews(reviewer{}), `{metadata: {name: x}, spec: {user: bob, nonResourceAttributes: {verb: get, path: /x}}}`,
			"metadata: Invalid value"},
		{line(), SelfSubjectAccessReviews(reviewer{}), `{spec: {resourceAttributes: {verb: get, resource: pods}}}`, "allowed"},
		{line(), LocalSubjectAccessReviews(reviewer{}), `{metadata: {namespace: a}, spec: {user: bob, resourceAttributes: {verb: get, resource: pods, namespace: b}}}`,
			`spec.resourceAttributes.namespace: Invalid value: "b": must match metadata.namespace`},
		{line(), SelfSubjectRulesReviews(reviewer{}), `{spec: {namespace: a}}`, "1 resource rule, 1 non-resource rule"},
		{line(), SelfSubjectRulesReviews(reviewer{}), `{spec: {}}`, "no namespace on request"},
	}
	for _, tt := range tests {
		out, err := tt.def.Hooks.(registry.Creator).Create(ctx, decodeYAML(t, tt.obj))
		got := ""
		switch {
		case err != nil:
			got = err.Error()
		case out["kind"] == "SelfSubjectRulesReview":
			st := out["status"].(map[string]any)
			got = map[bool]string{true: "1 resource rule, 1 non-resource rule"}[len(st["resourceRules"].([]any)) == 1 && len(st["nonResourceRules"].([]any)) == 1]
		default:
			st := out["status"].(map[string]any)
			got = map[bool]string{true: "allowed", false: "denied"}[st["allowed"] == true]
		}
		if !strings.Contains(got, tt.want) {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
	}
}
