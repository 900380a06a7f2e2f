package bootstrap

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/crdserver/crdserver/internal/rbac"
)

func at(name string) string {
	_, file, line, _ := runtime.Caller(1)
	return fmt.Sprintf("%s (%s:%d)", name, file[strings.LastIndex(file, "/")+1:], line)
}

func find[T any](items []T, name func(*T) string, want string) *T {
	for i := range items {
		if name(&items[i]) == want {
			return &items[i]
		}
	}
	return nil
}

func defaultRole(name string) *rbacv1.ClusterRole {
	return find(ClusterRoles(), func(r *rbacv1.ClusterRole) string { return r.Name }, name)
}

func TestReconcileClusterRole(t *testing.T) {
	discovery := defaultRole("system:discovery")
	edited := discovery.DeepCopy()
	edited.Rules = []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/api", "/custom"}}}
	edited.Labels["mine"] = "yes"
	protected := edited.DeepCopy()
	protected.Annotations[AutoUpdate] = "false"
	view := defaultRole("view")
	filled := view.DeepCopy()
	filled.Rules = []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}}
	tests := []struct {
		name     string
		have     *rbacv1.ClusterRole
		want     *rbacv1.ClusterRole
		changed  bool
		check    func(*rbacv1.ClusterRole) bool
		describe string
	}{
		{at("unchanged default"), discovery, discovery, false, nil, ""},
		{at("missing rules are added, the user's kept"), edited, discovery, true, func(r *rbacv1.ClusterRole) bool {
			return len(r.Rules) > 1 && r.Rules[0].NonResourceURLs[1] == "/custom" && r.Labels["mine"] == "yes"
		}, "keeps /custom and the label, adds the rest"},
		{at("autoupdate false is left alone"), protected, discovery, false, nil, ""},
		{at("aggregated rules are the controller's"), filled, view, false, nil, ""},
	}
	for _, tt := range tests {
		out, changed := ReconcileClusterRole(tt.have, tt.want)
		if changed != tt.changed {
			t.Errorf("%s: changed %v, want %v", tt.name, changed, tt.changed)
		}
		if tt.check != nil && !tt.check(out) {
			t.Errorf("%s: %s: got %+v", tt.name, tt.describe, out)
		}
		if changed {
			if again, more := ReconcileClusterRole(out, tt.want); more {
				t.Errorf("%s: reconciled role changes again: %+v", tt.name, again)
			}
		}
	}
}

func TestReconcileClusterRoleBinding(t *testing.T) {
	want := find(ClusterRoleBindings(), func(b *rbacv1.ClusterRoleBinding) string { return b.Name }, "system:public-info-viewer")
	shrunk := want.DeepCopy()
	shrunk.Subjects = append(shrunk.Subjects[:1], rbacv1.Subject{Kind: "User", APIGroup: rbacv1.GroupName, Name: "extra"})
	out, changed, recreate := ReconcileClusterRoleBinding(shrunk, want)
	if !changed || recreate || len(out.Subjects) != 3 || out.Subjects[1].Name != "extra" {
		t.Errorf("missing subject: changed %v recreate %v subjects %v", changed, recreate, out.Subjects)
	}
	moved := want.DeepCopy()
	moved.RoleRef.Name = "other"
	if _, changed, recreate := ReconcileClusterRoleBinding(moved, want); !changed || !recreate {
		t.Errorf("other roleRef: changed %v recreate %v, want a recreate", changed, recreate)
	}
	moved.Annotations = map[string]string{AutoUpdate: "false"}
	if _, changed, _ := ReconcileClusterRoleBinding(moved, want); changed {
		t.Error("a protected binding was changed")
	}
}

