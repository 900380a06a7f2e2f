package rbac

import (
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Aggregated returns the rules of target, a ClusterRole with an
// aggregationRule, as upstream's aggregation controller fills them: for
// each selector in order, the rules of the other ClusterRoles it selects,
// by name, each rule once. roles must be sorted by name (ClusterRoles
// returns them so). changed reports whether they differ from target's.
func Aggregated(target *rbacv1.ClusterRole, roles []*rbacv1.ClusterRole) (rules []rbacv1.PolicyRule, changed bool, err error) {
	rules = []rbacv1.PolicyRule{}
	for i := range target.AggregationRule.ClusterRoleSelectors {
		sel, err := metav1.LabelSelectorAsSelector(&target.AggregationRule.ClusterRoleSelectors[i])
		if err != nil {
			return nil, false, fmt.Errorf("clusterrole %s: selector %d: %w", target.Name, i, err)
		}
		for _, r := range roles {
			if r.Name == target.Name || !sel.Matches(labels.Set(r.Labels)) {
				continue
			}
			for _, rule := range r.Rules {
				if !containsRule(rules, rule) {
					rules = append(rules, rule)
				}
			}
		}
	}
	return rules, !equality.Semantic.DeepEqual(rules, target.Rules), nil
}

func containsRule(rules []rbacv1.PolicyRule, r rbacv1.PolicyRule) bool {
	for _, x := range rules {
		if equality.Semantic.DeepEqual(x, r) {
			return true
		}
	}
	return false
}
