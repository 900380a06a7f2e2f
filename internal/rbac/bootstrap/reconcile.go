package bootstrap

import (
	"maps"
	"reflect"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdserver/crdserver/internal/rbac"
)

// Protected reports whether an object asks reconciling to leave it alone.
func Protected(m *metav1.ObjectMeta) bool { return m.Annotations[AutoUpdate] == "false" }

// ReconcileClusterRole returns existing with what expected has and it
// lacks: labels and annotations (existing values win), the rules it does
// not cover, and missing aggregation selectors; an aggregation rule
// expected lacks is removed. changed is false when existing needs no
// write, or is Protected.
func ReconcileClusterRole(existing, expected *rbacv1.ClusterRole) (out *rbacv1.ClusterRole, changed bool) {
	if Protected(&existing.ObjectMeta) {
		return existing, false
	}
	out = existing.DeepCopy()
	changed = reconcileMeta(&out.ObjectMeta, &expected.ObjectMeta)
	if _, missing := rbac.Covers(existing.Rules, expected.Rules); len(missing) > 0 {
		out.Rules = append(out.Rules, missing...)
		changed = true
	}
	switch {
	case expected.AggregationRule == nil && existing.AggregationRule != nil:
		out.AggregationRule = nil
		changed = true
	case expected.AggregationRule != nil:
		var missing []metav1.LabelSelector
		for _, want := range expected.AggregationRule.ClusterRoleSelectors {
			if existing.AggregationRule == nil || !containsSelector(existing.AggregationRule.ClusterRoleSelectors, want) {
				missing = append(missing, want)
			}
		}
		if len(missing) > 0 {
			if out.AggregationRule == nil {
				out.AggregationRule = &rbacv1.AggregationRule{}
			}
			out.AggregationRule.ClusterRoleSelectors = append(out.AggregationRule.ClusterRoleSelectors, missing...)
			changed = true
		}
	}
	return out, changed
}

// ReconcileRole is ReconcileClusterRole for a namespace's Role, which
// aggregates nothing.
func ReconcileRole(existing, expected *rbacv1.Role) (out *rbacv1.Role, changed bool) {
	asCluster := func(r *rbacv1.Role) *rbacv1.ClusterRole {
		return &rbacv1.ClusterRole{TypeMeta: r.TypeMeta, ObjectMeta: r.ObjectMeta, Rules: r.Rules}
	}
	c, changed := ReconcileClusterRole(asCluster(existing), asCluster(expected))
	return &rbacv1.Role{TypeMeta: c.TypeMeta, ObjectMeta: c.ObjectMeta, Rules: c.Rules}, changed
}

// reconcileMeta adds to meta the labels and annotations expected has and
// it lacks (its own values win), and reports whether it changed.
func reconcileMeta(meta, expected *metav1.ObjectMeta) bool {
	annotations, labels := merge(expected.Annotations, meta.Annotations), merge(expected.Labels, meta.Labels)
	changed := !reflect.DeepEqual(annotations, meta.Annotations) || !reflect.DeepEqual(labels, meta.Labels)
	meta.Annotations, meta.Labels = annotations, labels
	return changed
}

func containsSelector(sels []metav1.LabelSelector, s metav1.LabelSelector) bool {
	for _, x := range sels {
		if equality.Semantic.DeepEqual(x, s) {
			return true
		}
	}
	return false
}

// ReconcileClusterRoleBinding returns existing with expected's missing
// labels, annotations and subjects. recreate is set when the roleRef
// differs (it is immutable): the binding must be deleted and expected
// created. changed is false when nothing needs writing, or existing is
// Protected.
func ReconcileClusterRoleBinding(existing, expected *rbacv1.ClusterRoleBinding) (out *rbacv1.ClusterRoleBinding, changed, recreate bool) {
	if Protected(&existing.ObjectMeta) {
		return existing, false, false
	}
	if existing.RoleRef != expected.RoleRef {
		return expected, true, true
	}
	out = existing.DeepCopy()
	changed = reconcileMeta(&out.ObjectMeta, &expected.ObjectMeta)
	for _, s := range expected.Subjects {
		if !containsSubject(existing.Subjects, s) {
			out.Subjects = append(out.Subjects, s)
			changed = true
		}
	}
	return out, changed, false
}

// ReconcileRoleBinding is ReconcileClusterRoleBinding for a namespace's
// RoleBinding.
func ReconcileRoleBinding(existing, expected *rbacv1.RoleBinding) (out *rbacv1.RoleBinding, changed, recreate bool) {
	asCluster := func(b *rbacv1.RoleBinding) *rbacv1.ClusterRoleBinding {
		return &rbacv1.ClusterRoleBinding{TypeMeta: b.TypeMeta, ObjectMeta: b.ObjectMeta, Subjects: b.Subjects, RoleRef: b.RoleRef}
	}
	c, changed, recreate := ReconcileClusterRoleBinding(asCluster(existing), asCluster(expected))
	return &rbacv1.RoleBinding{TypeMeta: c.TypeMeta, ObjectMeta: c.ObjectMeta, Subjects: c.Subjects, RoleRef: c.RoleRef}, changed, recreate
}

// containsSubject compares subjects as upstream does: a ServiceAccount's
// apiGroup does not matter.
func containsSubject(subjects []rbacv1.Subject, s rbacv1.Subject) bool {
	for _, x := range subjects {
		if x.Kind == s.Kind && x.Name == s.Name && x.Namespace == s.Namespace && (x.APIGroup == s.APIGroup || s.Kind == rbacv1.ServiceAccountKind) {
			return true
		}
	}
	return false
}

// merge returns the keys of both, b's value winning; nil when both are
// empty.
func merge(a, b map[string]string) map[string]string {
	if a == nil && b == nil {
		return nil
	}
	out := maps.Clone(a)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, b)
	return out
}
