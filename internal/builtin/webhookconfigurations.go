package builtin

import (
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/cel"
	"github.com/crdserver/crdserver/internal/registry"
)

// The admissionregistration.k8s.io webhook configurations register
// admission webhooks (the admission package calls them). Both kinds are
// served at v1, stored at v1, and at v1beta1, which upstream removed in
// 1.22 but manifests still use. The two versions have the same fields and
// differ in their defaults (v1beta1: failurePolicy Ignore, matchPolicy
// Exact, sideEffects Unknown, timeoutSeconds 30, admissionReviewVersions
// [v1beta1]) and in what validation requires: an object is defaulted in
// the version it is written in, so that between versions only apiVersion
// changes (the None conversion). The OpenAPI documents describe v1 with
// upstream's published models; upstream publishes none for v1beta1, which
// they describe as bare objects.

// AdmissionGroup is the group of the webhook configurations.
const AdmissionGroup = "admissionregistration.k8s.io"

// MutatingWebhookConfigurations is the mutatingwebhookconfigurations resource.
func MutatingWebhookConfigurations() *registry.Definition {
	return webhookConfigurations("mutatingwebhookconfigurations", "MutatingWebhookConfiguration",
		webhookConfigHooks[admissionregistrationv1.MutatingWebhookConfiguration]{
			Typed:    Typed[admissionregistrationv1.MutatingWebhookConfiguration]{Kind: "MutatingWebhookConfiguration", Version: "v1"},
			mutating: true,
		})
}

// ValidatingWebhookConfigurations is the validatingwebhookconfigurations resource.
func ValidatingWebhookConfigurations() *registry.Definition {
	return webhookConfigurations("validatingwebhookconfigurations", "ValidatingWebhookConfiguration",
		webhookConfigHooks[admissionregistrationv1.ValidatingWebhookConfiguration]{
			Typed: Typed[admissionregistrationv1.ValidatingWebhookConfiguration]{Kind: "ValidatingWebhookConfiguration", Version: "v1"},
		})
}

func webhookConfigurations(resource, kind string, hooks any) *registry.Definition {
	columns := []registry.PrinterColumn{registry.BuiltinAgeColumn}
	return &registry.Definition{
		Group:      AdmissionGroup,
		Resource:   resource,
		Singular:   strings.ToLower(kind),
		Kind:       kind,
		ListKind:   kind + "List",
		Categories: []string{"api-extensions"},
		Scope:      registry.Cluster,
		Versions: []registry.Version{
			{Name: "v1", Served: true, Storage: true, PrinterColumns: columns},
			{
				Name: "v1beta1", Served: true, PrinterColumns: columns, Deprecated: true,
				DeprecationWarning: AdmissionGroup + "/v1beta1 " + kind + " is deprecated in v1.16+, unavailable in v1.22+; use " + AdmissionGroup + "/v1 " + kind,
				RemovedRelease:     "1.22",
			},
		},
		Hooks: hooks,
	}
}

// webhookConfigHooks is the behaviour of both configuration kinds; T is
// the kind's v1 Go type, which v1beta1 objects decode into as well.
type webhookConfigHooks[T any] struct {
	Typed[T]
	mutating bool
}

var (
	_ registry.CreatePreparer  = webhookConfigHooks[admissionregistrationv1.MutatingWebhookConfiguration]{}
	_ registry.UpdatePreparer  = webhookConfigHooks[admissionregistrationv1.MutatingWebhookConfiguration]{}
	_ registry.Validator       = webhookConfigHooks[admissionregistrationv1.MutatingWebhookConfiguration]{}
	_ registry.StrategicMerger = webhookConfigHooks[admissionregistrationv1.MutatingWebhookConfiguration]{}
	_ registry.TypeChecker     = webhookConfigHooks[admissionregistrationv1.MutatingWebhookConfiguration]{}
	_ registry.UnknownFielder  = webhookConfigHooks[admissionregistrationv1.MutatingWebhookConfiguration]{}
)

func (h webhookConfigHooks[T]) PatchSchema() any { return *new(T) }