// TestDefaults: the defaults every user relies on are there, with their
// metadata, and every list in a rule is sorted as upstream's builder
// keeps it.
func TestDefaults(t *testing.T) {
	for _, name := range []string{"cluster-admin", "admin", "edit", "view", "system:discovery", "system:basic-user", "system:public-info-viewer", "system:monitoring"} {
		r := defaultRole(name)
		if r == nil {
			t.Errorf("no default clusterrole %s", name)
			continue
		}
		if r.Labels[bootstrappingLabel] != "rbac-defaults" || r.Annotations[AutoUpdate] != "true" {
			t.Errorf("%s: metadata %v %v", name, r.Labels, r.Annotations)
		}
	}
	if l := defaultRole("edit").Labels; l[aggregateToAdmin] != "true" {
		t.Errorf("edit does not aggregate to admin: %v", l)
	}
	for _, r := range ClusterRoles() {
		for _, rule := range r.Rules {
			for _, s := range [][]string{rule.Verbs, rule.APIGroups, rule.Resources, rule.NonResourceURLs} {
				if !sortedUnique(s) {
					t.Errorf("%s: %v not sorted", r.Name, s)
				}
			}
		}
	}
	authenticated := map[string]bool{}
	for _, b := range ClusterRoleBindings() {
		for _, s := range b.Subjects {
			if s.Name == "system:authenticated" {
				authenticated[b.RoleRef.Name] = true
			}
		}
	}
	for _, r := range []string{"system:basic-user", "system:discovery", "system:public-info-viewer"} {
		if !authenticated[r] {
			t.Errorf("system:authenticated is not bound to %s", r)
		}
	}
}

func sortedUnique(s []string) bool {
	for i := 1; i < len(s); i++ {
		if s[i-1] >= s[i] {
			return false
		}
	}
	return true
}

func TestReconcileRole(t *testing.T) {
	want := find(Roles(), func(r *rbacv1.Role) string { return r.Namespace + "/" + r.Name }, "kube-system/extension-apiserver-authentication-reader")
	if want == nil {
		t.Fatal("no default role kube-system/extension-apiserver-authentication-reader")
	}
	edited := want.DeepCopy()
	edited.Rules = []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}}}
	edited.Labels = map[string]string{"mine": "yes"}
	edited.Annotations = map[string]string{AutoUpdate: "true", "note": "kept"}
	// The missing rule is added a verb at a time, as upstream's
	// reconciliation adds what its coverage check found missing.
	out, changed := ReconcileRole(edited, want)
	if covered, _ := rbac.Covers(out.Rules, want.Rules); !changed || !covered || out.Rules[0].Resources[0] != "secrets" || out.Labels["mine"] != "yes" ||
		out.Labels[bootstrappingLabel] != "rbac-defaults" || out.Annotations["note"] != "kept" {
		t.Errorf("edited role: changed %v, got %+v", changed, out)
	}
	if _, more := ReconcileRole(out, want); more {
		t.Error("reconciled role changes again")
	}
	protected := edited.DeepCopy()
	protected.Annotations[AutoUpdate] = "false"
	if out, changed := ReconcileRole(protected, want); changed || len(out.Rules) != 1 {
		t.Errorf("autoupdate=false role was changed: %+v", out)
	}
}

func TestReconcileRoleBinding(t *testing.T) {
	want := find(RoleBindings(), func(b *rbacv1.RoleBinding) string { return b.Namespace + "/" + b.Name }, "kube-system/system::leader-locking-kube-scheduler")
	if want == nil {
		t.Fatal("no default rolebinding kube-system/system::leader-locking-kube-scheduler")
	}
	edited := want.DeepCopy()
	edited.Subjects = []rbacv1.Subject{{Kind: "User", APIGroup: rbacv1.GroupName, Name: "someone"}}
	out, changed, recreate := ReconcileRoleBinding(edited, want)
	if !changed || recreate || len(out.Subjects) != 3 || out.Subjects[0].Name != "someone" {
		t.Errorf("edited binding: changed %v recreate %v subjects %v", changed, recreate, out.Subjects)
	}
	protected := edited.DeepCopy()
	protected.Annotations[AutoUpdate] = "false"
	if out, changed, _ := ReconcileRoleBinding(protected, want); changed || len(out.Subjects) != 1 {
		t.Errorf("autoupdate=false binding was changed: %v", out.Subjects)
	}
	moved := want.DeepCopy()
	moved.RoleRef.Name = "other"
	if _, changed, recreate := ReconcileRoleBinding(moved, want); !changed || !recreate {
		t.Errorf("other roleRef: changed %v recreate %v, want a recreate", changed, recreate)
	}
}

