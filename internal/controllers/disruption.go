package controllers

import (
	"reflect"

	policyv1 "k8s.io/api/policy/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// DisruptionStatus is the status upstream's disruption controller gives a
// PodDisruptionBudget that selects no pods — every budget here, where pods
// are not served — and whether it differs from pdb's, which then needs
// writing. Its counts are what a budget without pods has: no pods
// expected or healthy, and so no disruption allowed; desiredHealthy is an
// integer minAvailable as it is, a percentage of no pods 0. Disrupted pods
// are dropped (none of them exists). The DisruptionAllowed condition says
// InsufficientPods at the budget's generation; now is its transition
// time when it changes.
func DisruptionStatus(pdb *policyv1.PodDisruptionBudget, now metav1.Time) (policyv1.PodDisruptionBudgetStatus, bool) {
	desired, err := desiredHealthy(pdb)
	if err != nil {
		// As upstream's fail-safe: nothing allowed, and why.
		st := *pdb.Status.DeepCopy()
		st.DisruptionsAllowed = 0
		if st.Conditions == nil {
			st.Conditions = []metav1.Condition{}
		}
		setCondition(&st.Conditions, metav1.Condition{
			Type:               policyv1.DisruptionAllowedCondition,
			Status:             metav1.ConditionFalse,
			Reason:             policyv1.SyncFailedReason,
			Message:            err.Error(),
			ObservedGeneration: st.ObservedGeneration,
		}, now)
		return st, !reflect.DeepEqual(st, pdb.Status)
	}
	old := pdb.Status
	if old.CurrentHealthy == 0 && old.DesiredHealthy == desired && old.ExpectedPods == 0 && old.DisruptionsAllowed == 0 &&
		len(old.DisruptedPods) == 0 && old.ObservedGeneration == pdb.Generation && insufficientPods(old.Conditions) {
		return old, false
	}
	st := policyv1.PodDisruptionBudgetStatus{
		DesiredHealthy:     desired,
		ObservedGeneration: pdb.Generation,
		Conditions:         append([]metav1.Condition{}, old.Conditions...),
	}
	setCondition(&st.Conditions, metav1.Condition{
		Type:               policyv1.DisruptionAllowedCondition,
		Status:             metav1.ConditionFalse,
		Reason:             policyv1.InsufficientPodsReason,
		ObservedGeneration: st.ObservedGeneration,
	}, now)
	return st, true
}

// desiredHealthy is how many healthy pods pdb asks for when it expects
// none: maxUnavailable leaves 0; minAvailable is that many pods when an
// integer, that share of none when a percentage.
func desiredHealthy(pdb *policyv1.PodDisruptionBudget) (int32, error) {
	if _, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector); err != nil {
		return 0, err
	}
	switch minAvailable := pdb.Spec.MinAvailable; {
	case pdb.Spec.MaxUnavailable != nil:
		_, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MaxUnavailable, 0, true)
		return 0, err
	case minAvailable == nil:
		return 0, nil
	case minAvailable.Type == intstr.Int:
		return minAvailable.IntVal, nil
	default:
		n, err := intstr.GetScaledValueFromIntOrPercent(minAvailable, 0, true)
		return int32(n), err
	}
}

// insufficientPods reports whether conds' DisruptionAllowed condition is
// the one a budget allowing nothing has.
func insufficientPods(conds []metav1.Condition) bool {
	c := apimeta.FindStatusCondition(conds, policyv1.DisruptionAllowedCondition)
	return c != nil && c.Status == metav1.ConditionFalse && c.Reason == policyv1.InsufficientPodsReason
}

// setCondition is apimeta.SetStatusCondition with now as the transition
// time of a condition that is new or changes status.
func setCondition(conds *[]metav1.Condition, c metav1.Condition, now metav1.Time) {
	if prev := apimeta.FindStatusCondition(*conds, c.Type); prev == nil || prev.Status != c.Status {
		c.LastTransitionTime = now
	}
	apimeta.SetStatusCondition(conds, c)
}