var _ registry.Protobuf = webhookConfigHooks[admissionregistrationv1.MutatingWebhookConfiguration]{}

// NewProtobuf implements registry.Protobuf: client-go's typed clients may
// send configurations as protobuf.
func (h webhookConfigHooks[T]) NewProtobuf() registry.ProtoMessage {
	m, _ := any(new(T)).(registry.ProtoMessage)
	return m
}

func (h webhookConfigHooks[T]) PrepareForCreate(obj map[string]any) { h.Default(obj) }

func (h webhookConfigHooks[T]) PrepareForUpdate(obj, old map[string]any) { h.Default(obj) }

// Default applies the webhooks' defaults of the version obj is written in.
func (h webhookConfigHooks[T]) Default(obj map[string]any) {
	h.trim(obj)
	defaultWebhooks(obj, h.mutating)
}

func isV1beta1(obj map[string]any) bool {
	return obj["apiVersion"] == AdmissionGroup+"/v1beta1"
}

// defaultWebhooks applies the defaults of the version obj is written in.
func defaultWebhooks(obj map[string]any, mutating bool) {
	beta := isV1beta1(obj)
	hooks, _ := obj["webhooks"].([]any)
	setDefault := func(m map[string]any, k string, v any) {
		if m[k] == nil {
			m[k] = v
		}
	}
	for _, w := range hooks {
		wm, ok := w.(map[string]any)
		if !ok {
			continue
		}
		if beta {
			setDefault(wm, "failurePolicy", "Ignore")
			setDefault(wm, "matchPolicy", "Exact")
			setDefault(wm, "sideEffects", "Unknown")
			setDefault(wm, "timeoutSeconds", int64(30))
			setDefault(wm, "admissionReviewVersions", []any{"v1beta1"})
		} else {
			setDefault(wm, "failurePolicy", "Fail")
			setDefault(wm, "matchPolicy", "Equivalent")
			setDefault(wm, "timeoutSeconds", int64(10))
		}
		setDefault(wm, "namespaceSelector", map[string]any{})
		setDefault(wm, "objectSelector", map[string]any{})
		if mutating {
			setDefault(wm, "reinvocationPolicy", "Never")
		}
		rules, _ := wm["rules"].([]any)
		for _, r := range rules {
			if rm, ok := r.(map[string]any); ok {
				setDefault(rm, "scope", "*")
			}
		}
		if cc, ok := wm["clientConfig"].(map[string]any); ok {
			if svc, ok := cc["service"].(map[string]any); ok {
				setDefault(svc, "port", int64(443))
			}
		}
	}
}