// TestAggregation: filling the aggregated roles from the whole default
// policy, as the aggregation loop does until nothing changes, gives view
// the view rules, edit view's and its own, admin all three, and nothing
// from the component and controller roles, which carry no aggregation
// labels.
func TestAggregation(t *testing.T) {
	defaults := ClusterRoles()
	roles := make([]*rbacv1.ClusterRole, len(defaults))
	for i := range defaults {
		roles[i] = &defaults[i]
	}
	for pass := 0; ; pass++ {
		if pass > 5 {
			t.Fatal("aggregation does not settle")
		}
		changed := false
		for _, r := range roles {
			if r.AggregationRule == nil {
				continue
			}
			rules, more, err := rbac.Aggregated(r, roles)
			if err != nil {
				t.Fatalf("%s: %v", r.Name, err)
			}
			if more {
				r.Rules, changed = rules, true
			}
		}
		if !changed {
			break
		}
	}
	admin := defaultRole("system:aggregate-to-admin").Rules
	for _, tc := range []struct {
		role     string
		includes [][]rbacv1.PolicyRule
		excludes [][]rbacv1.PolicyRule
	}{
		{at("view"), [][]rbacv1.PolicyRule{viewRules()}, [][]rbacv1.PolicyRule{editRules(), admin}},
		{at("edit"), [][]rbacv1.PolicyRule{viewRules(), editRules()}, [][]rbacv1.PolicyRule{admin}},
		{at("admin"), [][]rbacv1.PolicyRule{viewRules(), editRules(), admin}, nil},
	} {
		name := strings.Fields(tc.role)[0]
		got := find(roles, func(r **rbacv1.ClusterRole) string { return (*r).Name }, name)
		for _, rules := range tc.includes {
			if ok, missing := rbac.Covers((*got).Rules, rules); !ok {
				t.Errorf("%s lacks %v", tc.role, missing)
			}
		}
		for _, rules := range tc.excludes {
			if ok, _ := rbac.Covers((*got).Rules, rules); ok {
				t.Errorf("%s has rules it should not: %v", tc.role, rules)
			}
		}
		if ok, _ := rbac.Covers((*got).Rules, []rbacv1.PolicyRule{rule(v("get"), g(core), "nodes")}); ok {
			t.Errorf("%s grants a component's rule", tc.role)
		}
	}
}

// TestPolicyShape: every default object carries the default metadata,
// names are unique, every binding's role exists, and every controller
// role is bound to its controller's service account.
func TestPolicyShape(t *testing.T) {
	roles := map[string]bool{}
	for _, r := range ClusterRoles() {
		if roles[r.Name] {
			t.Errorf("clusterrole %s twice", r.Name)
		}
		roles[r.Name] = true
	}
	for _, b := range ClusterRoleBindings() {
		if !roles[b.RoleRef.Name] || b.RoleRef.Kind != "ClusterRole" {
			t.Errorf("clusterrolebinding %s binds %v, not a default clusterrole", b.Name, b.RoleRef)
		}
		if b.Labels[bootstrappingLabel] != "rbac-defaults" || b.Annotations[AutoUpdate] != "true" {
			t.Errorf("clusterrolebinding %s: metadata %v %v", b.Name, b.Labels, b.Annotations)
		}
		if name, ok := strings.CutPrefix(b.Name, controllerPrefix); ok {
			if len(b.Subjects) != 1 || b.Subjects[0] != (rbacv1.Subject{Kind: "ServiceAccount", Namespace: "kube-system", Name: name}) {
				t.Errorf("clusterrolebinding %s: subjects %v", b.Name, b.Subjects)
			}
		}
	}
	nsRoles := map[string]bool{}
	for _, r := range Roles() {
		nsRoles[r.Namespace+"/"+r.Name] = true
		if r.Labels[bootstrappingLabel] != "rbac-defaults" || r.Annotations[AutoUpdate] != "true" || r.Namespace == "" {
			t.Errorf("role %s/%s: metadata %v %v", r.Namespace, r.Name, r.Labels, r.Annotations)
		}
	}
	for _, b := range RoleBindings() {
		if !nsRoles[b.Namespace+"/"+b.RoleRef.Name] || b.RoleRef.Kind != "Role" {
			t.Errorf("rolebinding %s/%s binds %v, not a default role of its namespace", b.Namespace, b.Name, b.RoleRef)
		}
	}
	for _, name := range []string{"system:controller:namespace-controller", "system:node", "system:kube-scheduler", "system:auth-delegator"} {
		if !roles[name] {
			t.Errorf("no default clusterrole %s", name)
		}
	}
}
