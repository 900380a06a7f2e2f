package builtin

import (
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/cel"
	"github.com/crdserver/crdserver/internal/registry"
)

// MutatingAdmissionPolicies and their bindings (admissionregistration.k8s.io/v1):
// CEL mutations the admission package runs in process, validated as
// upstream validates them.

// MutatingAdmissionPolicies is the mutatingadmissionpolicies resource.
func MutatingAdmissionPolicies() *registry.Definition {
	return policyResource("mutatingadmissionpolicies", "MutatingAdmissionPolicy", false,
		mutatingPolicyHooks{Typed[admissionregistrationv1.MutatingAdmissionPolicy]{Kind: "MutatingAdmissionPolicy", Version: "v1"}})
}

// MutatingAdmissionPolicyBindings is the mutatingadmissionpolicybindings resource.
func MutatingAdmissionPolicyBindings() *registry.Definition {
	return policyResource("mutatingadmissionpolicybindings", "MutatingAdmissionPolicyBinding", false,
		mutatingBindingHooks{Typed[admissionregistrationv1.MutatingAdmissionPolicyBinding]{Kind: "MutatingAdmissionPolicyBinding", Version: "v1"}})
}

type mutatingPolicyHooks struct {
	Typed[admissionregistrationv1.MutatingAdmissionPolicy]
}

var (
	_ registry.CreatePreparer  = mutatingPolicyHooks{}
	_ registry.UpdatePreparer  = mutatingPolicyHooks{}
	_ registry.Validator       = mutatingPolicyHooks{}
	_ registry.StrategicMerger = mutatingPolicyHooks{}
	_ registry.TypeChecker     = mutatingPolicyHooks{}
	_ registry.UnknownFielder  = mutatingPolicyHooks{}
	_ registry.Protobuf        = mutatingPolicyHooks{}
)

func (mutatingPolicyHooks) PatchSchema() any {
	return admissionregistrationv1.MutatingAdmissionPolicy{}
}

// NewProtobuf implements registry.Protobuf: client-go's typed clients may
// send policies as protobuf.
func (mutatingPolicyHooks) NewProtobuf() registry.ProtoMessage {
	return &admissionregistrationv1.MutatingAdmissionPolicy{}
}

func (h mutatingPolicyHooks) PrepareForCreate(obj map[string]any) { h.Default(obj) }

func (h mutatingPolicyHooks) PrepareForUpdate(obj, old map[string]any) { h.Default(obj) }

// Default applies upstream's v1 defaults.
func (h mutatingPolicyHooks) Default(obj map[string]any) {
	h.trim(obj)
	defaultMutatingPolicy(obj)
}

// Default applies upstream's v1 defaults.
func (h mutatingBindingHooks) Default(obj map[string]any) {
	h.trim(obj)
	defaultBinding(obj)
}

// defaultMutatingPolicy applies upstream's v1 defaults: failurePolicy;
// reinvocationPolicy has none (it is required).
func defaultMutatingPolicy(obj map[string]any) {
	defaultPolicy(obj)
}

var (
	patchTypes           = []string{"ApplyConfiguration", "JSONPatch"}
	reinvocationPolicies = []string{"IfNeeded", "Never"}
)

// Validate checks a create: the spec, and that the name is not one kept
// for static configuration.
func (h mutatingPolicyHooks) Validate(obj map[string]any) field.ErrorList {
	return append(h.validateSpec(obj), staticNameErrors(obj)...)
}

