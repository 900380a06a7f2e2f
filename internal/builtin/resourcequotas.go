package builtin

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/registry"
)

// ResourceQuotas is the core v1 resourcequotas resource. The server
// keeps their status (internal/server's quota controller) and refuses
// creates that would exceed them (its quota admission), for the object
// counts of what it serves; compute and storage resources, which only
// pods and volume claims use, stay at 0 here.
func ResourceQuotas() *registry.Definition {
	k := kindDef{
		version: "v1", resource: "resourcequotas", kind: "ResourceQuota",
		shortNames: []string{"quota"}, scope: registry.Namespaced, status: true,
		statusMetadata: registry.UserMetadata, noGeneration: true,
	}
	return k.definition(resourceQuotaHooks{kindHooksNoGeneration[corev1.ResourceQuota, resourceQuotaRules]{kindHooks: newKindHooks[corev1.ResourceQuota](k, resourceQuotaRules{})}})
}

type resourceQuotaHooks struct {
	kindHooksNoGeneration[corev1.ResourceQuota, resourceQuotaRules]
}

// ReturnDeletedObject: as upstream's store, a delete answers with the
// ResourceQuota.
func (resourceQuotaHooks) ReturnDeletedObject() {}

type resourceQuotaRules struct{}

func (resourceQuotaRules) defaults(*corev1.ResourceQuota) {}

// validate is upstream's check of a quota's spec (and of the status a
// create carries, which the create then drops): resource names a quota
// knows, non-negative amounts, whole numbers for counts, scopes that
// apply to the resources, and scopes unchanged by an update.
func (r resourceQuotaRules) validate(q, was *corev1.ResourceQuota) field.ErrorList {
	return uniqueErrors(r.validateAll(q, was))
}

// uniqueErrors drops the repeats of an error: a scope wrong for two
// resources is reported once, as kube-apiserver answers.
func uniqueErrors(errs field.ErrorList) field.ErrorList {
	seen := map[string]bool{}
	out := errs[:0]
	for _, e := range errs {
		if k := e.Error(); !seen[k] {
			seen[k] = true
			out = append(out, e)
		}
	}
	return out
}

func (resourceQuotaRules) validateAll(q, was *corev1.ResourceQuota) field.ErrorList {
	sp := field.NewPath("spec")
	errs := validateQuotaList(q.Spec.Hard, sp.Child("hard"))
	errs = append(errs, validateQuotaScopes(&q.Spec, sp)...)
	errs = append(errs, validateQuotaScopeSelector(&q.Spec, sp)...)
	if was == nil {
		st := field.NewPath("status")
		errs = append(errs, validateQuotaList(q.Status.Hard, st.Child("hard"))...)
		return append(errs, validateQuotaList(q.Status.Used, st.Child("used"))...)
	}
	if !sets.New(q.Spec.Scopes...).Equal(sets.New(was.Spec.Scopes...)) {
		errs = append(errs, field.Invalid(sp.Child("scopes"), q.Spec.Scopes, "field is immutable"))
	}
	return errs
}

func (resourceQuotaRules) validateStatus(q *corev1.ResourceQuota) field.ErrorList {
	st := field.NewPath("status")
	return append(validateQuotaList(q.Status.Hard, st.Child("hard")), validateQuotaList(q.Status.Used, st.Child("used"))...)
}

// validateQuotaList checks the names and amounts of a quota's list, in
// the names' order, as upstream's messages come.
func validateQuotaList(l corev1.ResourceList, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, name := range slices.Sorted(maps.Keys(l)) {
		rp, v := p.Key(string(name)), l[name]
		errs = append(errs, validateQuotaResourceName(name, rp)...)
		if v.Cmp(resource.Quantity{}) < 0 {
			errs = append(errs, field.Invalid(rp, v.String(), apivalidation.IsNegativeErrorMsg))
		}
		if isIntegerQuotaResource(name) && v.MilliValue()%1000 != 0 {
			errs = append(errs, field.Invalid(rp, v, "must be an integer"))
		}
	}
	return errs
}

// validateResourceName is upstream's check of any resource name: a
// qualified name, and unqualified one upstream knows.
func validateResourceName(name corev1.ResourceName, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(string(name)) {
		errs = append(errs, field.Invalid(p, name, msg))
	}
	if len(errs) == 0 && !strings.Contains(string(name), "/") && !standardResourceNames.Has(name) && !isQuotaHugePages(name) {
		errs = append(errs, field.Invalid(p, name, "must be a standard resource type or fully qualified"))
	}
	return errs
}

