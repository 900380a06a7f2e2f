package rbac

import (
	"fmt"
	"strconv"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
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
	seen := map[string]bool{}
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
				if k := ruleKey(rule); !seen[k] {
					seen[k] = true
					rules = append(rules, rule)
				}
			}
		}
	}
	return rules, !sameRules(rules, target.Rules), nil
}

// sameRules reports whether a and b hold the same rules in the same order.
func sameRules(a, b []rbacv1.PolicyRule) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if ruleKey(a[i]) != ruleKey(b[i]) {
			return false
		}
	}
	return true
}

// ruleKey identifies a rule by its contents, as equality.Semantic.DeepEqual
// compares them (a nil list equals an empty one): comparing each new rule
// with every rule kept by DeepEqual made aggregating the bootstrap roles
// take a quarter of a server's start. Each string is length-prefixed, so
// no two different rules share a key.
func ruleKey(r rbacv1.PolicyRule) string {
	var b strings.Builder
	for _, list := range [][]string{r.Verbs, r.APIGroups, r.Resources, r.ResourceNames, r.NonResourceURLs} {
		b.WriteString(strconv.Itoa(len(list)))
		b.WriteByte(':')
		for _, s := range list {
			b.WriteString(strconv.Itoa(len(s)))
			b.WriteByte(':')
			b.WriteString(s)
		}
	}
	return b.String()
}
