package crd

import (
	"encoding/json"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/builtin"
)

// Decode converts a CRD object into the typed v1 form with the v1 defaults
// applied (singular, listKind, conversion strategy None, webhook service
// port 443, storedVersions from the storage version), as upstream sees
// every CRD it reads. Unknown fields are dropped, as upstream's typed
// decoding drops them. The error, for fields of the wrong JSON type, reads
// as upstream's decoding error (a 400 BadRequest there).
func Decode(obj map[string]any) (*apiextensionsv1.CustomResourceDefinition, error) {
	return decode(obj)
}

// The object goes through JSON rather than the unstructured converter so
// that decoding is upstream's: case-sensitive field names, the same type
// errors, the same strict-field complaints.
func decode(obj map[string]any) (*apiextensionsv1.CustomResourceDefinition, error) {
	c, _, err := decodeStrict(obj)
	return c, err
}

// typedCRD decodes CRDs strictly, as every built-in with a Go type.
var typedCRD = builtin.Typed[apiextensionsv1.CustomResourceDefinition]{Kind: Kind, Version: Version}

func decodeStrict(obj map[string]any) (*apiextensionsv1.CustomResourceDefinition, []error, error) {
	if isV1beta1(obj) {
		// A v1beta1 object (a Table row of a v1beta1 list): read as v1.
		in, strict, err := typedCRDv1beta1.Decode(obj)
		if err != nil {
			return nil, nil, err
		}
		c, err := v1beta1ToV1(in)
		if err != nil {
			return nil, nil, err
		}
		apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(c)
		return c, strict, nil
	}
	c, strict, err := typedCRD.Decode(obj)
	if err != nil {
		return nil, nil, err
	}
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(c)
	return c, strict, nil
}

// CheckType reports a CRD body whose fields have the wrong JSON types, with
// upstream's message; the handler answers 400 BadRequest with it.
func (Hooks) CheckType(obj map[string]any) error {
	return typedCRD.CheckType(obj)
}

// UnknownFields lists, in upstream's words, the fields of obj the v1 type
// does not have and the fields given twice (`unknown field "spec.foo"`),
// for fieldValidation=Warn and Strict. Nil when obj does not decode.
func (Hooks) UnknownFields(obj map[string]any) []string {
	return typedCRD.UnknownFields(obj)
}

// encodeInto replaces spec and status of obj with c's and drops top-level
// fields the type does not have, as upstream's typed decoding does.
// Metadata stays the caller's map: the handler owns it and has normalized
// it already.
func encodeInto(obj map[string]any, c *apiextensionsv1.CustomResourceDefinition) {
	u := toMap(c)
	for k := range obj {
		switch k {
		case "apiVersion", "kind", "metadata":
		default:
			delete(obj, k)
		}
	}
	obj["spec"] = u["spec"]
	obj["status"] = u["status"]
}

// toMap encodes a typed value as the handler holds objects (integers
// int64). Every typed CRD value encodes; a failure is a bug.
func toMap(v any) map[string]any {
	data, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("crd: encoding %T: %v", v, err))
	}
	var m map[string]any
	if err := utiljson.Unmarshal(data, &m); err != nil {
		panic(fmt.Sprintf("crd: decoding %T: %v", v, err))
	}
	return m
}

// decodeErrors reports an object whose fields have the wrong JSON types
// when the handler validates it without calling CheckType first.
func decodeErrors(err error) field.ErrorList {
	return field.ErrorList{field.Invalid(field.NewPath("spec"), field.OmitValueType{}, err.Error())}
}
