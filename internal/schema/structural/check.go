// Package structural checks a CustomResourceDefinition's openAPIV3Schema
// before it is stored: the structural-schema rules (a type on every
// specified node, nothing inside allOf/anyOf/oneOf/not that is not also
// specified outside, metadata restricted to name and generateName), the
// OpenAPI keywords CRDs do not support, the list/map type extensions, and
// the restrictions at the root when the status subresource is on.
//
// Errors carry kube-apiserver's field paths and messages, so clients see
// the same 422 causes as against upstream. The checks work on the v1 types
// directly; upstream first converts to its internal form and then to a
// "structural" model, and a few of its quirks follow from that conversion
// (they are kept and noted where they matter).
//
// Also here, because they resolve paths against the schema: the static
// shape of x-kubernetes-validations rules and selectableFields.
//
// Not checked here: that defaults are pruned and valid against the schema,
// and CEL rule compilation and cost; those belong to the validation and
// CEL packages.
package structural

import (
	"errors"
	"sort"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Options relax rules that a stored CRD already breaks, so that an update
// never fails a rule the stored object was accepted without (upstream's
// ratcheting). The zero value applies every rule, as on create.
type Options struct {
	// AllowNonStructural skips the structural rules: the stored spec has a
	// non-structural schema.
	AllowNonStructural bool
	// AllowInvalidTypes accepts types outside OpenAPI v3's six.
	AllowInvalidTypes bool
	// AllowNonAtomicSetItems accepts x-kubernetes-list-type=set lists whose
	// items are granular objects or non-atomic lists.
	AllowNonAtomicSetItems bool
	// AllowInvalidMapListKeys skips the nullable/default rules for set and
	// map list items and keys.
	AllowInvalidMapListKeys bool
}

// OptionsFor returns the options an update from old must use; old nil (a
// create) gives the zero Options.
func OptionsFor(old *apiextensionsv1.CustomResourceDefinitionSpec) Options {
	var o Options
	if old == nil {
		return o
	}
	for i := range old.Versions {
		v := old.Versions[i].Schema
		if v == nil || v.OpenAPIV3Schema == nil {
			continue
		}
		s := v.OpenAPIV3Schema
		if !IsStructural(s) {
			o.AllowNonStructural = true
		}
		visit(s, 0, func(s *apiextensionsv1.JSONSchemaProps) {
			if s.Type != "" && !openAPIV3Types[s.Type] {
				o.AllowInvalidTypes = true
			}
			if hasNonAtomicSetItems(s) {
				o.AllowNonAtomicSetItems = true
			}
			if len(mapListKeysMapSet(s, field.NewPath(""))) > 0 {
				o.AllowInvalidMapListKeys = true
			}
		})
	}
	return o
}

// IsStructural reports whether s passes the structural rules (and uses no
// keyword that prevents checking them).
func IsStructural(s *apiextensionsv1.JSONSchemaProps) bool {
	if s == nil {
		return true
	}
	if unsupported(s, 0) != "" {
		return false
	}
	return len(structuralErrors(s, nil)) == 0
}

// Check validates the openAPIV3Schema s found at p (for example
// spec.validation.openAPIV3Schema) of a v1 CRD. statusEnabled tells
// whether a status subresource applies to the schema's version, which
// restricts the root. The errors come in upstream's order: the root
// restrictions, the structural violations sorted by their text, then the
// OpenAPI keyword errors in schema order.
func Check(s *apiextensionsv1.JSONSchemaProps, p *field.Path, statusEnabled bool, opts Options) field.ErrorList {
	return CheckWith(s, p, statusEnabled, opts, nil)
}

// CheckWith is Check that also runs whenStructural, when the schema
// passes the structural rules, and puts its errors where upstream puts
// those of the checks it makes only then (defaults): after the root
// restrictions, before the OpenAPI keyword errors.
func CheckWith(s *apiextensionsv1.JSONSchemaProps, p *field.Path, statusEnabled bool, opts Options, whenStructural func() field.ErrorList) field.ErrorList {
	if s == nil {
		return nil
	}
	var errs field.ErrorList
	if statusEnabled {
		errs = append(errs, rootWithStatus(s, p)...)
	}
	if s.Nullable {
		errs = append(errs, field.Forbidden(p.Child("nullable"), "nullable cannot be true at the root"))
	}

	// Upstream cannot build its structural model from a schema using an
	// unsupported keyword; it then skips the structural rules and reports
	// the conversion failure only when nothing else is wrong, as the
	// keyword errors below say the same thing better.
	initErr := unsupported(s, 0)
	if initErr == "" && !opts.AllowNonStructural {
		serrs := structuralErrors(s, p)
		errs = append(errs, serrs...)
		if len(serrs) == 0 && whenStructural != nil {
			errs = append(errs, whenStructural()...)
		}
	}

	k := keywords{opts: opts, requireValidType: !opts.AllowInvalidTypes}
	k.check(s, p, keywordCtx{allowDefaults: true}, true, 0)
	errs = append(errs, k.errs...)

	if len(errs) == 0 && initErr != "" && !opts.AllowNonStructural {
		errs = append(errs, field.Invalid(p, "", initErr))
	}
	return errs
}

// structuralErrors runs the structural rules on s, sorted by error text as
// upstream sorts them (its maps make any other order random).
func structuralErrors(s *apiextensionsv1.JSONSchemaProps, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = invariants(errs, s, rootLevel, p, 0)
	errs = completeness(errs, s, s, p, p, 0)
	// Render each error once: on deep schemas a path is long, and sorting
	// would otherwise render it at every comparison.
	texts := make([]string, len(errs))
	for i, e := range errs {
		texts[i] = e.Error()
	}
	sort.Stable(byText{errs, texts})
	return errs
}

// maxDepth bounds recursion over hostile schemas. The request decoder
// already limits nesting; this guards direct callers. Deeper nodes are
// not inspected.
const maxDepth = 1000

// sortedKeys returns m's keys in order so that errors come out the same
// on every run.
func sortedKeys(m map[string]apiextensionsv1.JSONSchemaProps) []string {
	if len(m) == 0 {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// visit calls f on s and every schema nested in it.
func visit(s *apiextensionsv1.JSONSchemaProps, depth int, f func(*apiextensionsv1.JSONSchemaProps)) {
	if s == nil || depth > maxDepth {
		return
	}
	f(s)
	if s.Items != nil {
		visit(s.Items.Schema, depth+1, f)
		for i := range s.Items.JSONSchemas {
			visit(&s.Items.JSONSchemas[i], depth+1, f)
		}
	}
	for _, k := range sortedKeys(s.Properties) {
		p := s.Properties[k]
		visit(&p, depth+1, f)
	}
	if s.AdditionalProperties != nil {
		visit(s.AdditionalProperties.Schema, depth+1, f)
	}
	visit(s.Not, depth+1, f)
	for _, list := range [][]apiextensionsv1.JSONSchemaProps{s.AllOf, s.AnyOf, s.OneOf} {
		for i := range list {
			visit(&list[i], depth+1, f)
		}
	}
}

// byText sorts errors by their precomputed texts.
type byText struct {
	errs  field.ErrorList
	texts []string
}

func (b byText) Len() int           { return len(b.errs) }
func (b byText) Less(i, j int) bool { return b.texts[i] < b.texts[j] }
func (b byText) Swap(i, j int) {
	b.errs[i], b.errs[j] = b.errs[j], b.errs[i]
	b.texts[i], b.texts[j] = b.texts[j], b.texts[i]
}

// Violations returns the structural rules s at p breaks, as upstream's
// NonStructuralSchema condition lists them, or an error when s uses a
// keyword the rules cannot read (upstream cannot build its structural
// model then).
func Violations(s *apiextensionsv1.JSONSchemaProps, p *field.Path) (field.ErrorList, error) {
	if s == nil {
		return nil, nil
	}
	if msg := unsupported(s, 0); msg != "" {
		return nil, errors.New(msg)
	}
	return structuralErrors(s, p), nil
}
