package rbac

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/crdserver/crdserver/internal/authn"
	"github.com/crdserver/crdserver/internal/authz"
	"github.com/crdserver/crdserver/internal/request"
)

// Guard refuses writes of roles and bindings that would grant what their
// writer does not hold, as upstream's RBAC storage does: a role only with
// rules the writer holds in the request's namespace unless the writer may
// "escalate" it; a binding only of a role whose rules the writer holds
// unless the writer may "bind" it. system:masters may write anything.
type Guard struct {
	// Authorizer decides escalate and bind: the server's whole chain.
	Authorizer authz.Authorizer
	// Rules resolves what the writer holds.
	Rules *Authorizer
}

// CheckRole refuses a Role (namespace set) or ClusterRole holding rules
// beyond the writer's; an aggregated ClusterRole (one that has or had an
// aggregationRule) needs the writer to hold everything.
func (g *Guard) CheckRole(ctx context.Context, namespace, name string, rules []rbacv1.PolicyRule, aggregated bool) error {
	u, info, err := writer(ctx)
	if err != nil || slices.Contains(u.Groups, authn.Masters) {
		return err
	}
	resource := "roles"
	if namespace == "" {
		resource = "clusterroles"
	}
	if info.IsResourceRequest && info.APIGroup == rbacv1.GroupName && info.Resource == resource {
		attrs := authz.Attributes{User: u, Verb: "escalate", APIGroup: info.APIGroup, APIVersion: "*",
			Resource: info.Resource, Name: info.Name, Namespace: info.Namespace, ResourceRequest: true}
		if d, _, _ := g.Authorizer.Authorize(ctx, attrs); d == authz.Allow {
			return nil
		}
	}
	if err := g.confirm(u, info.Namespace, resource, name, rules); err != nil || !aggregated {
		return err
	}
	if ok, _ := Covers(mustRules(g.Rules.RulesFor(u, info.Namespace)), fullAuthority); !ok {
		return apierrors.NewForbidden(rbacv1.Resource(resource), name, errors.New("must have cluster-admin privileges to use the aggregationRule"))
	}
	return nil
}

// fullAuthority is everything: what an aggregationRule may gather.
var fullAuthority = []rbacv1.PolicyRule{
	{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
	{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}},
}

// mustRules drops RulesFor's error: the rules it did resolve still count.
func mustRules(rules []rbacv1.PolicyRule, _ error) []rbacv1.PolicyRule { return rules }

// CheckBinding refuses a RoleBinding (namespace set) or ClusterRoleBinding
// of a role whose rules are beyond the writer's.
func (g *Guard) CheckBinding(ctx context.Context, namespace, name string, ref rbacv1.RoleRef) error {
	u, info, err := writer(ctx)
	if err != nil || slices.Contains(u.Groups, authn.Masters) {
		return err
	}
	resource := "rolebindings"
	if namespace == "" {
		resource = "clusterrolebindings"
	}
	// May the writer bind this role here? Checked in the binding's
	// namespace, so that bind can be granted per namespace.
	attrs := authz.Attributes{User: u, Verb: "bind", APIGroup: ref.APIGroup, APIVersion: "*", Name: ref.Name,
		Namespace: namespace, ResourceRequest: true}
	switch ref.Kind {
	case "ClusterRole":
		attrs.Resource = "clusterroles"
	case "Role":
		attrs.Resource = "roles"
	}
	if attrs.Resource != "" {
		if d, _, _ := g.Authorizer.Authorize(ctx, attrs); d == authz.Allow {
			return nil
		}
	}
	rules, err := g.Rules.RoleRules(ref, namespace)
	if err != nil {
		return err
	}
	return g.confirm(u, info.Namespace, resource, name, rules)
}

// confirm refuses, with upstream's 403, rules that u does not hold in
// namespace.
func (g *Guard) confirm(u *authn.User, namespace, resource, name string, rules []rbacv1.PolicyRule) error {
	owned, resolveErr := g.Rules.RulesFor(u, namespace)
	ok, missing := Covers(owned, rules)
	if ok {
		return nil
	}
	var lines []string
	for _, r := range compact(missing) {
		lines = append(lines, compactString(r))
	}
	slices.Sort(lines)
	lines = slices.Compact(lines)
	msg := fmt.Sprintf("user %q (groups=%q) is attempting to grant RBAC permissions not currently held:\n%s", u.Name, u.Groups, strings.Join(lines, "\n"))
	if resolveErr != nil {
		msg += fmt.Sprintf("; resolution errors: %v", []error{resolveErr})
	}
	return apierrors.NewForbidden(rbacv1.Resource(resource), name, errors.New(msg))
}

// writer returns the user and request of a write.
func writer(ctx context.Context) (*authn.User, *request.Info, error) {
	u, ok := authn.UserFrom(ctx)
	if !ok {
		return nil, nil, apierrors.NewInternalError(errors.New("no user on context"))
	}
	info, ok := request.InfoFrom(ctx)
	if !ok {
		return nil, nil, apierrors.NewInternalError(errors.New("no request info on context"))
	}
	return u, info, nil
}