func (h webhookConfigHooks[T]) Validate(obj map[string]any) field.ErrorList {
	hooks, err := h.webhooks(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	v1 := !isV1beta1(obj)
	return append(validateWebhooks(hooks, h.mutating, v1, v1), staticNameErrors(obj)...)
}

// ValidateUpdate relaxes what v1 requires where the stored configuration
// did not meet it either, as upstream does.
func (h webhookConfigHooks[T]) ValidateUpdate(obj, old map[string]any) field.ErrorList {
	hooks, err := h.webhooks(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	requireNoSideEffects, requireVersions := !isV1beta1(obj), !isV1beta1(obj)
	if oldHooks, err := h.webhooks(old); err == nil {
		for _, o := range oldHooks {
			if o.SideEffects == nil || !noSideEffects(*o.SideEffects) {
				requireNoSideEffects = false
			}
			if !hasRecognizedVersion(o.AdmissionReviewVersions) {
				requireVersions = false
			}
		}
	}
	return validateWebhooks(hooks, h.mutating, requireNoSideEffects, requireVersions)
}

// webhooks decodes the configuration's webhooks, validating ones as
// mutating ones without a reinvocationPolicy.
func (h webhookConfigHooks[T]) webhooks(obj map[string]any) ([]admissionregistrationv1.MutatingWebhook, error) {
	cfg, _, err := h.Decode(obj)
	if err != nil {
		return nil, err
	}
	switch c := any(cfg).(type) {
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		return c.Webhooks, nil
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		return MutatingWebhooks(c.Webhooks), nil
	}
	return nil, fmt.Errorf("unexpected type %T", cfg)
}

// MutatingWebhooks returns validating webhooks as mutating ones (the same
// fields without reinvocationPolicy), so that one code reads both.
func MutatingWebhooks(vs []admissionregistrationv1.ValidatingWebhook) []admissionregistrationv1.MutatingWebhook {
	out := make([]admissionregistrationv1.MutatingWebhook, len(vs))
	for i, v := range vs {
		out[i] = admissionregistrationv1.MutatingWebhook{
			Name: v.Name, ClientConfig: v.ClientConfig, Rules: v.Rules, FailurePolicy: v.FailurePolicy,
			MatchPolicy: v.MatchPolicy, NamespaceSelector: v.NamespaceSelector, ObjectSelector: v.ObjectSelector,
			SideEffects: v.SideEffects, TimeoutSeconds: v.TimeoutSeconds, AdmissionReviewVersions: v.AdmissionReviewVersions,
			MatchConditions: v.MatchConditions,
		}
	}
	return out
}

var (
	supportedOperations   = []string{"*", "CONNECT", "CREATE", "DELETE", "UPDATE"}
	supportedScopes       = []string{"*", "Cluster", "Namespaced"}
	supportedFailure      = []string{"Fail", "Ignore"}
	supportedMatch        = []string{"Equivalent", "Exact"}
	supportedSideEffects  = []string{"None", "NoneOnDryRun", "Some", "Unknown"}
	noSideEffectClasses   = []string{"None", "NoneOnDryRun"}
	supportedReinvocation = []string{"IfNeeded", "Never"}
	reviewVersions        = []string{"v1", "v1beta1"}
)

func noSideEffects(s admissionregistrationv1.SideEffectClass) bool {
	return slices.Contains(noSideEffectClasses, string(s))
}

func hasRecognizedVersion(vs []string) bool {
	for _, v := range vs {
		if slices.Contains(reviewVersions, v) {
			return true
		}
	}
	return false
}

// validateWebhooks checks a configuration's webhooks as upstream does.
func validateWebhooks(hooks []admissionregistrationv1.MutatingWebhook, mutating, requireNoSideEffects, requireVersions bool) field.ErrorList {
	var errs field.ErrorList
	names := map[string]bool{}
	for i := range hooks {
		hook := &hooks[i]
		p := field.NewPath("webhooks").Index(i)
		errs = append(errs, validateWebhook(hook, p, mutating, requireNoSideEffects, requireVersions)...)
		if hook.Name != "" {
			if names[hook.Name] {
				errs = append(errs, field.Duplicate(p.Child("name"), hook.Name))
			}
			names[hook.Name] = true
		}
	}
	return errs
}

func validateWebhook(hook *admissionregistrationv1.MutatingWebhook, p *field.Path, mutating, requireNoSideEffects, requireVersions bool) field.ErrorList {
	errs := validation.IsFullyQualifiedName(p.Child("name"), hook.Name)
	for j, r := range hook.Rules {
		errs = append(errs, validateRule(&r, p.Child("rules").Index(j))...)
	}
	if fp := hook.FailurePolicy; fp != nil && !slices.Contains(supportedFailure, string(*fp)) {
		errs = append(errs, field.NotSupported(p.Child("failurePolicy"), *fp, supportedFailure))
	}
	if mp := hook.MatchPolicy; mp != nil && !slices.Contains(supportedMatch, string(*mp)) {
		errs = append(errs, field.NotSupported(p.Child("matchPolicy"), *mp, supportedMatch))
	}
	allowedSideEffects := supportedSideEffects
	if requireNoSideEffects {
		allowedSideEffects = noSideEffectClasses
	}
	switch se := hook.SideEffects; {
	case se == nil:
		errs = append(errs, field.Required(p.Child("sideEffects"), "must specify one of "+strings.Join(allowedSideEffects, ", ")))
	case !slices.Contains(allowedSideEffects, string(*se)):
		errs = append(errs, field.NotSupported(p.Child("sideEffects"), *se, allowedSideEffects))
	}
	if t := hook.TimeoutSeconds; t != nil && (*t < 1 || *t > 30) {
		errs = append(errs, field.Invalid(p.Child("timeoutSeconds"), *t, "the timeout value must be between 1 and 30 seconds"))
	}
	errs = append(errs, validateReviewVersions(hook.AdmissionReviewVersions, requireVersions, p.Child("admissionReviewVersions"))...)
	if hook.NamespaceSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(hook.NamespaceSelector, metav1validation.LabelSelectorValidationOptions{}, p.Child("namespaceSelector"))...)
	}
	if hook.ObjectSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(hook.ObjectSelector, metav1validation.LabelSelectorValidationOptions{}, p.Child("objectSelector"))...)
	}
	if rp := hook.ReinvocationPolicy; mutating && rp != nil && !slices.Contains(supportedReinvocation, string(*rp)) {
		errs = append(errs, field.NotSupported(p.Child("reinvocationPolicy"), *rp, supportedReinvocation))
	}
	errs = append(errs, validateClientConfig(&hook.ClientConfig, p.Child("clientConfig"))...)
	errs = append(errs, validateMatchConditions(hook.MatchConditions, p.Child("matchConditions"))...)
	return errs
}

