package rbac

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdserver/crdserver/internal/authn"
	"github.com/crdserver/crdserver/internal/authz"
)

// at names a table case with the line that declares it.
func at(name string) string {
	_, file, line, _ := runtime.Caller(1)
	return fmt.Sprintf("%s (%s:%d)", name, file[strings.LastIndex(file, "/")+1:], line)
}

func clusterRole(name string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
}

func role(ns, name string, rules ...rbacv1.PolicyRule) *rbacv1.Role {
	return &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: rules}
}

func user(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: "User", APIGroup: rbacv1.GroupName, Name: name}
}
func group(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: "Group", APIGroup: rbacv1.GroupName, Name: name}
}
func sa(ns, name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: "ServiceAccount", Namespace: ns, Name: name}
}

func crb(name, roleName string, subjects ...rbacv1.Subject) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: roleName}, Subjects: subjects}
}

func rb(ns, name, kind, roleName string, subjects ...rbacv1.Subject) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: roleName}, Subjects: subjects}
}

func rule(verbs, groups, resources []string, names ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: verbs, APIGroups: groups, Resources: resources, ResourceNames: names}
}

func l(s ...string) []string { return s }

// testIndex is a small cluster: readers of configmaps everywhere, a
// namespace admin, a service account that may patch widgets' status,
// bindings to roles that do not exist.
func testIndex() *Index {
	ix := NewIndex()
	ix.SetClusterRole(clusterRole("cm-reader", rule(l("get", "list", "watch"), l(""), l("configmaps"))))
	ix.SetClusterRole(clusterRole("everything", rule(l("*"), l("*"), l("*")), rbacv1.PolicyRule{Verbs: l("*"), NonResourceURLs: l("*")}))
	ix.SetClusterRole(clusterRole("health", rbacv1.PolicyRule{Verbs: l("get"), NonResourceURLs: l("/healthz", "/readyz/*")}))
	ix.SetClusterRole(clusterRole("status-patcher", rule(l("patch"), l("example.com"), l("*/status"))))
	ix.SetRole(role("team", "one-secret", rule(l("get"), l(""), l("secrets"), "s1")))
	ix.SetRole(role("team", "widget-writer", rule(l("create", "update", "delete", "deletecollection"), l("example.com"), l("widgets", "widgets/scale"))))
	ix.SetClusterRoleBinding(crb("readers", "cm-reader", group("readers")))
	ix.SetClusterRoleBinding(crb("health", "health", group("system:authenticated")))
	ix.SetClusterRoleBinding(crb("ghost", "missing-cluster-role", user("ghosted")))
	ix.SetClusterRoleBinding(crb("sa-without-namespace", "everything", rbacv1.Subject{Kind: "ServiceAccount", Name: "robot"}))
	ix.SetRoleBinding(rb("team", "admin", "ClusterRole", "everything", user("alice")))
	ix.SetRoleBinding(rb("team", "secret", "Role", "one-secret", user("bob")))
	ix.SetRoleBinding(rb("team", "writers", "Role", "widget-writer", group("writers"), sa("", "robot")))
	ix.SetRoleBinding(rb("team", "patcher", "ClusterRole", "status-patcher", sa("ci", "builder")))
	ix.SetRoleBinding(rb("team", "ghost", "Role", "missing-role", user("ghosted")))
	return ix
}

func res(u *authn.User, verb, group, resource, sub, ns, name string) authz.Attributes {
	return authz.Attributes{User: u, Verb: verb, APIGroup: group, APIVersion: "v1", Resource: resource, Subresource: sub,
		Namespace: ns, Name: name, ResourceRequest: true}
}

func path(u *authn.User, verb, p string) authz.Attributes {
	return authz.Attributes{User: u, Verb: verb, Path: p}
}

