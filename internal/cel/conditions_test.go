package cel

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/authn"
)

// TestAuthorizerDeclared: the authorizer variables are declared where
// upstream declares them, and not in messageExpressions.
func TestAuthorizerDeclared(t *testing.T) {
	const expr = "authorizer.requestResource.check('get').allowed()"
	if _, err := CompileCondition(expr); err != nil {
		t.Errorf("match condition: %v", err)
	}
	for _, r := range []PolicyResult{BoolResult, AnyResult} {
		if _, err := CompilePolicyExpression(expr, r); err != nil {
			t.Errorf("policy expression %d: %v", r, err)
		}
	}
	if _, err := CompilePolicyExpression("authorizer.path('/x').check('get').reason()", MessageResult); err == nil || !strings.Contains(err.Error(), "undeclared reference to 'authorizer'") {
		t.Errorf("messageExpression: %v, want an undeclared reference", err)
	}
}

func TestConditionAuthorizer(t *testing.T) {
	c, err := CompileCondition("authorizer.requestResource.subresource('status').check('patch').allowed() && !authorizer.requestResource.check('delete').allowed()")
	if err != nil {
		t.Fatal(err)
	}
	var checks []AuthzCheck
	authz := &RequestAuthz{
		Authorizer: AuthorizerFunc(func(_ context.Context, c AuthzCheck) (bool, string, error) {
			checks = append(checks, c)
			return c.Verb == "patch" && c.User.Name == "alice", "", nil
		}),
		User:     &authn.User{Name: "alice"},
		Resource: schema.GroupVersionResource{Group: "g", Version: "v1", Resource: "widgets"}, Namespace: "ns", Name: "w",
	}
	ok, _, err := c.Eval(context.Background(), nil, nil, map[string]any{}, authz)
	if err != nil || !ok {
		t.Fatalf("Eval: %v %v, want true", ok, err)
	}
	want := AuthzCheck{Verb: "patch", ResourceRequest: true, APIGroup: "g", APIVersion: "*", Resource: "widgets", Subresource: "status", Namespace: "ns", Name: "w"}
	got := checks[0]
	got.User = nil
	if got != want || len(checks) != 2 {
		t.Errorf("checks %+v, want first %+v and two in all", checks, want)
	}
	if _, _, err := c.Eval(context.Background(), nil, nil, map[string]any{}, nil); err == nil {
		t.Error("Eval without an authorizer: no error")
	}
}
