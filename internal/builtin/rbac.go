package builtin

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/registry"
)

// The rbac.authorization.k8s.io/v1 resources: Roles and ClusterRoles hold
// rules, RoleBindings and ClusterRoleBindings grant them to subjects. The
// rbac package decides requests from them; what lives here is their shape:
// upstream's defaults, validation and table columns. Guard, when set,
// refuses writes that would grant more than the writer holds (escalation
// prevention), as upstream's policy-based storage does.

// RBACGroup is the group of the RBAC resources.
const RBACGroup = rbacv1.GroupName

// EscalationGuard refuses RBAC writes that would grant permissions the
// writer does not hold. ctx carries the writer (authn.UserFrom) and the
// request (request.InfoFrom). An error is the 403 the client reads.
type EscalationGuard interface {
	// CheckRole checks a Role or ClusterRole named name in namespace
	// ("" for a ClusterRole) holding rules; aggregated says the
	// ClusterRole has, or had, an aggregationRule (which can gather
	// anything).
	CheckRole(ctx context.Context, namespace, name string, rules []rbacv1.PolicyRule, aggregated bool) error
	// CheckBinding checks a RoleBinding or ClusterRoleBinding named name
	// in namespace ("" for a ClusterRoleBinding) that binds ref.
	CheckBinding(ctx context.Context, namespace, name string, ref rbacv1.RoleRef) error
}

// Roles is the roles resource.
func Roles(g EscalationGuard) *registry.Definition {
	return rbacDefinition("roles", "Role", registry.Namespaced, roleHooks{stored: newStored[rbacv1.Role]("Role", "v1"), guard: g})
}

// ClusterRoles is the clusterroles resource.
func ClusterRoles(g EscalationGuard) *registry.Definition {
	return rbacDefinition("clusterroles", "ClusterRole", registry.Cluster, clusterRoleHooks{stored: newStored[rbacv1.ClusterRole]("ClusterRole", "v1"), guard: g})
}

// RoleBindings is the rolebindings resource.
func RoleBindings(g EscalationGuard) *registry.Definition {
	return rbacDefinition("rolebindings", "RoleBinding", registry.Namespaced, roleBindingHooks{stored: newStored[rbacv1.RoleBinding]("RoleBinding", "v1"), guard: g})
}

// ClusterRoleBindings is the clusterrolebindings resource.
func ClusterRoleBindings(g EscalationGuard) *registry.Definition {
	return rbacDefinition("clusterrolebindings", "ClusterRoleBinding", registry.Cluster, clusterRoleBindingHooks{stored: newStored[rbacv1.ClusterRoleBinding]("ClusterRoleBinding", "v1"), guard: g})
}

func rbacDefinition(resource, kind string, scope registry.Scope, hooks any) *registry.Definition {
	def := v1Definition(RBACGroup, resource, kind, scope, hooks)
	def.CreateOnUpdate = true // `kubectl replace` of a missing role creates it
	return def
}

// v1Definition is a built-in served and stored at v1 only.
func v1Definition(group, resource, kind string, scope registry.Scope, hooks any) *registry.Definition {
	return &registry.Definition{
		Group:    group,
		Resource: resource,
		Singular: strings.ToLower(kind),
		Kind:     kind,
		ListKind: kind + "List",
		Scope:    scope,
		Versions: []registry.Version{{Name: "v1", Served: true, Storage: true}},
		Hooks:    hooks,
	}
}

// rbacName is upstream's rule for the names of RBAC objects: anything
// that is a path segment (they name users' roles, "system:..." included).
type rbacName struct{}

var _ registry.NameValidator = rbacName{}

func (rbacName) ValidateName(name string, prefix bool) []string {
	return content.IsPathSegmentName(name)
}

type roleHooks struct {
	stored[rbacv1.Role]
	noGeneration
	rbacName
	guard EscalationGuard
}

type clusterRoleHooks struct {
	stored[rbacv1.ClusterRole]
	noGeneration
	rbacName
	guard EscalationGuard
}