func validateRule(r *admissionregistrationv1.RuleWithOperations, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(r.Operations) == 0 {
		errs = append(errs, field.Required(p.Child("operations"), ""))
	}
	if len(r.Operations) > 1 && slices.Contains(r.Operations, admissionregistrationv1.OperationAll) {
		errs = append(errs, field.Invalid(p.Child("operations"), r.Operations, "if '*' is present, must not specify other operations"))
	}
	for i, op := range r.Operations {
		if !slices.Contains(supportedOperations, string(op)) {
			errs = append(errs, field.NotSupported(p.Child("operations").Index(i), op, supportedOperations))
		}
	}
	if len(r.APIGroups) == 0 {
		errs = append(errs, field.Required(p.Child("apiGroups"), ""))
	}
	if len(r.APIGroups) > 1 && slices.Contains(r.APIGroups, "*") {
		errs = append(errs, field.Invalid(p.Child("apiGroups"), r.APIGroups, "if '*' is present, must not specify other API groups"))
	}
	if len(r.APIVersions) == 0 {
		errs = append(errs, field.Required(p.Child("apiVersions"), ""))
	}
	if len(r.APIVersions) > 1 && slices.Contains(r.APIVersions, "*") {
		errs = append(errs, field.Invalid(p.Child("apiVersions"), r.APIVersions, "if '*' is present, must not specify other API versions"))
	}
	for i, v := range r.APIVersions {
		if v == "" {
			errs = append(errs, field.Required(p.Child("apiVersions").Index(i), ""))
		}
	}
	if len(r.Resources) == 0 {
		errs = append(errs, field.Required(p.Child("resources"), ""))
	}
	errs = append(errs, validateResources(r.Resources, p.Child("resources"))...)
	if r.Scope != nil && !slices.Contains(supportedScopes, string(*r.Scope)) {
		errs = append(errs, field.NotSupported(p.Child("scope"), *r.Scope, supportedScopes))
	}
	return errs
}

