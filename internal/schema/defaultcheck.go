package schema

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateDefault validates value as the default of the schema node props
// when a CRD is written, reporting under p (the default's path) what
// upstream reports there:
//
//   - the apiVersion, kind and metadata of embedded resources first, and
//     when those are wrong nothing else;
//   - else the OpenAPI keywords, with the node as the validator's root: a
//     message names the failing value relative to the default ("" for the
//     default itself, "b", "[1]"), and its field is p joined to that name
//     with a dot, so a list index reads "default.[1]";
//   - never list-type uniqueness, and x-kubernetes-int-or-string nodes
//     have no type, so only their junctors constrain the value.
//
// Pruning is not checked here. The error is only for a props whose own
// default or enum values are not JSON.
func ValidateDefault(props *apiextensionsv1.JSONSchemaProps, p *field.Path, value any) (field.ErrorList, error) {
	n, err := compileNode(props, "", compileOpts{untypedIntOrString: true})
	if err != nil {
		return nil, err
	}
	if errs := validateEmbedded(p, value, n); len(errs) > 0 {
		return errs, nil
	}
	var buf [16]seg
	v := validator{segs: buf[:0]}
	v.validate(value, n, nil, false)
	return reroot(v.errs, p), nil
}