type roleBindingHooks struct {
	stored[rbacv1.RoleBinding]
	noGeneration
	rbacName
	guard EscalationGuard
}

type clusterRoleBindingHooks struct {
	stored[rbacv1.ClusterRoleBinding]
	noGeneration
	rbacName
	guard EscalationGuard
}

var (
	_ registry.Validator     = roleHooks{}
	_ registry.Validator     = clusterRoleHooks{}
	_ registry.Validator     = roleBindingHooks{}
	_ registry.Validator     = clusterRoleBindingHooks{}
	_ registry.TablePrinter  = roleHooks{}
	_ registry.TablePrinter  = clusterRoleHooks{}
	_ registry.TablePrinter  = roleBindingHooks{}
	_ registry.TablePrinter  = clusterRoleBindingHooks{}
	_ registry.WriteChecker  = roleHooks{}
	_ registry.WriteChecker  = clusterRoleHooks{}
	_ registry.WriteChecker  = roleBindingHooks{}
	_ registry.WriteChecker  = clusterRoleBindingHooks{}
	_ registry.NoGeneration  = roleHooks{}
	_ registry.NameValidator = roleBindingHooks{}
	_ registry.Defaulter     = roleBindingHooks{}
	_ registry.Defaulter     = clusterRoleBindingHooks{}
)

// The bindings' defaults, as upstream's v1 defaulting sets them: roleRef
// and User and Group subjects are in the RBAC group.

// Default is applied before the writer's fields are recorded, so that the
// writer owns the defaults; PrepareForCreate and PrepareForUpdate apply it
// again, after mutating admission.
func (h roleBindingHooks) Default(obj map[string]any) {
	h.rewrite(obj, func(b *rbacv1.RoleBinding) { defaultRBACBinding(&b.RoleRef, b.Subjects) })
}

func (h roleBindingHooks) PrepareForCreate(obj map[string]any)      { h.Default(obj) }
func (h roleBindingHooks) PrepareForUpdate(obj, old map[string]any) { h.Default(obj) }

func (h clusterRoleBindingHooks) Default(obj map[string]any) {
	h.rewrite(obj, func(b *rbacv1.ClusterRoleBinding) { defaultRBACBinding(&b.RoleRef, b.Subjects) })
}

func (h clusterRoleBindingHooks) PrepareForCreate(obj map[string]any)      { h.Default(obj) }
func (h clusterRoleBindingHooks) PrepareForUpdate(obj, old map[string]any) { h.Default(obj) }

func defaultRBACBinding(ref *rbacv1.RoleRef, subjects []rbacv1.Subject) {
	if ref.APIGroup == "" {
		ref.APIGroup = RBACGroup
	}
	for i := range subjects {
		s := &subjects[i]
		if s.APIGroup == "" && (s.Kind == rbacv1.UserKind || s.Kind == rbacv1.GroupKind) {
			s.APIGroup = RBACGroup
		}
	}
}

