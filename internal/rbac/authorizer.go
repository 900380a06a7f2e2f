package rbac

import (
	"context"
	"fmt"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/crdserver/crdserver/internal/authn"
	"github.com/crdserver/crdserver/internal/authz"
)

// Authorizer decides requests from an Index, as upstream's RBAC
// authorizer does: a request is allowed when a rule of a role bound to
// the user (by name, group or service account) in the request's namespace
// or cluster-wide grants it; otherwise it has no opinion, and the reason
// names the bound roles that do not exist. Members of system:masters are
// always allowed, as upstream's privileged-group authorizer does before
// RBAC.
type Authorizer struct {
	Index *Index
}

var _ authz.Authorizer = (*Authorizer)(nil)

// Authorize implements authz.Authorizer.
func (z *Authorizer) Authorize(_ context.Context, a authz.Attributes) (authz.Decision, string, error) {
	u := a.User
	if u == nil {
		return authz.NoOpinion, "", nil
	}
	if slices.Contains(u.Groups, authn.Masters) {
		return authz.Allow, "", nil
	}
	allowed, missing := z.Index.allowed(u, &a)
	if allowed {
		return authz.Allow, "", nil
	}
	if !missing {
		return authz.NoOpinion, "", nil
	}
	if errs := z.Index.missing(u, a.Namespace); len(errs) > 0 {
		return authz.NoOpinion, fmt.Sprintf("RBAC: %v", utilerrors.NewAggregate(errs)), nil
	}
	return authz.NoOpinion, "", nil
}

// allowed reports whether a rule bound to u grants a: the cluster-wide
// bindings first, then those of a's namespace. missing reports whether a
// binding looked at refers to a role that does not exist (a denial then
// names it).
func (ix *Index) allowed(u *authn.User, a *authz.Attributes) (allowed, missing bool) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if allowed, missing = ix.cluster.allows(ix, u, a); allowed || a.Namespace == "" {
		return allowed, missing
	}
	allowed, nsMissing := ix.namespaces[a.Namespace].allows(ix, u, a)
	return allowed, missing || nsMissing
}

// allows checks the bindings of s naming u; ix.mu is held. A binding
// naming u more than once is checked more than once: cheaper than
// remembering which were.
func (s *scope) allows(ix *Index, u *authn.User, a *authz.Attributes) (allowed, missing bool) {
	if s == nil {
		return false, false
	}
	check := func(bs []*binding) bool {
		for _, b := range bs {
			rules, ok := ix.rulesOf(b.ref, b.namespace)
			missing = missing || !ok
			for i := range rules {
				if allows(&rules[i], a) {
					return true
				}
			}
		}
		return false
	}
	if check(s.byUser[u.Name]) {
		return true, missing
	}
	for _, g := range u.Groups {
		if check(s.byGroup[g]) {
			return true, missing
		}
	}
	return false, missing
}

// missing returns, for the bindings naming u cluster-wide and in
// namespace, the errors of roles they refer to that do not exist, worded
// as upstream's listers word them.
func (ix *Index) missing(u *authn.User, namespace string) []error {
	_, errs := ix.visit(u, namespace, false)
	return errs
}

// visit returns the rules bound to u cluster-wide and in namespace (when
// rules is set) and the errors of bound roles that do not exist. mu is
// taken here.
func (ix *Index) visit(u *authn.User, namespace string, withRules bool) ([]rbacv1.PolicyRule, []error) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	bs := ix.cluster.candidates(nil, u.Name, u.Groups)
	if namespace != "" {
		bs = ix.namespaces[namespace].candidates(bs, u.Name, u.Groups)
	}
	var rules []rbacv1.PolicyRule
	var errs []error
	for _, b := range bs {
		r, ok := ix.rulesOf(b.ref, b.namespace)
		if !ok {
			errs = append(errs, refError(b.ref))
			continue
		}
		if withRules {
			rules = append(rules, r...)
		}
	}
	return rules, errs
}