// validateQuotaResourceName: a resource name, unqualified one a quota
// counts.
func validateQuotaResourceName(name corev1.ResourceName, p *field.Path) field.ErrorList {
	errs := validateResourceName(name, p)
	if !strings.Contains(string(name), "/") && !IsStandardQuotaResource(name) {
		errs = append(errs, field.Invalid(p, name, "must be a standard resource for quota"))
	}
	return errs
}

// IsStandardQuotaResource reports whether an unqualified name is one a
// quota may limit.
func IsStandardQuotaResource(name corev1.ResourceName) bool {
	return standardQuotaResources.Has(name) || isQuotaHugePages(name)
}

func isQuotaHugePages(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) || strings.HasPrefix(string(name), corev1.ResourceRequestsHugePagesPrefix)
}

// isIntegerQuotaResource: object counts, and extended resources.
func isIntegerQuotaResource(name corev1.ResourceName) bool {
	return integerQuotaResources.Has(name) || isExtendedResource(name)
}

// The resource names upstream knows, those a quota limits, and those
// counted in whole numbers.
var (
	podComputeQuotaResources = sets.New(corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceLimitsCPU,
		corev1.ResourceLimitsMemory, corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory)
	integerQuotaResources = sets.New(corev1.ResourcePods, corev1.ResourceQuotas, corev1.ResourceServices,
		corev1.ResourceReplicationControllers, corev1.ResourceSecrets, corev1.ResourceConfigMaps,
		corev1.ResourcePersistentVolumeClaims, corev1.ResourceServicesNodePorts, corev1.ResourceServicesLoadBalancers)
	standardQuotaResources = podComputeQuotaResources.Union(integerQuotaResources).Insert(
		corev1.ResourceEphemeralStorage, corev1.ResourceRequestsStorage, corev1.ResourceRequestsEphemeralStorage,
		corev1.ResourceLimitsEphemeralStorage)
	standardResourceNames = standardQuotaResources.Union(sets.New(corev1.ResourceStorage))
)

// quotaScopes are the scopes upstream knows.
var quotaScopes = sets.New(corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating,
	corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort, corev1.ResourceQuotaScopePriorityClass,
	corev1.ResourceQuotaScopeVolumeAttributesClass, corev1.ResourceQuotaScopeCrossNamespacePodAffinity)

// scopeAppliesTo reports whether a quota of scope may limit the standard
// resource name: pod scopes limit pods and their compute, the volume
// attributes class scope claims and their storage.
func scopeAppliesTo(scope corev1.ResourceQuotaScope, name corev1.ResourceName) bool {
	switch scope {
	case corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating, corev1.ResourceQuotaScopeNotBestEffort,
		corev1.ResourceQuotaScopePriorityClass, corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return name == corev1.ResourcePods || podComputeQuotaResources.Has(name)
	case corev1.ResourceQuotaScopeBestEffort:
		return name == corev1.ResourcePods
	case corev1.ResourceQuotaScopeVolumeAttributesClass:
		return name == corev1.ResourcePersistentVolumeClaims || name == corev1.ResourceRequestsStorage
	}
	return true
}

// conflictingScopes are the pairs no quota may hold both of.
var conflictingScopes = [][2]corev1.ResourceQuotaScope{
	{corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort},
	{corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating},
}

// scopeErrors are the errors of scope against the quota's resources, at
// p with the value bad; an unknown scope is reported by the caller.
func scopeErrors(scope corev1.ResourceQuotaScope, hard corev1.ResourceList, p *field.Path, bad any) field.ErrorList {
	var errs field.ErrorList
	for _, name := range slices.Sorted(maps.Keys(hard)) {
		if IsStandardQuotaResource(name) && !scopeAppliesTo(scope, name) {
			errs = append(errs, field.Invalid(p, bad, "unsupported scope applied to resource"))
		}
	}
	return errs
}

func conflictErrors(scopes sets.Set[corev1.ResourceQuotaScope], p *field.Path, bad any) field.ErrorList {
	var errs field.ErrorList
	for _, pair := range conflictingScopes {
		if scopes.HasAll(pair[0], pair[1]) {
			errs = append(errs, field.Invalid(p, bad, "conflicting scopes"))
		}
	}
	return errs
}

