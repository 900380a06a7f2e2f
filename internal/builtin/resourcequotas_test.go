package builtin

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/crdserver/crdserver/internal/registry"
)

func TestResourceQuotaValidation(t *testing.T) {
	hard := func(kv ...string) corev1.ResourceList {
		l := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return l
	}
	for _, c := range []struct {
		name string
		spec corev1.ResourceQuotaSpec
		was  *corev1.ResourceQuotaSpec
		want []string // the errors, in order
	}{
		{"object counts and compute", corev1.ResourceQuotaSpec{Hard: hard("configmaps", "3", "count/widgets.example.com", "2", "requests.cpu", "500m", "requests.example.com/dongle", "1")}, nil, nil},
		{"unknown name", corev1.ResourceQuotaSpec{Hard: hard("apples", "1")}, nil, []string{
			`spec.hard[apples]: Invalid value: "apples": must be a standard resource type or fully qualified`,
			`spec.hard[apples]: Invalid value: "apples": must be a standard resource for quota`}},
		{"counts are whole, amounts not negative", corev1.ResourceQuotaSpec{Hard: hard("pods", "1.5", "memory", "-1")}, nil, []string{
			`spec.hard[memory]: Invalid value: "-1": must be greater than or equal to 0`,
			`spec.hard[pods]: Invalid value: "1500m": must be an integer`}},
		{"a pod scope on config maps, reported once", corev1.ResourceQuotaSpec{Hard: hard("configmaps", "1", "secrets", "1"), Scopes: []corev1.ResourceQuotaScope{"BestEffort"}}, nil, []string{
			`spec.scopes: Invalid value: ["BestEffort"]: unsupported scope applied to resource`}},
		{"a claim scope on pods, the selector quoted as upstream's internal type", corev1.ResourceQuotaSpec{Hard: hard("pods", "1"),
			ScopeSelector: &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{{ScopeName: "VolumeAttributesClass", Operator: "In", Values: []string{"fast"}}}}}, nil, []string{
			`spec.scopeSelector.matchExpressions: Invalid value: {"MatchExpressions":[{"ScopeName":"VolumeAttributesClass","Operator":"In","Values":["fast"]}]}: unsupported scope applied to resource`}},
		{"scopes are immutable", corev1.ResourceQuotaSpec{Hard: hard("pods", "1"), Scopes: []corev1.ResourceQuotaScope{"Terminating"}},
			&corev1.ResourceQuotaSpec{Hard: hard("pods", "1")}, []string{`spec.scopes: Invalid value: ["Terminating"]: field is immutable`}},
	} {
		q := &corev1.ResourceQuota{Spec: c.spec}
		var was *corev1.ResourceQuota
		if c.was != nil {
			was = &corev1.ResourceQuota{Spec: *c.was}
		}
		errs := resourceQuotaRules{}.validate(q, was)
		var got []string
		for _, e := range errs {
			got = append(got, e.Error())
		}
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%s: errors\n%s\nwant\n%s", c.name, strings.Join(got, "\n"), strings.Join(c.want, "\n"))
		}
	}
}

// The resources whose delete answers with the object rather than a
// Status: those whose upstream store says ReturnDeletedObject.
func TestReturnsDeletedObject(t *testing.T) {
	for _, tc := range []struct {
		def  *registry.Definition
		want bool
	}{
		{Namespaces(), true},
		{Services(nil, nil), true},
		{ServiceAccounts(), true},
		{PodTemplates(), true},
		{CSINodes(), true},
		{ResourceQuotas(), true},
		{ConfigMaps(), false},
		{Secrets(), false},
		{Deployments(), false},
		{Leases(), false},
	} {
		if _, got := tc.def.Hooks.(registry.ReturnsDeletedObject); got != tc.want {
			t.Errorf("%s: returns the deleted object %v, want %v", tc.def.GroupResource(), got, tc.want)
		}
	}
	if _, ok := ResourceQuotas().Hooks.(registry.NoGeneration); !ok {
		t.Error("resourcequotas lost NoGeneration")
	}
}
