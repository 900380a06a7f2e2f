package builtin

import (
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/cel"
	"github.com/crdserver/crdserver/internal/registry"
)

// ValidatingAdmissionPolicies and their bindings (admissionregistration.k8s.io/v1):
// CEL validations the admission package runs in process; a controller
// (the server's policy type checker) writes status.typeChecking.
//
// Not done (yet): validation of every field upstream checks (the
// expressions, rules, actions, names and param references are checked).

// ValidatingAdmissionPolicies is the validatingadmissionpolicies resource.
func ValidatingAdmissionPolicies() *registry.Definition {
	return policyResource("validatingadmissionpolicies", "ValidatingAdmissionPolicy", true,
		policyHooks{Typed[admissionregistrationv1.ValidatingAdmissionPolicy]{Kind: "ValidatingAdmissionPolicy", Version: "v1"}})
}

// ValidatingAdmissionPolicyBindings is the validatingadmissionpolicybindings resource.
func ValidatingAdmissionPolicyBindings() *registry.Definition {
	return policyResource("validatingadmissionpolicybindings", "ValidatingAdmissionPolicyBinding", false,
		bindingHooks{Typed[admissionregistrationv1.ValidatingAdmissionPolicyBinding]{Kind: "ValidatingAdmissionPolicyBinding", Version: "v1"}})
}

// policyResource is the definition of an admission policy resource or of
// its bindings: cluster-scoped, v1 only, in the api-extensions category,
// with a status subresource when status.
func policyResource(resource, kind string, status bool, hooks any) *registry.Definition {
	return &registry.Definition{
		Group:      AdmissionGroup,
		Resource:   resource,
		Singular:   strings.ToLower(kind),
		Kind:       kind,
		ListKind:   kind + "List",
		Categories: []string{"api-extensions"},
		Scope:      registry.Cluster,
		Versions: []registry.Version{{
			Name: "v1", Served: true, Storage: true,
			Subresources:   registry.Subresources{Status: status},
			PrinterColumns: []registry.PrinterColumn{registry.BuiltinAgeColumn},
		}},
		Hooks: hooks,
	}
}

type policyHooks struct {
	Typed[admissionregistrationv1.ValidatingAdmissionPolicy]
}

var (
	_ registry.CreatePreparer  = policyHooks{}
	_ registry.UpdatePreparer  = policyHooks{}
	_ registry.Validator       = policyHooks{}
	_ registry.StrategicMerger = policyHooks{}
	_ registry.TypeChecker     = policyHooks{}
	_ registry.UnknownFielder  = policyHooks{}
	_ registry.Protobuf        = policyHooks{}
)

func (policyHooks) PatchSchema() any { return admissionregistrationv1.ValidatingAdmissionPolicy{} }

// NewProtobuf implements registry.Protobuf: client-go's typed clients may
// send policies as protobuf.
func (policyHooks) NewProtobuf() registry.ProtoMessage {
	return &admissionregistrationv1.ValidatingAdmissionPolicy{}
}

func (h policyHooks) PrepareForCreate(obj map[string]any) { h.Default(obj) }

func (h policyHooks) PrepareForUpdate(obj, old map[string]any) { h.Default(obj) }

// Default applies upstream's v1 defaults.
func (h policyHooks) Default(obj map[string]any) {
	h.trim(obj)
	defaultPolicy(obj)
}

// Default applies upstream's v1 defaults.
func (h bindingHooks) Default(obj map[string]any) {
	h.trim(obj)
	defaultBinding(obj)
}

// defaultPolicy applies upstream's v1 defaults.
func defaultPolicy(obj map[string]any) {
	spec := mapField(obj, "spec")
	if spec["failurePolicy"] == nil {
		spec["failurePolicy"] = "Fail"
	}
	if mc, ok := spec["matchConstraints"].(map[string]any); ok {
		defaultMatchResources(mc)
	}
}

