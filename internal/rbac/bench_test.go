package rbac_test

import (
	"context"
	"fmt"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdserver/crdserver/internal/authn"
	"github.com/crdserver/crdserver/internal/authz"
	"github.com/crdserver/crdserver/internal/rbac"
	"github.com/crdserver/crdserver/internal/rbac/bootstrap"
)

// benchIndex holds the default policy and 1,000 Roles and 1,000
// RoleBindings: 100 namespaces of 10 each, every binding naming a user of
// its own and a team group, every role 5 rules.
func benchIndex() *rbac.Index {
	ix := rbac.NewIndex()
	for _, r := range bootstrap.ClusterRoles() {
		ix.SetClusterRole(&r)
	}
	for _, b := range bootstrap.ClusterRoleBindings() {
		ix.SetClusterRoleBinding(&b)
	}
	rule := func(verbs, groups, resources []string, names ...string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{Verbs: verbs, APIGroups: groups, Resources: resources, ResourceNames: names}
	}
	l := func(s ...string) []string { return s }
	for n := range 100 {
		ns := fmt.Sprintf("ns-%d", n)
		for i := range 10 {
			name := fmt.Sprintf("role-%d", i)
			ix.SetRole(&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: []rbacv1.PolicyRule{
				rule(l("get", "list", "watch"), l(""), l("configmaps", "secrets")),
				rule(l("create", "update"), l("apps"), l("deployments", "deployments/scale")),
				rule(l("get"), l("example.com"), l("widgets"), "w1", "w2"),
				rule(l("patch"), l("example.com"), l("*/status")),
				rule(l("delete"), l("batch"), l("jobs")),
			}})
			ix.SetRoleBinding(&rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("binding-%d", i)},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
				Subjects: []rbacv1.Subject{
					{Kind: "User", APIGroup: rbacv1.GroupName, Name: fmt.Sprintf("user-%d-%d", n, i)},
					{Kind: "Group", APIGroup: rbacv1.GroupName, Name: fmt.Sprintf("team-%d", i)},
				},
			})
		}
	}
	return ix
}

// BenchmarkAuthorize is one decision with 1,000 Roles and 1,000
// RoleBindings loaded: allowed by a RoleBinding in the request's
// namespace, denied once every binding naming the user was looked at, and
// allowed by a default ClusterRoleBinding (discovery).
func BenchmarkAuthorize(b *testing.B) {
	z := &rbac.Authorizer{Index: benchIndex()}
	u := &authn.User{Name: "user-42-7", Groups: []string{"team-7", "system:authenticated"}}
	resource := func(verb, group, res, sub, name string) authz.Attributes {
		return authz.Attributes{User: u, Verb: verb, APIGroup: group, APIVersion: "v1", Resource: res, Subresource: sub,
			Namespace: "ns-42", Name: name, ResourceRequest: true}
	}
	cases := []struct {
		name  string
		attrs authz.Attributes
		want  authz.Decision
	}{
		{"allowed", resource("patch", "example.com", "widgets", "status", "w9"), authz.Allow},
		{"denied", resource("delete", "", "configmaps", "", "c"), authz.NoOpinion},
		{"discovery", authz.Attributes{User: u, Verb: "get", Path: "/apis/apps/v1"}, authz.Allow},
	}
	ctx := context.Background()
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			if d, _, _ := z.Authorize(ctx, c.attrs); d != c.want {
				b.Fatalf("decision %v, want %v", d, c.want)
			}
			b.ReportAllocs()
			for b.Loop() {
				z.Authorize(ctx, c.attrs)
			}
		})
	}
}
