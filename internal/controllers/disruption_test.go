package controllers

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestDisruptionStatus(t *testing.T) {
	then := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	now := metav1.NewTime(then.Add(time.Hour))
	insufficient := func(gen int64, at metav1.Time) []metav1.Condition {
		return []metav1.Condition{{Type: "DisruptionAllowed", Status: "False", Reason: "InsufficientPods", ObservedGeneration: gen, LastTransitionTime: at}}
	}
	budget := func(gen int64, spec policyv1.PodDisruptionBudgetSpec, st policyv1.PodDisruptionBudgetStatus) *policyv1.PodDisruptionBudget {
		if spec.Selector == nil {
			spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}}
		}
		return &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "p", Generation: gen}, Spec: spec, Status: st}
	}
	minAvailable := func(v intstr.IntOrString) policyv1.PodDisruptionBudgetSpec {
		return policyv1.PodDisruptionBudgetSpec{MinAvailable: &v}
	}
	two, onePercent := intstr.FromInt32(2), intstr.FromString("1%")
	for _, tc := range []struct {
		name    string
		pdb     *policyv1.PodDisruptionBudget
		want    policyv1.PodDisruptionBudgetStatus
		changed bool
	}{{
		name:    "new, integer minAvailable",
		pdb:     budget(1, minAvailable(two), policyv1.PodDisruptionBudgetStatus{}),
		want:    policyv1.PodDisruptionBudgetStatus{DesiredHealthy: 2, ObservedGeneration: 1, Conditions: insufficient(1, now)},
		changed: true,
	}, {
		name: "up to date",
		pdb:  budget(1, minAvailable(two), policyv1.PodDisruptionBudgetStatus{DesiredHealthy: 2, ObservedGeneration: 1, Conditions: insufficient(1, then)}),
		want: policyv1.PodDisruptionBudgetStatus{DesiredHealthy: 2, ObservedGeneration: 1, Conditions: insufficient(1, then)},
	}, {
		name:    "percentage of no pods",
		pdb:     budget(1, minAvailable(onePercent), policyv1.PodDisruptionBudgetStatus{}),
		want:    policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, Conditions: insufficient(1, now)},
		changed: true,
	}, {
		name:    "maxUnavailable",
		pdb:     budget(1, policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &two}, policyv1.PodDisruptionBudgetStatus{}),
		want:    policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, Conditions: insufficient(1, now)},
		changed: true,
	}, {
		name:    "neither",
		pdb:     budget(1, policyv1.PodDisruptionBudgetSpec{}, policyv1.PodDisruptionBudgetStatus{}),
		want:    policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, Conditions: insufficient(1, now)},
		changed: true,
	}, {
		name:    "a new generation keeps the condition's transition time",
		pdb:     budget(2, minAvailable(onePercent), policyv1.PodDisruptionBudgetStatus{DesiredHealthy: 2, ObservedGeneration: 1, Conditions: insufficient(1, then)}),
		want:    policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 2, Conditions: insufficient(2, then)},
		changed: true,
	}, {
		name: "written by a client: counts, disrupted pods and condition put back",
		pdb: budget(1, minAvailable(two), policyv1.PodDisruptionBudgetStatus{
			DesiredHealthy: 2, CurrentHealthy: 3, ExpectedPods: 3, DisruptionsAllowed: 1, ObservedGeneration: 1,
			DisruptedPods: map[string]metav1.Time{"gone": then},
			Conditions: []metav1.Condition{
				{Type: "Other", Status: "True", Reason: "R", LastTransitionTime: then},
				{Type: "DisruptionAllowed", Status: "True", Reason: "SufficientPods", ObservedGeneration: 1, LastTransitionTime: then},
			},
		}),
		want: policyv1.PodDisruptionBudgetStatus{DesiredHealthy: 2, ObservedGeneration: 1, Conditions: []metav1.Condition{
			{Type: "Other", Status: "True", Reason: "R", LastTransitionTime: then},
			insufficient(1, now)[0],
		}},
		changed: true,
	}, {
		name: "a selector that does not parse fails safe",
		pdb: budget(1, policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}}},
			policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 1}),
		want: policyv1.PodDisruptionBudgetStatus{Conditions: []metav1.Condition{{
			Type: "DisruptionAllowed", Status: "False", Reason: "SyncFailed", Message: `"Near" is not a valid label selector operator`, LastTransitionTime: now,
		}}},
		changed: true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, changed := DisruptionStatus(tc.pdb, now)
			if changed != tc.changed {
				t.Errorf("changed %v, want %v", changed, tc.changed)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("status (-want +got):\n%s", d)
			}
		})
	}
}
