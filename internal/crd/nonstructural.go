package crd

import (
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/schema/structural"
)

// syncNonStructural sets the NonStructuralSchema condition of crd (c is
// its decoded form) as upstream's condition controller does: True with
// reason Violations and the violations as its message when the CRD keeps
// unknown fields (spec.preserveUnknownFields, which only the v1beta1 API
// sets) or a version's schema is not structural (which only the v1beta1
// API accepts), absent otherwise. It reports whether crd changed.
func syncNonStructural(crd map[string]any, c *apiextensionsv1.CustomResourceDefinition, now time.Time) bool {
	reason, message := nonStructural(c)
	if reason == "" {
		return RemoveCondition(crd, ConditionNonStructural)
	}
	return SetCondition(crd, ConditionNonStructural, StatusTrue, reason, message, now)
}

// nonStructural returns the NonStructuralSchema condition's reason and
// message, "" when the CRD is structural and prunes.
func nonStructural(c *apiextensionsv1.CustomResourceDefinition) (reason, message string) {
	var errs field.ErrorList
	if c.Spec.PreserveUnknownFields {
		errs = append(errs, field.Invalid(field.NewPath("spec", "preserveUnknownFields"), true, "must be false"))
	}
	for i, v := range c.Spec.Versions {
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		p := field.NewPath("spec", "versions").Index(i).Child("schema", "openAPIV3Schema")
		verrs, err := structural.Violations(v.Schema.OpenAPIV3Schema, p)
		if err != nil {
			return ReasonStructuralError, fmt.Sprintf("failed to check validation schema for version %s: %v", v.Name, err)
		}
		errs = append(errs, verrs...)
	}
	if len(errs) == 0 {
		return "", ""
	}
	return ReasonViolations, errs.ToAggregate().Error()
}