func TestAuthorize(t *testing.T) {
	alice := &authn.User{Name: "alice", Groups: l("system:authenticated")}
	bob := &authn.User{Name: "bob", Groups: l("readers", "system:authenticated")}
	writer := &authn.User{Name: "wendy", Groups: l("writers", "system:authenticated")}
	robot := &authn.User{Name: "system:serviceaccount:team:robot", Groups: l("system:serviceaccounts", "system:serviceaccounts:team", "system:authenticated")}
	builder := &authn.User{Name: "system:serviceaccount:ci:builder", Groups: l("system:serviceaccounts", "system:authenticated")}
	ghosted := &authn.User{Name: "ghosted", Groups: l("system:authenticated")}
	admin := &authn.User{Name: "root", Groups: l("system:masters")}
	nobody := &authn.User{Name: "nobody"}
	tests := []struct {
		name   string
		attrs  authz.Attributes
		want   authz.Decision
		reason string
	}{
		{at("masters may do anything"), res(admin, "delete", "", "namespaces", "", "", "kube-system"), authz.Allow, ""},
		{at("masters any path"), path(admin, "get", "/debug/pprof/"), authz.Allow, ""},
		{at("cluster role by group, any namespace"), res(bob, "list", "", "configmaps", "", "elsewhere", ""), authz.Allow, ""},
		{at("cluster role by group, cluster-wide list"), res(bob, "watch", "", "configmaps", "", "", ""), authz.Allow, ""},
		{at("verb not granted"), res(bob, "create", "", "configmaps", "", "team", ""), authz.NoOpinion, ""},
		{at("group not granted"), res(bob, "get", "apps", "configmaps", "", "team", ""), authz.NoOpinion, ""},
		{at("subresource needs its own rule"), res(bob, "get", "", "configmaps", "status", "team", "x"), authz.NoOpinion, ""},
		{at("rolebinding to clusterrole in its namespace"), res(alice, "delete", "apps", "deployments", "", "team", "d"), authz.Allow, ""},
		{at("rolebinding not in another namespace"), res(alice, "get", "", "configmaps", "", "other", "c"), authz.NoOpinion, ""},
		{at("rolebinding not cluster-wide"), res(alice, "list", "", "configmaps", "", "", ""), authz.NoOpinion, ""},
		{at("resourceNames: the named object"), res(bob, "get", "", "secrets", "", "team", "s1"), authz.Allow, ""},
		{at("resourceNames: another object"), res(bob, "get", "", "secrets", "", "team", "s2"), authz.NoOpinion, ""},
		{at("resourceNames: a list has no name"), res(bob, "list", "", "secrets", "", "team", ""), authz.NoOpinion, ""},
		{at("deletecollection"), res(writer, "deletecollection", "example.com", "widgets", "", "team", ""), authz.Allow, ""},
		{at("named subresource"), res(writer, "update", "example.com", "widgets", "scale", "team", "w"), authz.Allow, ""},
		{at("unnamed subresource"), res(writer, "update", "example.com", "widgets", "status", "team", "w"), authz.NoOpinion, ""},
		{at("service account, namespace defaulted to the binding's"), res(robot, "create", "example.com", "widgets", "", "team", ""), authz.Allow, ""},
		{at("service account without namespace in a cluster binding names no one"), res(robot, "get", "", "configmaps", "", "team", ""), authz.NoOpinion, ""},
		{at("*/status"), res(builder, "patch", "example.com", "gadgets", "status", "team", "g"), authz.Allow, ""},
		{at("*/status is not the main resource"), res(builder, "patch", "example.com", "gadgets", "", "team", "g"), authz.NoOpinion, ""},
		{at("non-resource exact"), path(alice, "get", "/healthz"), authz.Allow, ""},
		{at("non-resource star suffix"), path(alice, "get", "/readyz/etcd"), authz.Allow, ""},
		{at("non-resource star suffix is not the parent"), path(alice, "get", "/readyz"), authz.NoOpinion, ""},
		{at("non-resource verb"), path(alice, "post", "/healthz"), authz.NoOpinion, ""},
		{at("unknown user"), res(nobody, "get", "", "configmaps", "", "team", "c"), authz.NoOpinion, ""},
		{at("missing roles are the reason"), res(ghosted, "get", "", "configmaps", "", "team", "c"), authz.NoOpinion,
			`RBAC: [clusterrole.rbac.authorization.k8s.io "missing-cluster-role" not found, role.rbac.authorization.k8s.io "missing-role" not found]`},
		{at("one missing role"), res(ghosted, "get", "", "configmaps", "", "", "c"), authz.NoOpinion,
			`RBAC: clusterrole.rbac.authorization.k8s.io "missing-cluster-role" not found`},
		{at("no user"), res(nil, "get", "", "configmaps", "", "team", "c"), authz.NoOpinion, ""},
	}
	z := &Authorizer{Index: testIndex()}
	for _, tt := range tests {
		d, reason, err := z.Authorize(context.Background(), tt.attrs)
		if d != tt.want || reason != tt.reason || err != nil {
			t.Errorf("%s: got %v %q %v, want %v %q", tt.name, d, reason, err, tt.want, tt.reason)
		}
	}
}

