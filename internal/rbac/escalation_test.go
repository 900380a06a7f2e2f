package rbac

import (
	"context"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/crdserver/crdserver/internal/authn"
	"github.com/crdserver/crdserver/internal/request"
)

func TestCovers(t *testing.T) {
	tests := []struct {
		name           string
		owner, servant []rbacv1.PolicyRule
		missing        string
	}{
		{at("same rule"), []rbacv1.PolicyRule{rule(l("get"), l(""), l("pods"))}, []rbacv1.PolicyRule{rule(l("get"), l(""), l("pods"))}, ""},
		{at("stars cover everything"), []rbacv1.PolicyRule{rule(l("*"), l("*"), l("*"))}, []rbacv1.PolicyRule{rule(l("get", "delete"), l("", "apps"), l("pods", "deployments/scale"))}, ""},
		{at("a verb more"), []rbacv1.PolicyRule{rule(l("get"), l(""), l("pods"))}, []rbacv1.PolicyRule{rule(l("get", "list"), l(""), l("pods"))},
			`{APIGroups:[""], Resources:["pods"], Verbs:["list"]}`},
		{at("*/status covers a status"), []rbacv1.PolicyRule{rule(l("get"), l(""), l("*/status"))}, []rbacv1.PolicyRule{rule(l("get"), l(""), l("pods/status"))}, ""},
		{at("named owner does not cover all names"), []rbacv1.PolicyRule{rule(l("get"), l(""), l("secrets"), "a")}, []rbacv1.PolicyRule{rule(l("get"), l(""), l("secrets"))},
			`{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}`},
		{at("named owner covers its name"), []rbacv1.PolicyRule{rule(l("get"), l(""), l("secrets"), "a", "b")}, []rbacv1.PolicyRule{rule(l("get"), l(""), l("secrets"), "a")}, ""},
		{at("urls with star"), []rbacv1.PolicyRule{{Verbs: l("get"), NonResourceURLs: l("/apis/*")}}, []rbacv1.PolicyRule{{Verbs: l("get"), NonResourceURLs: l("/apis/apps")}}, ""},
		{at("urls not covered"), []rbacv1.PolicyRule{{Verbs: l("get"), NonResourceURLs: l("/apis")}}, []rbacv1.PolicyRule{{Verbs: l("get"), NonResourceURLs: l("/metrics")}},
			`{NonResourceURLs:["/metrics"], Verbs:["get"]}`},
	}
	for _, tt := range tests {
		ok, missing := Covers(tt.owner, tt.servant)
		var got []string
		for _, m := range compact(missing) {
			got = append(got, compactString(m))
		}
		if ok != (tt.missing == "") || strings.Join(got, "\n") != tt.missing {
			t.Errorf("%s: covers=%v missing=%q, want %q", tt.name, ok, got, tt.missing)
		}
	}
}

func TestCompactMergesVerbs(t *testing.T) {
	got := compact([]rbacv1.PolicyRule{rule(l("get"), l(""), l("pods")), rule(l("list"), l(""), l("pods")), rule(l("get"), l("apps"), l("pods"))})
	if len(got) != 2 || compactString(got[0]) != `{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}` {
		t.Errorf("compact: %v", got)
	}
}

// TestGuard: a user may create roles and bindings granting only what
// they hold, unless they may escalate or bind; the refusals read as
// upstream's.
func TestGuard(t *testing.T) {
	ix := testIndex()
	ix.SetClusterRole(clusterRole("escalator", rule(l("escalate"), l(rbacv1.GroupName), l("roles"))))
	ix.SetClusterRole(clusterRole("binder", rule(l("bind"), l(rbacv1.GroupName), l("clusterroles"), "everything")))
	ix.SetRoleBinding(rb("team", "esc", "ClusterRole", "escalator", user("eve")))
	ix.SetRoleBinding(rb("team", "bind", "ClusterRole", "binder", user("bea")))
	z := &Authorizer{Index: ix}
	g := &Guard{Authorizer: z, Rules: z}
	bob := &authn.User{Name: "bob", Groups: l("readers", "system:authenticated")}
	eve := &authn.User{Name: "eve"}
	bea := &authn.User{Name: "bea"}
	admin := &authn.User{Name: "root", Groups: l("system:masters")}
	ctxOf := func(u *authn.User, method, path string) context.Context {
		info, err := request.Parse(method, path, nil)
		if err != nil {
			t.Fatal(err)
		}
		return request.WithInfo(authn.WithUser(context.Background(), u), info)
	}
	roles := "/apis/rbac.authorization.k8s.io/v1/namespaces/team/roles"
	bindings := "/apis/rbac.authorization.k8s.io/v1/namespaces/team/rolebindings"
	everything := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "everything"}
	reader := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cm-reader"}
	tests := []struct {
		name string
		err  error
		want string // "" = allowed
	}{
		{at("rules held"), g.CheckRole(ctxOf(bob, "POST", roles), "team", "r", []rbacv1.PolicyRule{rule(l("get"), l(""), l("configmaps"))}, false), ""},
		{at("rules not held"), g.CheckRole(ctxOf(bob, "POST", roles), "team", "r", []rbacv1.PolicyRule{rule(l("get", "delete"), l(""), l("configmaps"))}, false),
			`roles.rbac.authorization.k8s.io "r" is forbidden: user "bob" (groups=["readers" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["configmaps"], Verbs:["delete"]}`},
		{at("escalate"), g.CheckRole(ctxOf(eve, "POST", roles), "team", "r", []rbacv1.PolicyRule{rule(l("*"), l("*"), l("*"))}, false), ""},
		{at("escalate is per namespace"), g.CheckRole(ctxOf(eve, "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/other/roles"), "other", "r", []rbacv1.PolicyRule{rule(l("get"), l(""), l("pods"))}, false),
			`roles.rbac.authorization.k8s.io "r" is forbidden: user "eve" (groups=[]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["pods"], Verbs:["get"]}`},
		{at("masters"), g.CheckRole(ctxOf(admin, "POST", roles), "team", "r", []rbacv1.PolicyRule{rule(l("*"), l("*"), l("*"))}, false), ""},
		{at("aggregation needs everything"), g.CheckRole(ctxOf(bob, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles"), "", "agg", nil, true),
			`clusterroles.rbac.authorization.k8s.io "agg" is forbidden: must have cluster-admin privileges to use the aggregationRule`},
		{at("bind a role held"), g.CheckBinding(ctxOf(bob, "POST", bindings), "team", "b", reader), ""},
		{at("bind a role not held"), g.CheckBinding(ctxOf(bob, "POST", bindings), "team", "b", everything),
			`rolebindings.rbac.authorization.k8s.io "b" is forbidden: user "bob" (groups=["readers" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:["*"], Resources:["*"], Verbs:["*"]}
{NonResourceURLs:["*"], Verbs:["*"]}`},
		{at("bind verb"), g.CheckBinding(ctxOf(bea, "POST", bindings), "team", "b", everything), ""},
		{at("bind a missing role"), g.CheckBinding(ctxOf(bob, "POST", bindings), "team", "b", rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "nope"}),
			`role.rbac.authorization.k8s.io "nope" not found`},
	}
	for _, tt := range tests {
		got := ""
		if tt.err != nil {
			got = tt.err.Error()
		}
		if got != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, got, tt.want)
		}
		if tt.err != nil && strings.Contains(tt.want, "forbidden") && !apierrors.IsForbidden(tt.err) {
			t.Errorf("%s: not a 403: %v", tt.name, tt.err)
		}
	}
}