func (h roleHooks) Validate(obj map[string]any) field.ErrorList {
	r, _, err := h.Decode(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return validateRules(r.Rules, true)
}

func (h roleHooks) ValidateUpdate(obj, old map[string]any) field.ErrorList { return h.Validate(obj) }

func (h clusterRoleHooks) Validate(obj map[string]any) field.ErrorList {
	r, _, err := h.Decode(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return validateClusterRole(r, false)
}

// ValidateUpdate lets a stored aggregation rule whose selectors hold
// label values upstream now refuses keep them, as upstream does.
func (h clusterRoleHooks) ValidateUpdate(obj, old map[string]any) field.ErrorList {
	r, was, err := h.decodeUpdate(obj, old)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return validateClusterRole(r, invalidSelectorValues(was))
}

func invalidSelectorValues(r *rbacv1.ClusterRole) bool {
	if r.AggregationRule == nil {
		return false
	}
	for i := range r.AggregationRule.ClusterRoleSelectors {
		if len(metav1validation.ValidateLabelSelector(&r.AggregationRule.ClusterRoleSelectors[i], metav1validation.LabelSelectorValidationOptions{}, nil)) > 0 {
			return true
		}
	}
	return false
}

func validateClusterRole(r *rbacv1.ClusterRole, allowInvalidValues bool) field.ErrorList {
	errs := validateRules(r.Rules, false)
	if r.AggregationRule == nil {
		return errs
	}
	p := field.NewPath("aggregationRule", "clusterRoleSelectors")
	if len(r.AggregationRule.ClusterRoleSelectors) == 0 {
		errs = append(errs, field.Required(p, "at least one clusterRoleSelector required if aggregationRule is non-nil"))
	}
	opts := metav1validation.LabelSelectorValidationOptions{AllowInvalidLabelValueInSelector: allowInvalidValues}
	for i := range r.AggregationRule.ClusterRoleSelectors {
		sel := &r.AggregationRule.ClusterRoleSelectors[i]
		errs = append(errs, metav1validation.ValidateLabelSelector(sel, opts, p.Index(i))...)
		if s, err := metav1.LabelSelectorAsSelector(sel); err != nil {
			errs = append(errs, field.Invalid(p.Index(i), s, "invalid label selector."))
		}
	}
	return errs
}

// validateRules checks the rules of a Role (namespaced) or ClusterRole.
func validateRules(rules []rbacv1.PolicyRule, namespaced bool) field.ErrorList {
	var errs field.ErrorList
	for i, rule := range rules {
		p := field.NewPath("rules").Index(i)
		if len(rule.Verbs) == 0 {
			errs = append(errs, field.Required(p.Child("verbs"), ""))
		}
		if len(rule.NonResourceURLs) > 0 {
			if namespaced {
				errs = append(errs, field.Invalid(p.Child("nonResourceURLs"), rule.NonResourceURLs, "namespaced rules cannot apply to non-resource URLs"))
			}
			if len(rule.APIGroups) > 0 || len(rule.Resources) > 0 || len(rule.ResourceNames) > 0 {
				errs = append(errs, field.Invalid(p.Child("nonResourceURLs"), rule.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
			}
			continue
		}
		if len(rule.APIGroups) == 0 {
			errs = append(errs, field.Required(p.Child("apiGroups"), "resource rules must supply at least one api group"))
		}
		if len(rule.Resources) == 0 {
			errs = append(errs, field.Required(p.Child("resources"), "resource rules must supply at least one resource"))
		}
	}
	return errs
}

func (h roleBindingHooks) Validate(obj map[string]any) field.ErrorList {
	b, _, err := h.Decode(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return validateBinding(b.RoleRef, b.Subjects, true)
}

func (h roleBindingHooks) ValidateUpdate(obj, old map[string]any) field.ErrorList {
	b, was, err := h.decodeUpdate(obj, old)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return append(validateBinding(b.RoleRef, b.Subjects, true), immutableRoleRef(b.RoleRef, was.RoleRef)...)
}

func (h clusterRoleBindingHooks) Validate(obj map[string]any) field.ErrorList {
	b, _, err := h.Decode(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return validateBinding(b.RoleRef, b.Subjects, false)
}

func (h clusterRoleBindingHooks) ValidateUpdate(obj, old map[string]any) field.ErrorList {
	b, was, err := h.decodeUpdate(obj, old)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return append(validateBinding(b.RoleRef, b.Subjects, false), immutableRoleRef(b.RoleRef, was.RoleRef)...)
}

// immutableRoleRef refuses changing what a binding grants: a binding is
// deleted and created again instead, which the escalation checks see.
func immutableRoleRef(now, was rbacv1.RoleRef) field.ErrorList {
	if now == was {
		return nil
	}
	return field.ErrorList{field.Invalid(field.NewPath("roleRef"), now, apimachineryvalidation.FieldImmutableErrorMsg)}
}

// validateBinding checks a RoleBinding's (namespaced) or
// ClusterRoleBinding's roleRef and subjects.
func validateBinding(ref rbacv1.RoleRef, subjects []rbacv1.Subject, namespaced bool) field.ErrorList {
	var errs field.ErrorList
	rp := field.NewPath("roleRef")
	if ref.APIGroup != RBACGroup {
		errs = append(errs, field.NotSupported(rp.Child("apiGroup"), ref.APIGroup, []string{RBACGroup}))
	}
	kinds := []string{"ClusterRole"}
	if namespaced {
		kinds = []string{"Role", "ClusterRole"}
	}
	if ref.Kind != "ClusterRole" && (!namespaced || ref.Kind != "Role") {
		errs = append(errs, field.NotSupported(rp.Child("kind"), ref.Kind, kinds))
	}
	if ref.Name == "" {
		errs = append(errs, field.Required(rp.Child("name"), ""))
	} else {
		for _, msg := range content.IsPathSegmentName(ref.Name) {
			errs = append(errs, field.Invalid(rp.Child("name"), ref.Name, msg))
		}
	}
	for i, s := range subjects {
		errs = append(errs, validateSubject(s, namespaced, field.NewPath("subjects").Index(i))...)
	}
	return errs
}

func validateSubject(s rbacv1.Subject, namespaced bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	}
	switch s.Kind {
	case rbacv1.ServiceAccountKind:
		if s.Name != "" {
			for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(s.Name, false) {
				errs = append(errs, field.Invalid(p.Child("name"), s.Name, msg))
			}
		}
		if s.APIGroup != "" {
			errs = append(errs, field.NotSupported(p.Child("apiGroup"), s.APIGroup, []string{""}))
		}
		if !namespaced && s.Namespace == "" {
			errs = append(errs, field.Required(p.Child("namespace"), ""))
		}
	case rbacv1.UserKind, rbacv1.GroupKind:
		if s.APIGroup != RBACGroup {
			errs = append(errs, field.NotSupported(p.Child("apiGroup"), s.APIGroup, []string{RBACGroup}))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("kind"), s.Kind, []string{rbacv1.ServiceAccountKind, rbacv1.UserKind, rbacv1.GroupKind}))
	}
	return errs
}

// Escalation prevention: the checks run once mutating admission is done
// and before validation, where upstream's policy-based storage runs them.

func (h roleHooks) CheckWrite(ctx context.Context, obj, old map[string]any) error {
	r, _, err := h.Decode(obj)
	if err != nil || h.guard == nil || onlyGCFields(obj, old) {
		return nil // an undecodable body is CheckType's to refuse
	}
	return h.guard.CheckRole(ctx, r.Namespace, r.Name, r.Rules, false)
}

func (h clusterRoleHooks) CheckWrite(ctx context.Context, obj, old map[string]any) error {
	r, _, err := h.Decode(obj)
	if err != nil || h.guard == nil || onlyGCFields(obj, old) {
		return nil
	}
	aggregated := r.AggregationRule != nil
	if old != nil {
		if was, _, err := h.Decode(old); err == nil && was.AggregationRule != nil {
			aggregated = true
		}
	}
	return h.guard.CheckRole(ctx, "", r.Name, r.Rules, aggregated)
}

func (h roleBindingHooks) CheckWrite(ctx context.Context, obj, old map[string]any) error {
	b, _, err := h.Decode(obj)
	if err != nil || h.guard == nil || onlyGCFields(obj, old) {
		return nil
	}
	defaultRBACBinding(&b.RoleRef, nil)
	return h.guard.CheckBinding(ctx, b.Namespace, b.Name, b.RoleRef)
}

func (h clusterRoleBindingHooks) CheckWrite(ctx context.Context, obj, old map[string]any) error {
	b, _, err := h.Decode(obj)
	if err != nil || h.guard == nil || onlyGCFields(obj, old) {
		return nil
	}
	defaultRBACBinding(&b.RoleRef, nil)
	return h.guard.CheckBinding(ctx, "", b.Name, b.RoleRef)
}

// onlyGCFields reports whether an update changes nothing but the fields
// the garbage collector writes (finalizers, ownerReferences), which
// upstream lets through without escalation checks so that objects anyone
// may delete can be collected.
func onlyGCFields(obj, old map[string]any) bool {
	if old == nil {
		return false
	}
	strip := func(o map[string]any) map[string]any {
		c := maps.Clone(o)
		md, _ := c["metadata"].(map[string]any)
		md = maps.Clone(md)
		for _, f := range []string{"finalizers", "ownerReferences", "resourceVersion", "managedFields", "generation"} {
			delete(md, f)
		}
		c["metadata"] = md
		return c
	}
	return equality.Semantic.DeepEqual(strip(obj), strip(old))
}

// Tables: roles have no printer upstream (the default Name and Created
// At); bindings show their role and, wide, their subjects.

func (roleHooks) TableColumns() []metav1.TableColumnDefinition        { return roleColumns() }
func (roleHooks) TableRow(obj map[string]any) []any                   { return roleRow(obj) }
func (clusterRoleHooks) TableColumns() []metav1.TableColumnDefinition { return roleColumns() }
func (clusterRoleHooks) TableRow(obj map[string]any) []any            { return roleRow(obj) }

func roleColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: objectMetaDocs["name"]},
		{Name: "Created At", Type: "date", Description: objectMetaDocs["creationTimestamp"]},
	}
}

func roleRow(obj map[string]any) []any {
	md, _ := obj["metadata"].(map[string]any)
	created, _ := md["creationTimestamp"].(string)
	if t, err := time.Parse(time.RFC3339, created); err == nil {
		created = t.UTC().Format(time.RFC3339)
	}
	return []any{objectName(obj), created}
}

func (roleBindingHooks) TableColumns() []metav1.TableColumnDefinition {
	return bindingColumns("roleBinding", rbacv1.RoleBinding{}.SwaggerDoc()["roleRef"])
}

func (h roleBindingHooks) TableRow(obj map[string]any) []any {
	b, _, err := h.Decode(obj)
	if err != nil {
		return []any{objectName(obj), "", objectAge(obj), "", "", ""}
	}
	return bindingRow(obj, b.RoleRef, b.Subjects)
}

func (clusterRoleBindingHooks) TableColumns() []metav1.TableColumnDefinition {
	return bindingColumns("clusterRoleBinding", rbacv1.ClusterRoleBinding{}.SwaggerDoc()["roleRef"])
}

func (h clusterRoleBindingHooks) TableRow(obj map[string]any) []any {
	b, _, err := h.Decode(obj)
	if err != nil {
		return []any{objectName(obj), "", objectAge(obj), "", "", ""}
	}
	return bindingRow(obj, b.RoleRef, b.Subjects)
}

// bindingColumns are a binding's columns. Upstream's printer describes
// roleRef without the sentence its type's documentation has since gained.
func bindingColumns(what, roleRefDoc string) []metav1.TableColumnDefinition {
	roleRefDoc = strings.TrimSuffix(roleRefDoc, " This field is immutable.")
	return []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: objectMetaDocs["name"]},
		{Name: "Role", Type: "string", Description: roleRefDoc},
		{Name: "Age", Type: "string", Description: objectMetaDocs["creationTimestamp"]},
		{Name: "Users", Type: "string", Priority: 1, Description: "Users in the " + what},
		{Name: "Groups", Type: "string", Priority: 1, Description: "Groups in the " + what},
		{Name: "ServiceAccounts", Type: "string", Priority: 1, Description: "ServiceAccounts in the " + what},
	}
}

func bindingRow(obj map[string]any, ref rbacv1.RoleRef, subjects []rbacv1.Subject) []any {
	var users, groups, sas []string
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.ServiceAccountKind:
			sas = append(sas, s.Namespace+"/"+s.Name)
		case rbacv1.UserKind:
			users = append(users, s.Name)
		case rbacv1.GroupKind:
			groups = append(groups, s.Name)
		}
	}
	return []any{objectName(obj), fmt.Sprintf("%s/%s", ref.Kind, ref.Name), objectAge(obj),
		strings.Join(users, ", "), strings.Join(groups, ", "), strings.Join(sas, ", ")}
}