func validateQuotaScopes(s *corev1.ResourceQuotaSpec, p *field.Path) field.ErrorList {
	if len(s.Scopes) == 0 {
		return nil
	}
	sp := p.Child("scopes")
	var errs field.ErrorList
	for _, scope := range s.Scopes {
		if !quotaScopes.Has(scope) {
			errs = append(errs, field.Invalid(sp, s.Scopes, "unsupported scope"))
		}
		errs = append(errs, scopeErrors(scope, s.Hard, sp, s.Scopes)...)
	}
	return append(errs, conflictErrors(sets.New(s.Scopes...), sp, s.Scopes)...)
}

// podOnlyScopes take the Exists operator alone in a scope selector.
var podOnlyScopes = sets.New(corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort,
	corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating, corev1.ResourceQuotaScopeCrossNamespacePodAffinity)

// scopeSelectorValue is a scope selector as upstream's errors quote it:
// its internal type, whose fields have no JSON names.
type scopeSelectorValue struct {
	MatchExpressions []scopeRequirementValue
}

type scopeRequirementValue struct {
	ScopeName corev1.ResourceQuotaScope
	Operator  corev1.ScopeSelectorOperator
	Values    []string
}

func quotedSelector(s *corev1.ScopeSelector) *scopeSelectorValue {
	v := &scopeSelectorValue{}
	for _, r := range s.MatchExpressions {
		v.MatchExpressions = append(v.MatchExpressions, scopeRequirementValue{ScopeName: r.ScopeName, Operator: r.Operator, Values: r.Values})
	}
	return v
}

func validateQuotaScopeSelector(s *corev1.ResourceQuotaSpec, p *field.Path) field.ErrorList {
	if s.ScopeSelector == nil {
		return nil
	}
	mp := p.Child("scopeSelector", "matchExpressions")
	var errs field.ErrorList
	scopes := sets.New[corev1.ResourceQuotaScope]()
	for _, req := range s.ScopeSelector.MatchExpressions {
		if !quotaScopes.Has(req.ScopeName) {
			errs = append(errs, field.Invalid(mp.Child("scopeName"), req.ScopeName, "unsupported scope"))
		}
		errs = append(errs, scopeErrors(req.ScopeName, s.Hard, mp, quotedSelector(s.ScopeSelector))...)
		if podOnlyScopes.Has(req.ScopeName) && req.Operator != corev1.ScopeSelectorOpExists {
			errs = append(errs, field.Invalid(mp.Child("operator"), req.Operator,
				"must be 'Exists' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity"))
		}
		switch req.Operator {
		case corev1.ScopeSelectorOpIn, corev1.ScopeSelectorOpNotIn:
			if len(req.Values) == 0 {
				errs = append(errs, field.Required(mp.Child("values"), "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector"))
			}
		case corev1.ScopeSelectorOpExists, corev1.ScopeSelectorOpDoesNotExist:
			if len(req.Values) != 0 {
				errs = append(errs, field.Invalid(mp.Child("values"), req.Values, "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector"))
			}
		default:
			errs = append(errs, field.Invalid(mp.Child("operator"), req.Operator, "not a valid selector operator"))
		}
		scopes.Insert(req.ScopeName)
	}
	return append(errs, conflictErrors(scopes, mp, s.Scopes)...)
}

func (resourceQuotaRules) columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Request", Type: "string", Description: "Request represents a minimum amount of cpu/memory that a container may consume."},
		{Name: "Limit", Type: "string", Description: "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node."},
		ageColumn,
	}
}

// cells gives, as upstream's printer, each resource of the status's hard
// list as "name: used/hard", those named limits.* under Limit.
func (resourceQuotaRules) cells(q *corev1.ResourceQuota) []any {
	var request, limit []string
	for _, name := range slices.Sorted(maps.Keys(q.Status.Hard)) {
		used, hard := q.Status.Used[name], q.Status.Hard[name]
		cell := fmt.Sprintf("%s: %s/%s", name, used.String(), hard.String())
		if first, _, ok := strings.Cut(string(name), "."); ok && first == "limits" {
			limit = append(limit, cell)
		} else {
			request = append(request, cell)
		}
	}
	return []any{q.Name, strings.Join(request, ", "), strings.Join(limit, ", "), age(&q.ObjectMeta)}
}
