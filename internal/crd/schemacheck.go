package crd

import (
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/cel"
	"github.com/crdserver/crdserver/internal/schema/structural"
)

// StructuralChecker is the SchemaChecker of the structural rules: it
// refuses non-structural schemas, unsupported OpenAPI keywords and
// inconsistent list/map extensions, ratcheting on update as upstream
// does, checks that defaults are pruned and valid, and checks selectable
// fields against their schema. It does not compile CEL rules.
type StructuralChecker struct{}

var _ SchemaChecker = StructuralChecker{}

// CheckSchema implements SchemaChecker.
func (StructuralChecker) CheckSchema(in SchemaInput, p *field.Path) field.ErrorList {
	sp := p.Child("openAPIV3Schema")
	opts := structural.OptionsFor(in.OldSpec)
	if in.AllowNonStructural {
		// v1beta1 did not require valid property types either.
		opts.AllowNonStructural, opts.AllowInvalidTypes = true, true
	}
	// Defaults, then CEL rules, are checked only on a structural schema,
	// as upstream; rules only when the defaults are valid, and only where
	// no other error lies at or below them.
	var defaultErrs field.ErrorList
	errs := structural.CheckWith(in.Schema, sp, in.StatusEnabled, opts, func() field.ErrorList {
		defaultErrs = checkDefaults(in.Schema, sp)
		return defaultErrs
	})
	if !structural.IsStructural(in.Schema) || len(defaultErrs) > 0 {
		return errs
	}
	return append(errs, cel.Check(in.Schema, sp, cel.CheckOptions{
		Stored:          cel.StoredExpressions(in.OldSpec),
		UnchangedSchema: schemaUnchanged(in),
		Skip:            cel.UnderErrors(errs),
	})...)
}

// schemaUnchanged reports whether the version's schema (every version's,
// when they share one) is the one already stored: its rules' estimated
// costs are then not held against the per-rule limit, so that a CRD
// accepted under older estimates can still be updated.
func schemaUnchanged(in SchemaInput) bool {
	if in.OldSpec == nil {
		return false
	}
	name := in.Version
	if name == "" && len(in.Spec.Versions) > 0 {
		name = in.Spec.Versions[0].Name
	}
	for _, v := range in.OldSpec.Versions {
		if v.Name == name && v.Schema != nil {
			return apiequality.Semantic.DeepEqual(v.Schema.OpenAPIV3Schema, in.Schema)
		}
	}
	return false
}

// CheckSelectableFields implements SchemaChecker.
func (StructuralChecker) CheckSelectableFields(in SelectableFieldsInput, p *field.Path) field.ErrorList {
	allowTooMany := structural.TooManySelectableFieldsAllowed(in.Fields, in.Version, in.OldSpec)
	return structural.CheckSelectableFields(in.Fields, in.Schema, p, allowTooMany)
}
