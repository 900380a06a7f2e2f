package rbac

import (
	"fmt"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAggregated(t *testing.T) {
	labeled := func(name string, labels map[string]string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
		r := clusterRole(name, rules...)
		r.Labels = labels
		return r
	}
	pods := rule(l("get"), l(""), l("pods"))
	secrets := rule(l("get"), l(""), l("secrets"))
	target := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "view"}, AggregationRule: &rbacv1.AggregationRule{
		ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"agg": "view"}}, {MatchLabels: map[string]string{"agg": "extra"}}},
	}}
	roles := []*rbacv1.ClusterRole{
		labeled("a", map[string]string{"agg": "view"}, pods),
		labeled("b", map[string]string{"agg": "view"}, pods, secrets), // pods once
		labeled("c", map[string]string{"agg": "other"}, rule(l("*"), l("*"), l("*"))),
		labeled("d", map[string]string{"agg": "extra"}, secrets, rule(l("list"), l(""), l("pods"))),
	}
	rules, changed, err := Aggregated(target, roles)
	if err != nil || !changed {
		t.Fatalf("changed %v err %v", changed, err)
	}
	want := []rbacv1.PolicyRule{pods, secrets, rule(l("list"), l(""), l("pods"))}
	if fmt.Sprint(rules) != fmt.Sprint(want) {
		t.Errorf("rules %v, want %v", rules, want)
	}
	target.Rules = rules
	if _, changed, _ := Aggregated(target, roles); changed {
		t.Error("filled role reported changed")
	}
}

// Rules are the same when their lists are, a nil list being an empty one;
// lists that only concatenate alike are different rules.
func TestAggregatedRuleIdentity(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b rbacv1.PolicyRule
		same bool
	}{
		{"nil and empty names", rule(l("get"), l(""), l("pods")), rbacv1.PolicyRule{Verbs: l("get"), APIGroups: l(""), Resources: l("pods"), ResourceNames: []string{}}, true},
		{"split verb", rule(l("getlist"), l(""), l("pods")), rule(l("get", "list"), l(""), l("pods")), false},
		{"verb moved to group", rule(l("get"), l("x"), l("pods")), rule(l("get", "x"), nil, l("pods")), false},
		{"resource name or URL", rbacv1.PolicyRule{Verbs: l("get"), ResourceNames: l("/a")}, rbacv1.PolicyRule{Verbs: l("get"), NonResourceURLs: l("/a")}, false},
	} {
		target := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "t"}, AggregationRule: &rbacv1.AggregationRule{
			ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"agg": "t"}}},
		}}
		src := clusterRole("src", tc.a, tc.b)
		src.Labels = map[string]string{"agg": "t"}
		rules, _, err := Aggregated(target, []*rbacv1.ClusterRole{src})
		if err != nil {
			t.Fatal(err)
		}
		if got := len(rules) == 1; got != tc.same {
			t.Errorf("%s: aggregated to %d rules %v, want same=%v", tc.name, len(rules), rules, tc.same)
		}
	}
}
