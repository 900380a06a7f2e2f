package bootstrap

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
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