func (h mutatingPolicyHooks) validateSpec(obj map[string]any) field.ErrorList {
	p, _, err := h.Decode(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	sp := field.NewPath("spec")
	errs := validatePolicyParts(p.Spec.FailurePolicy, p.Spec.MatchConstraints, p.Spec.ParamKind, p.Spec.Variables, p.Spec.MatchConditions, sp)
	if len(p.Spec.Mutations) == 0 {
		errs = append(errs, field.Required(sp.Child("mutations"), "mutations must contain at least one item"))
	}
	for i, m := range p.Spec.Mutations {
		errs = append(errs, validateMutation(m, sp.Child("mutations").Index(i))...)
	}
	switch rp := p.Spec.ReinvocationPolicy; {
	case rp == "":
		errs = append(errs, field.Required(sp.Child("reinvocationPolicy"), ""))
	case !slices.Contains(reinvocationPolicies, string(rp)):
		errs = append(errs, field.NotSupported(sp.Child("reinvocationPolicy"), rp, reinvocationPolicies))
	}
	return errs
}

func (h mutatingPolicyHooks) ValidateUpdate(obj, old map[string]any) field.ErrorList {
	return h.validateSpec(obj)
}

// validateMutation checks that a mutation sets the field of its patchType,
// only that one, and that its expression compiles.
func validateMutation(m admissionregistrationv1.Mutation, mp *field.Path) field.ErrorList {
	var errs field.ErrorList
	var expr *string
	var ep *field.Path
	switch m.PatchType {
	case admissionregistrationv1.PatchTypeJSONPatch:
		if m.JSONPatch == nil {
			errs = append(errs, field.Required(mp.Child("jsonPatch"), "must be specified when patchType is JSONPatch"))
		} else {
			expr, ep = &m.JSONPatch.Expression, mp.Child("jsonPatch", "expression")
		}
		if m.ApplyConfiguration != nil {
			errs = append(errs, field.Invalid(mp.Child("applyConfiguration"), "{applyConfiguration}", "must not be specified when patchType is JSONPatch"))
		}
	case admissionregistrationv1.PatchTypeApplyConfiguration:
		if m.ApplyConfiguration == nil {
			errs = append(errs, field.Required(mp.Child("applyConfiguration"), "must be specified when patchType is ApplyConfiguration"))
		} else {
			expr, ep = &m.ApplyConfiguration.Expression, mp.Child("applyConfiguration", "expression")
		}
		if m.JSONPatch != nil {
			errs = append(errs, field.Invalid(mp.Child("jsonPatch"), "{jsonPatch}", "must not be specified when patchType is ApplyConfiguration"))
		}
	case "":
		return field.ErrorList{field.Required(mp.Child("patchType"), "")}
	default:
		return field.ErrorList{field.NotSupported(mp.Child("patchType"), m.PatchType, patchTypes)}
	}
	switch {
	case expr == nil:
	case strings.TrimSpace(*expr) == "":
		errs = append(errs, field.Required(ep, ""))
	default:
		if _, err := cel.CompileMutation(*expr, m.PatchType == admissionregistrationv1.PatchTypeApplyConfiguration); err != nil {
			errs = append(errs, field.Invalid(ep, *expr, err.Error()))
		}
	}
	return errs
}

type mutatingBindingHooks struct {
	Typed[admissionregistrationv1.MutatingAdmissionPolicyBinding]
}

// PatchSchema implements registry.StrategicMerger: a binding takes
// strategic merge patches, as every built-in does upstream.
func (mutatingBindingHooks) PatchSchema() any {
	return admissionregistrationv1.MutatingAdmissionPolicyBinding{}
}

var (
	_ registry.CreatePreparer = mutatingBindingHooks{}
	_ registry.UpdatePreparer = mutatingBindingHooks{}
	_ registry.Validator      = mutatingBindingHooks{}
	_ registry.TypeChecker    = mutatingBindingHooks{}
	_ registry.UnknownFielder = mutatingBindingHooks{}
	_ registry.Protobuf       = mutatingBindingHooks{}
)

func (mutatingBindingHooks) NewProtobuf() registry.ProtoMessage {
	return &admissionregistrationv1.MutatingAdmissionPolicyBinding{}
}

func (h mutatingBindingHooks) PrepareForCreate(obj map[string]any) { h.Default(obj) }

func (h mutatingBindingHooks) PrepareForUpdate(obj, old map[string]any) { h.Default(obj) }

// Validate checks a create: the spec, and that the name is not one kept
// for static configuration.
func (h mutatingBindingHooks) Validate(obj map[string]any) field.ErrorList {
	return append(h.validateSpec(obj), staticNameErrors(obj)...)
}

func (h mutatingBindingHooks) validateSpec(obj map[string]any) field.ErrorList {
	b, _, err := h.Decode(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	var errs field.ErrorList
	sp := field.NewPath("spec")
	if b.Spec.PolicyName == "" {
		errs = append(errs, field.Required(sp.Child("policyName"), ""))
	}
	if mr := b.Spec.MatchResources; mr != nil {
		errs = append(errs, validateMatchResources(mr, sp.Child("matchResources"))...)
	}
	return append(errs, validateParamRef(b.Spec.ParamRef, sp.Child("paramRef"))...)
}

func (h mutatingBindingHooks) ValidateUpdate(obj, old map[string]any) field.ErrorList {
	return h.validateSpec(obj)
}