// refError is the error of a binding whose role does not exist.
func refError(ref rbacv1.RoleRef) error {
	switch ref.Kind {
	case "ClusterRole":
		return apierrors.NewNotFound(rbacv1.Resource("clusterrole"), ref.Name)
	case "Role":
		return apierrors.NewNotFound(rbacv1.Resource("role"), ref.Name)
	}
	return fmt.Errorf("unsupported role reference kind: %q", ref.Kind)
}

// RulesFor returns the rules bound to u cluster-wide and, when namespace
// is set, in namespace, with an error naming the bound roles that do not
// exist (the rules are then incomplete). system:masters gets no rules of
// its own here, as upstream: the bootstrap cluster-admin binding gives it
// them.
func (z *Authorizer) RulesFor(u *authn.User, namespace string) ([]rbacv1.PolicyRule, error) {
	rules, errs := z.Index.visit(u, namespace, true)
	return rules, utilerrors.NewAggregate(errs)
}

// RoleRules returns the rules of the role ref refers to from a binding in
// namespace ("" for a ClusterRoleBinding); a missing role is upstream's
// 404.
func (z *Authorizer) RoleRules(ref rbacv1.RoleRef, namespace string) ([]rbacv1.PolicyRule, error) {
	z.Index.mu.RLock()
	defer z.Index.mu.RUnlock()
	rules, ok := z.Index.rulesOf(ref, namespace)
	if !ok {
		return nil, refError(ref)
	}
	return rules, nil
}

// Explain is Authorize with, for an allowed request, upstream's reason
// naming the binding that allows it ("RBAC: allowed by RoleBinding
// "b/ns" of ClusterRole "view" to User "bob""), for access reviews; the
// request path does without (the reason costs more than the decision).
// Where several bindings allow, the cluster-wide ones come first, each
// scope's in name order (upstream's order is its cache's).
func (z *Authorizer) Explain(ctx context.Context, a authz.Attributes) (authz.Decision, string, error) {
	d, reason, err := z.Authorize(ctx, a)
	if d != authz.Allow || a.User == nil || slices.Contains(a.User.Groups, authn.Masters) {
		return d, reason, err
	}
	ix := z.Index
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	bs := ix.cluster.candidates(nil, a.User.Name, a.User.Groups)
	if a.Namespace != "" {
		bs = ix.namespaces[a.Namespace].candidates(bs, a.User.Name, a.User.Groups)
	}
	for _, b := range bs {
		rules, _ := ix.rulesOf(b.ref, b.namespace)
		for i := range rules {
			if allows(&rules[i], &a) {
				return d, "RBAC: allowed by " + b.describe(a.User), nil
			}
		}
	}
	return d, reason, err
}

// describe words the binding and the first of its subjects naming u, as
// upstream does.
func (b *binding) describe(u *authn.User) string {
	var subject string
	for _, s := range b.subjects {
		switch {
		case s.Kind == rbacv1.UserKind && s.Name == u.Name, s.Kind == rbacv1.GroupKind && slices.Contains(u.Groups, s.Name):
			subject = fmt.Sprintf("%s %q", s.Kind, s.Name)
		case s.Kind == rbacv1.ServiceAccountKind:
			ns := s.Namespace
			if ns == "" {
				ns = b.namespace
			}
			if ns != "" && u.Name == serviceAccountPrefix+ns+":"+s.Name {
				subject = fmt.Sprintf("%s %q", s.Kind, s.Name+"/"+ns)
			}
		}
		if subject != "" {
			break
		}
	}
	if b.namespace == "" {
		return fmt.Sprintf("ClusterRoleBinding %q of %s %q to %s", b.name, b.ref.Kind, b.ref.Name, subject)
	}
	return fmt.Sprintf("RoleBinding %q of %s %q to %s", b.name+"/"+b.namespace, b.ref.Kind, b.ref.Name, subject)
}
