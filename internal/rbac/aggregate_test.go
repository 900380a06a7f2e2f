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
