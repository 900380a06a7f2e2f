package crd

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// SchemaChecker validates what lies inside a CRD's schemas: structural
// rules, defaults, list and map types, CEL rules and their cost (the schema
// package implements it). The crd package checks only that each version
// has a schema; everything inside one is the checker's.
type SchemaChecker interface {
	// CheckSchema validates one openAPIV3Schema. p is the path of the
	// enclosing CustomResourceValidation: spec.validation when every
	// version has the same schema (upstream's internal form), else
	// spec.versions[i].schema; errors inside the schema go under
	// p.Child("openAPIV3Schema").
	CheckSchema(in SchemaInput, p *field.Path) field.ErrorList
	// CheckSelectableFields validates selectableFields against the schema
	// they select from. p is spec.selectableFields or
	// spec.versions[i].selectableFields.
	CheckSelectableFields(in SelectableFieldsInput, p *field.Path) field.ErrorList
}

// SchemaInput is one schema to check and what its rules depend on.
type SchemaInput struct {
	Schema *apiextensionsv1.JSONSchemaProps // never nil
	// Version is the version the schema belongs to, "" when every version
	// shares it.
	Version string
	// StatusEnabled: a status subresource applies, which restricts the
	// root of the schema (type object, a fixed set of fields).
	StatusEnabled bool
	// Spec is the whole spec being written; OldSpec the stored one on
	// update, nil on create (rules ratchet: what was stored may stay).
	Spec, OldSpec *apiextensionsv1.CustomResourceDefinitionSpec
	// AllowNonStructural: the CRD is written through the legacy v1beta1
	// API, keeps unknown fields and uses nothing that needs a structural
	// schema, so the structural rules do not apply (upstream's v1beta1
	// validation); the NonStructuralSchema condition reports violations.
	AllowNonStructural bool
}

// SelectableFieldsInput is one list of selectable fields and its schema.
type SelectableFieldsInput struct {
	Fields        []apiextensionsv1.SelectableField
	Schema        *apiextensionsv1.JSONSchemaProps // never nil
	Version       string
	Spec, OldSpec *apiextensionsv1.CustomResourceDefinitionSpec
}
