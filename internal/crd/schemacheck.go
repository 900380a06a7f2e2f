package crd

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/schema/structural"
)

// StructuralChecker is the SchemaChecker of the structural rules: it
// refuses non-structural schemas, unsupported OpenAPI keywords and
// inconsistent list/map extensions, ratcheting on update as upstream
// does, and checks selectable fields against their schema. It does not
// check defaults or compile CEL rules.
type StructuralChecker struct{}

var _ SchemaChecker = StructuralChecker{}

// CheckSchema implements SchemaChecker.
func (StructuralChecker) CheckSchema(in SchemaInput, p *field.Path) field.ErrorList {
	return structural.Check(in.Schema, p.Child("openAPIV3Schema"), in.StatusEnabled, structural.OptionsFor(in.OldSpec))
}

// CheckSelectableFields implements SchemaChecker.
func (StructuralChecker) CheckSelectableFields(in SelectableFieldsInput, p *field.Path) field.ErrorList {
	allowTooMany := structural.TooManySelectableFieldsAllowed(in.Fields, in.Version, in.OldSpec)
	return structural.CheckSelectableFields(in.Fields, in.Schema, p, allowTooMany)
}