// validateResources checks resource/subresource patterns: "*" and "*/*"
// exclude the patterns they cover.
func validateResources(resources []string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	resourcesWithWildcardSubresources := map[string]bool{}
	subResourcesWithWildcardResource := map[string]bool{}
	hasDoubleWildcard := slices.Contains(resources, "*/*")
	hasSingleWildcard := slices.Contains(resources, "*")
	if hasDoubleWildcard && len(resources) > 1 {
		errs = append(errs, field.Invalid(p, resources, "if '*/*' is present, must not specify other resources"))
	}
	if hasSingleWildcard && len(resources) > 1 {
		for i, r := range resources {
			if r != "*" && !strings.Contains(r, "/") {
				errs = append(errs, field.Invalid(p.Index(i), r, "if '*' is present, must not specify other resources without subresources"))
			}
		}
	}
	for i, r := range resources {
		if r == "" {
			errs = append(errs, field.Required(p.Index(i), ""))
			continue
		}
		res, sub, hasSub := strings.Cut(r, "/")
		if res == "" {
			errs = append(errs, field.Required(p.Index(i), "resource should not be empty"))
		}
		if hasSub && sub == "" {
			errs = append(errs, field.Required(p.Index(i), "subresource should not be empty"))
		}
		if hasSub && sub == "*" {
			resourcesWithWildcardSubresources[res] = true
		}
		if hasSub && res == "*" {
			subResourcesWithWildcardResource[sub] = true
		}
	}
	for i, r := range resources {
		res, sub, hasSub := strings.Cut(r, "/")
		if !hasSub || r == "*/*" {
			continue
		}
		if sub != "*" && resourcesWithWildcardSubresources[res] {
			errs = append(errs, field.Invalid(p.Index(i), r, fmt.Sprintf("if '%s/*' is present, must not specify %s", res, r)))
		}
		if res != "*" && subResourcesWithWildcardResource[sub] {
			errs = append(errs, field.Invalid(p.Index(i), r, fmt.Sprintf("if '*/%s' is present, must not specify %s", sub, r)))
		}
	}
	return errs
}

func validateReviewVersions(versions []string, requireRecognized bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if requireRecognized && len(versions) == 0 {
		return field.ErrorList{field.Required(p, "must specify one of "+strings.Join(reviewVersions, ", "))}
	}
	seen := map[string]bool{}
	for i, v := range versions {
		if seen[v] {
			errs = append(errs, field.Invalid(p.Index(i), v, "duplicate version"))
			continue
		}
		seen[v] = true
		for _, msg := range validation.IsDNS1035Label(v) {
			errs = append(errs, field.Invalid(p.Index(i), v, msg))
		}
	}
	if requireRecognized && len(versions) > 0 && !hasRecognizedVersion(versions) {
		errs = append(errs, field.Invalid(p, versions, "must include at least one of "+strings.Join(reviewVersions, ", ")))
	}
	return errs
}

func validateClientConfig(cc *admissionregistrationv1.WebhookClientConfig, p *field.Path) field.ErrorList {
	switch {
	case (cc.URL == nil) == (cc.Service == nil):
		return field.ErrorList{field.Required(p, "exactly one of url or service is required")}
	case cc.URL != nil:
		return ValidateWebhookURL(*cc.URL, p.Child("url"))
	}
	port := int32(443)
	if cc.Service.Port != nil {
		port = *cc.Service.Port
	}
	return ValidateWebhookService(cc.Service.Name, cc.Service.Namespace, cc.Service.Path, port, p.Child("service"))
}

// maxMatchConditions is upstream's limit per webhook.
const maxMatchConditions = 64

func validateMatchConditions(conds []admissionregistrationv1.MatchCondition, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(conds) > maxMatchConditions {
		errs = append(errs, field.TooMany(p, len(conds), maxMatchConditions))
	}
	names := map[string]bool{}
	for i, c := range conds {
		cp := p.Index(i)
		switch {
		case c.Name == "":
			errs = append(errs, field.Required(cp.Child("name"), ""))
		case names[c.Name]:
			errs = append(errs, field.Duplicate(cp.Child("name"), c.Name))
		default:
			for _, msg := range validation.IsQualifiedName(c.Name) {
				errs = append(errs, field.Invalid(cp.Child("name"), c.Name, msg))
			}
		}
		names[c.Name] = true
		if strings.TrimSpace(c.Expression) == "" {
			errs = append(errs, field.Required(cp.Child("expression"), ""))
			continue
		}
		if _, err := cel.CompileCondition(c.Expression); err != nil {
			errs = append(errs, field.Invalid(cp.Child("expression"), c.Expression, err.Error()))
		}
	}
	return errs
}
