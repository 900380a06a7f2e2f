package schema

import (
	"encoding/json"
	"strings"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateEmbedded checks every x-kubernetes-embedded-resource value below
// (and, when the root schema says so, at) x: apiVersion and kind required
// and well-formed, metadata a valid ObjectMeta, as upstream's objectmeta
// validation does for embedded resources.
func validateEmbedded(p *field.Path, x any, n *node) field.ErrorList {
	if n == nil || !n.subtreeHasEmbedded {
		return nil
	}
	var errs field.ErrorList
	switch x := x.(type) {
	case map[string]any:
		if n.embedded {
			errs = append(errs, validateEmbeddedResource(p, x)...)
		}
		for k, v := range x {
			if c, ok := n.props[k]; ok {
				errs = append(errs, validateEmbedded(p.Child(k), v, c)...)
			} else if n.addl != nil {
				errs = append(errs, validateEmbedded(p.Key(k), v, n.addl)...)
			}
		}
	case []any:
		for i, v := range x {
			errs = append(errs, validateEmbedded(p.Index(i), v, n.items)...)
		}
	}
	return errs
}

// ValidateResourceMeta checks the apiVersion, kind and metadata of x as
// those of an embedded resource are checked (see validateEmbedded); p is
// x's path.
func ValidateResourceMeta(p *field.Path, x map[string]any) field.ErrorList {
	return validateEmbeddedResource(p, x)
}

func validateEmbeddedResource(p *field.Path, x map[string]any) field.ErrorList {
	var errs field.ErrorList
	if _, ok := x["apiVersion"]; !ok {
		errs = append(errs, field.Required(p.Child("apiVersion"), ""))
	}
	if _, ok := x["kind"]; !ok {
		errs = append(errs, field.Required(p.Child("kind"), ""))
	}
	if v, ok := x["apiVersion"]; ok {
		if s, isString := v.(string); !isString {
			errs = append(errs, field.Invalid(p.Child("apiVersion"), v, "must be a string"))
		} else if s == "" {
			errs = append(errs, field.Invalid(p.Child("apiVersion"), s, "must not be empty"))
		} else if _, err := runtimeschema.ParseGroupVersion(s); err != nil {
			errs = append(errs, field.Invalid(p.Child("apiVersion"), s, err.Error()))
		}
	}
	if v, ok := x["kind"]; ok {
		if s, isString := v.(string); !isString {
			errs = append(errs, field.Invalid(p.Child("kind"), v, "must be a string"))
		} else if s == "" {
			errs = append(errs, field.Invalid(p.Child("kind"), s, "must not be empty"))
		} else if msgs := utilvalidation.IsDNS1035Label(strings.ToLower(s)); len(msgs) > 0 {
			errs = append(errs, field.Invalid(p.Child("kind"), s, "may have mixed case, but should otherwise match: "+strings.Join(msgs, ",")))
		}
	}
	if v, ok := x["metadata"]; ok {
		meta, err := objectMeta(v)
		if err != nil {
			errs = append(errs, field.Invalid(p.Child("metadata"), v, err.Error()))
		} else {
			if meta.Name == "" {
				meta.Name = "fakename" // as upstream: a name may be left to the embedding controller
			}
			errs = append(errs, apivalidation.ValidateObjectMeta(meta, meta.Namespace != "", path.ValidatePathSegmentName, p.Child("metadata"))...)
		}
	}
	return errs
}

// objectMeta decodes a metadata value through JSON, as upstream does, so
// that type errors read as upstream's.
func objectMeta(v any) (*metav1.ObjectMeta, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	meta := &metav1.ObjectMeta{}
	if err := utiljson.Unmarshal(b, meta); err != nil {
		return nil, err
	}
	return meta, nil
}
