package builtin

import (
	policyv1 "k8s.io/api/policy/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/registry"
)

// PodDisruptionBudgets is the policy/v1 poddisruptionbudgets resource.
// With no pods and no eviction API, budgets are stored objects; their
// status is what a client writes to /status.
func PodDisruptionBudgets() *registry.Definition {
	k := kindDef{
		group: "policy", version: "v1", resource: "poddisruptionbudgets", kind: "PodDisruptionBudget",
		shortNames: []string{"pdb"}, scope: registry.Namespaced, status: true, conditional: true,
		statusMetadata: registry.UserMetadata,
	}
	return k.definition(newKindHooks[policyv1.PodDisruptionBudget](k, pdbRules{}))
}

type pdbRules struct{}

func (pdbRules) defaults(*policyv1.PodDisruptionBudget) {}

func (pdbRules) validate(pdb, _ *policyv1.PodDisruptionBudget) field.ErrorList {
	s, p := &pdb.Spec, field.NewPath("spec")
	var errs field.ErrorList
	if s.MinAvailable != nil && s.MaxUnavailable != nil {
		errs = append(errs, field.Invalid(p, *s, "minAvailable and maxUnavailable cannot be both set"))
	}
	for i, v := range []*intstr.IntOrString{s.MinAvailable, s.MaxUnavailable} {
		name := [...]string{"minAvailable", "maxUnavailable"}[i]
		if v == nil {
			continue
		}
		errs = append(errs, intOrPercent(*v, p.Child(name))...)
		if n, pct := percent(*v); pct && n > 100 {
			errs = append(errs, field.Invalid(p.Child(name), *v, "must not be greater than 100%"))
		}
	}
	errs = append(errs, metav1validation.ValidateLabelSelector(s.Selector, metav1validation.LabelSelectorValidationOptions{}, p.Child("selector"))...)
	if e := s.UnhealthyPodEvictionPolicy; e != nil && *e != policyv1.IfHealthyBudget && *e != policyv1.AlwaysAllow {
		errs = append(errs, field.NotSupported(p.Child("unhealthyPodEvictionPolicy"), *e, []string{string(policyv1.AlwaysAllow), string(policyv1.IfHealthyBudget)}))
	}
	return errs
}

// validateStatus is upstream's policy/v1 status check: valid conditions
// and no negative count.
func (pdbRules) validateStatus(pdb *policyv1.PodDisruptionBudget) field.ErrorList {
	s, p := pdb.Status, field.NewPath("status")
	errs := metav1validation.ValidateConditions(s.Conditions, p.Child("conditions"))
	for _, c := range []struct {
		name string
		v    int32
	}{{"disruptionsAllowed", s.DisruptionsAllowed}, {"currentHealthy", s.CurrentHealthy}, {"desiredHealthy", s.DesiredHealthy}, {"expectedPods", s.ExpectedPods}} {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(c.v), p.Child(c.name))...)
	}
	return errs
}

func (pdbRules) columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Min Available", Type: "string", Description: "The minimum number of pods that must be available."},
		{Name: "Max Unavailable", Type: "string", Description: "The maximum number of pods that may be unavailable."},
		{Name: "Allowed Disruptions", Type: "integer", Description: "Calculated number of pods that may be disrupted at this time."},
		ageColumn,
	}
}

func (pdbRules) cells(pdb *policyv1.PodDisruptionBudget) []any {
	orNA := func(v *intstr.IntOrString) string {
		if v == nil {
			return "N/A"
		}
		return v.String()
	}
	return []any{pdb.Name, orNA(pdb.Spec.MinAvailable), orNA(pdb.Spec.MaxUnavailable), int64(pdb.Status.DisruptionsAllowed), age(&pdb.ObjectMeta)}
}
