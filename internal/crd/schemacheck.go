package crd

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

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
	errs := structural.Check(in.Schema, sp, in.StatusEnabled, opts)
	if len(errs) == 0 && structural.IsStructural(in.Schema) {
		// Defaults are checked only on a structural schema, as upstream.
		errs = checkDefaults(in.Schema, sp)
	}
	return errs
}

// CheckSelectableFields implements SchemaChecker.
func (StructuralChecker) CheckSelectableFields(in SelectableFieldsInput, p *field.Path) field.ErrorList {
	allowTooMany := structural.TooManySelectableFieldsAllowed(in.Fields, in.Version, in.OldSpec)
	return structural.CheckSelectableFields(in.Fields, in.Schema, p, allowTooMany)
}