// TestIndexUpdates: replacing and deleting objects changes decisions at
// once, and a binding changed to drop a subject no longer grants it.
func TestIndexUpdates(t *testing.T) {
	ix := testIndex()
	z := &Authorizer{Index: ix}
	bob := &authn.User{Name: "bob", Groups: l("readers")}
	list := res(bob, "list", "", "configmaps", "", "team", "")
	decide := func() authz.Decision { d, _, _ := z.Authorize(context.Background(), list); return d }
	steps := []struct {
		name   string
		change func()
		want   authz.Decision
	}{
		{at("as loaded"), func() {}, authz.Allow},
		{at("role loses the verb"), func() { ix.SetClusterRole(clusterRole("cm-reader", rule(l("get"), l(""), l("configmaps")))) }, authz.NoOpinion},
		{at("role gets it back"), func() { ix.SetClusterRole(clusterRole("cm-reader", rule(l("list"), l(""), l("configmaps")))) }, authz.Allow},
		{at("binding drops the group"), func() { ix.SetClusterRoleBinding(crb("readers", "cm-reader", group("others"))) }, authz.NoOpinion},
		{at("binding names the user"), func() { ix.SetClusterRoleBinding(crb("readers", "cm-reader", user("bob"))) }, authz.Allow},
		{at("binding deleted"), func() { ix.DeleteClusterRoleBinding("readers") }, authz.NoOpinion},
		{at("role binding in the namespace"), func() { ix.SetRoleBinding(rb("team", "r", "ClusterRole", "cm-reader", group("readers"))) }, authz.Allow},
		{at("its role deleted"), func() { ix.DeleteClusterRole("cm-reader") }, authz.NoOpinion},
		{at("a namespaced role of that name does not count"), func() { ix.SetRole(role("team", "cm-reader", rule(l("*"), l("*"), l("*")))) }, authz.NoOpinion},
		{at("role binding deleted"), func() {
			ix.SetClusterRole(clusterRole("cm-reader", rule(l("list"), l(""), l("configmaps"))))
			ix.DeleteRoleBinding("team", "r")
		}, authz.NoOpinion},
	}
	for _, s := range steps {
		s.change()
		if got := decide(); got != s.want {
			t.Errorf("%s: %v, want %v", s.name, got, s.want)
		}
	}
}

func TestRulesFor(t *testing.T) {
	z := &Authorizer{Index: testIndex()}
	rules, err := z.RulesFor(&authn.User{Name: "bob", Groups: l("readers")}, "team")
	if err != nil {
		t.Fatal(err)
	}
	want := []rbacv1.PolicyRule{
		rule(l("get", "list", "watch"), l(""), l("configmaps")),
		rule(l("get"), l(""), l("secrets"), "s1"),
	}
	if fmt.Sprint(rules) != fmt.Sprint(want) {
		t.Errorf("rules:\n%v\nwant\n%v", rules, want)
	}
	if _, err := z.RulesFor(&authn.User{Name: "ghosted"}, "team"); err == nil || !strings.Contains(err.Error(), `"missing-role" not found`) {
		t.Errorf("ghosted: err %v, want the missing role", err)
	}
}

func TestExplain(t *testing.T) {
	z := &Authorizer{Index: testIndex()}
	robot := &authn.User{Name: "system:serviceaccount:team:robot", Groups: l("system:authenticated")}
	bob := &authn.User{Name: "bob", Groups: l("readers")}
	tests := []struct {
		name  string
		attrs authz.Attributes
		want  string
	}{
		{at("role binding, service account"), res(robot, "create", "example.com", "widgets", "", "team", ""),
			`RBAC: allowed by RoleBinding "writers/team" of Role "widget-writer" to ServiceAccount "robot/team"`},
		{at("cluster role binding, group"), res(bob, "get", "", "configmaps", "", "team", "c"),
			`RBAC: allowed by ClusterRoleBinding "readers" of ClusterRole "cm-reader" to Group "readers"`},
		{at("denied: no reason"), res(bob, "delete", "", "configmaps", "", "team", "c"), ``},
	}
	for _, tt := range tests {
		if _, reason, _ := z.Explain(context.Background(), tt.attrs); reason != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, reason, tt.want)
		}
	}
}