func defaultMatchResources(mc map[string]any) {
	if mc["matchPolicy"] == nil {
		mc["matchPolicy"] = "Equivalent"
	}
	for _, k := range []string{"namespaceSelector", "objectSelector"} {
		if mc[k] == nil {
			mc[k] = map[string]any{}
		}
	}
	for _, k := range []string{"resourceRules", "excludeResourceRules"} {
		rules, _ := mc[k].([]any)
		for _, r := range rules {
			if rm, ok := r.(map[string]any); ok && rm["scope"] == nil {
				rm["scope"] = "*"
			}
		}
	}
}

// Validate checks a create: the spec, and that the name is not one kept
// for static configuration.
func (h policyHooks) Validate(obj map[string]any) field.ErrorList {
	return append(h.validateSpec(obj), staticNameErrors(obj)...)
}

func (h policyHooks) validateSpec(obj map[string]any) field.ErrorList {
	p, _, err := h.Decode(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	sp := field.NewPath("spec")
	errs := validatePolicyParts(p.Spec.FailurePolicy, p.Spec.MatchConstraints, p.Spec.ParamKind, p.Spec.Variables, p.Spec.MatchConditions, sp)
	if len(p.Spec.Validations) == 0 && len(p.Spec.AuditAnnotations) == 0 {
		errs = append(errs, field.Required(sp.Child("validations"), "validations or auditAnnotations must contain at least one item"))
		errs = append(errs, field.Required(sp.Child("auditAnnotations"), "validations or auditAnnotations must contain at least one item"))
	}
	for i, v := range p.Spec.Validations {
		vp := sp.Child("validations").Index(i)
		errs = append(errs, checkExpression(v.Expression, cel.BoolResult, vp.Child("expression"))...)
		if v.MessageExpression != "" {
			errs = append(errs, checkExpression(v.MessageExpression, cel.MessageResult, vp.Child("messageExpression"))...)
		}
		if v.Reason != nil && !slices.Contains(validationReasons, string(*v.Reason)) {
			errs = append(errs, field.NotSupported(vp.Child("reason"), *v.Reason, validationReasons))
		}
	}
	return append(errs, validateAuditAnnotations(p.Name, p.Spec.AuditAnnotations, sp.Child("auditAnnotations"))...)
}

// validationReasons are the reasons a policy's validation may give a
// refusal, sorted as upstream lists them.
var validationReasons = []string{string(metav1.StatusReasonForbidden), string(metav1.StatusReasonInvalid), string(metav1.StatusReasonRequestEntityTooLarge)}

// Upstream's limits on a policy's auditAnnotations.
const (
	maxAuditAnnotations                     = 20
	maxAuditAnnotationValueExpressionLength = 5 * 1024
)

// validateAuditAnnotations validates a policy's auditAnnotations as
// upstream does: "<policy name>/<key>" is a qualified name, keys are
// unique, and each valueExpression compiles to a string or null.
func validateAuditAnnotations(policy string, ans []admissionregistrationv1.AuditAnnotation, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(ans) > maxAuditAnnotations {
		errs = append(errs, field.Invalid(p, ans, fmt.Sprintf("must not have more than %d auditAnnotations", maxAuditAnnotations)))
	}
	keys := map[string]bool{}
	for i, an := range ans {
		ap := p.Index(i)
		if policy == "" {
			errs = append(errs, field.Invalid(ap.Child("key"), an.Key, "requires metadata.name be non-empty"))
		} else {
			for _, msg := range validation.IsQualifiedName(policy + "/" + an.Key) {
				errs = append(errs, field.Invalid(ap.Child("key"), policy+"/"+an.Key, msg))
			}
		}
		switch expr := strings.TrimSpace(an.ValueExpression); {
		case expr == "":
			errs = append(errs, field.Required(ap.Child("valueExpression"), "valueExpression is not specified"))
		case len(expr) > maxAuditAnnotationValueExpressionLength:
			errs = append(errs, field.Required(ap.Child("valueExpression"), fmt.Sprintf("must not exceed %d bytes in length", maxAuditAnnotationValueExpressionLength)))
		default:
			if _, err := cel.CompilePolicyExpression(expr, cel.StringOrNullResult); err != nil {
				errs = append(errs, field.Invalid(ap.Child("valueExpression"), an.ValueExpression, err.Error()))
			}
		}
		if keys[an.Key] {
			errs = append(errs, field.Duplicate(ap.Child("key"), an.Key))
		}
		keys[an.Key] = true
	}
	return errs
}

// validatePolicyParts validates what validating and mutating policies
// share.
func validatePolicyParts(fp *admissionregistrationv1.FailurePolicyType, mc *admissionregistrationv1.MatchResources, pk *admissionregistrationv1.ParamKind,
	variables []admissionregistrationv1.Variable, conds []admissionregistrationv1.MatchCondition, sp *field.Path) field.ErrorList {
	var errs field.ErrorList
	if fp != nil && !slices.Contains(supportedFailure, string(*fp)) {
		errs = append(errs, field.NotSupported(sp.Child("failurePolicy"), *fp, supportedFailure))
	}
	if mc == nil {
		errs = append(errs, field.Required(sp.Child("matchConstraints"), ""))
	} else {
		errs = append(errs, validateMatchResources(mc, sp.Child("matchConstraints"))...)
		// The resource rules give the policy's expressions their types.
		if len(mc.ResourceRules) == 0 {
			errs = append(errs, field.Required(sp.Child("matchConstraints", "resourceRules"), ""))
		}
	}
	if pk != nil {
		if pk.Kind == "" {
			errs = append(errs, field.Required(sp.Child("paramKind", "kind"), ""))
		}
		if pk.APIVersion == "" {
			errs = append(errs, field.Required(sp.Child("paramKind", "apiVersion"), ""))
		}
	}
	names := map[string]bool{}
	for i, v := range variables {
		vp := sp.Child("variables").Index(i)
		switch {
		case strings.TrimSpace(v.Name) == "":
			errs = append(errs, field.Required(vp.Child("name"), "name is not specified"))
		case !isCELIdentifier(v.Name):
			errs = append(errs, field.Invalid(vp.Child("name"), v.Name, "must be a valid CEL identifier"))
		case names[v.Name]:
			errs = append(errs, field.Duplicate(vp.Child("name"), v.Name))
		}
		names[v.Name] = true
		errs = append(errs, checkExpression(v.Expression, cel.AnyResult, vp.Child("expression"))...)
	}
	for i, c := range conds {
		errs = append(errs, checkExpression(c.Expression, cel.BoolResult, sp.Child("matchConditions").Index(i).Child("expression"))...)
	}
	return errs
}

func (h policyHooks) ValidateUpdate(obj, old map[string]any) field.ErrorList {
	return h.validateSpec(obj)
}

func checkExpression(expr string, result cel.PolicyResult, p *field.Path) field.ErrorList {
	if expr == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	if _, err := cel.CompilePolicyExpression(expr, result); err != nil {
		return field.ErrorList{field.Invalid(p, expr, err.Error())}
	}
	return nil
}

func validateMatchResources(mc *admissionregistrationv1.MatchResources, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if mp := mc.MatchPolicy; mp != nil && !slices.Contains(supportedMatch, string(*mp)) {
		errs = append(errs, field.NotSupported(p.Child("matchPolicy"), *mp, supportedMatch))
	}
	for i, r := range mc.ResourceRules {
		rw := admissionregistrationv1.RuleWithOperations{Operations: r.Operations, Rule: r.Rule}
		errs = append(errs, validateRule(&rw, p.Child("resourceRules").Index(i))...)
	}
	for i, r := range mc.ExcludeResourceRules {
		rw := admissionregistrationv1.RuleWithOperations{Operations: r.Operations, Rule: r.Rule}
		errs = append(errs, validateRule(&rw, p.Child("excludeResourceRules").Index(i))...)
	}
	return errs
}

type bindingHooks struct {
	Typed[admissionregistrationv1.ValidatingAdmissionPolicyBinding]
}

// PatchSchema implements registry.StrategicMerger: a binding takes
// strategic merge patches, as every built-in does upstream.
func (bindingHooks) PatchSchema() any {
	return admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
}

var (
	_ registry.CreatePreparer = bindingHooks{}
	_ registry.UpdatePreparer = bindingHooks{}
	_ registry.Validator      = bindingHooks{}
	_ registry.TypeChecker    = bindingHooks{}
	_ registry.UnknownFielder = bindingHooks{}
	_ registry.Protobuf       = bindingHooks{}
)

func (bindingHooks) NewProtobuf() registry.ProtoMessage {
	return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
}

func (h bindingHooks) PrepareForCreate(obj map[string]any) { h.Default(obj) }

func (h bindingHooks) PrepareForUpdate(obj, old map[string]any) { h.Default(obj) }

func defaultBinding(obj map[string]any) {
	spec := mapField(obj, "spec")
	if mr, ok := spec["matchResources"].(map[string]any); ok {
		defaultMatchResources(mr)
	}
}

var validationActions = []string{"Audit", "Deny", "Warn"}

// Validate checks a create: the spec, and that the name is not one kept
// for static configuration.
func (h bindingHooks) Validate(obj map[string]any) field.ErrorList {
	return append(h.validateSpec(obj), staticNameErrors(obj)...)
}

func (h bindingHooks) validateSpec(obj map[string]any) field.ErrorList {
	b, _, err := h.Decode(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	var errs field.ErrorList
	sp := field.NewPath("spec")
	if b.Spec.PolicyName == "" {
		errs = append(errs, field.Required(sp.Child("policyName"), ""))
	}
	ap := sp.Child("validationActions")
	if len(b.Spec.ValidationActions) == 0 {
		errs = append(errs, field.Required(ap, ""))
	}
	seen := map[admissionregistrationv1.ValidationAction]bool{}
	for i, a := range b.Spec.ValidationActions {
		if !slices.Contains(validationActions, string(a)) {
			errs = append(errs, field.NotSupported(ap.Index(i), a, validationActions))
		}
		if seen[a] {
			errs = append(errs, field.Duplicate(ap.Index(i), a))
		}
		seen[a] = true
	}
	if seen[admissionregistrationv1.Deny] && seen[admissionregistrationv1.Warn] {
		errs = append(errs, field.Invalid(ap, b.Spec.ValidationActions, "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"))
	}
	if mr := b.Spec.MatchResources; mr != nil {
		errs = append(errs, validateMatchResources(mr, sp.Child("matchResources"))...)
	}
	errs = append(errs, validateParamRef(b.Spec.ParamRef, sp.Child("paramRef"))...)
	return errs
}

func (h bindingHooks) ValidateUpdate(obj, old map[string]any) field.ErrorList {
	return h.validateSpec(obj)
}

func validateParamRef(ref *admissionregistrationv1.ParamRef, rp *field.Path) field.ErrorList {
	if ref == nil {
		return nil
	}
	var errs field.ErrorList
	if ref.Name != "" && ref.Selector != nil {
		errs = append(errs, field.Forbidden(rp.Child("name"), "name and selector are mutually exclusive"))
	}
	if ref.Name == "" && ref.Selector == nil {
		errs = append(errs, field.Required(rp, "one of name or selector must be specified"))
	}
	switch a := ref.ParameterNotFoundAction; {
	case a == nil:
		errs = append(errs, field.Required(rp.Child("parameterNotFoundAction"), ""))
	case *a != admissionregistrationv1.DenyAction && *a != admissionregistrationv1.AllowAction:
		errs = append(errs, field.NotSupported(rp.Child("parameterNotFoundAction"), *a, []string{"Allow", "Deny"}))
	}
	return errs
}

// celReserved are the words CEL reserves, which no identifier may be.
var celReserved = []string{"as", "break", "const", "continue", "else", "false", "for", "function", "if", "import",
	"in", "let", "loop", "namespace", "null", "package", "return", "true", "var", "void", "while"}

// isCELIdentifier reports whether name is a CEL identifier: a letter or
// underscore, then letters, digits and underscores, and no reserved word.
func isCELIdentifier(name string) bool {
	for i, r := range name {
		letter := r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z'
		if !letter && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return name != "" && !slices.Contains(celReserved, name)
}
