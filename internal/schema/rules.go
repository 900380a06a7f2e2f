package schema

import (
	"context"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateRules runs the schema's x-kubernetes-validations rules, unless
// prior holds an error upstream treats as blocking: a value of the wrong
// type, missing, unsupported, too long or too many would make the rules
// see values their types do not describe.
func (s *Schema) ValidateRules(ctx context.Context, obj, old map[string]any, prior field.ErrorList) (field.ErrorList, []string) {
	if s.rules == nil {
		return nil, nil
	}
	for _, e := range prior {
		switch e.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return field.ErrorList{field.Invalid(nil, nil, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation")}, nil
		}
	}
	return s.rules.Validate(ctx, obj, old)
}
