package builtin

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/registry"
)

// LimitRanges is the core v1 limitranges resource: stored with upstream's
// defaults and validation. Upstream's LimitRanger admission applies them
// to pods and volume claims, which are not served here, so nothing else
// reads them.
func LimitRanges() *registry.Definition {
	return define[corev1.LimitRange](kindDef{
		version: "v1", resource: "limitranges", kind: "LimitRange",
		shortNames: []string{"limits"}, scope: registry.Namespaced, noGeneration: true, createOnUpdate: true,
	}, limitRangeRules{})
}

type limitRangeRules struct{}

// defaults are upstream's v1 defaults of a Container limit: the default
// limit from the max, the default request from the default limit, else
// from the min. A LimitRange without a name is named by a UUID (upstream's
// strategy names it so, generateName or not).
func (limitRangeRules) defaults(lr *corev1.LimitRange) {
	if lr.Name == "" {
		lr.Name = string(uuid.NewUUID())
	}
	for i := range lr.Spec.Limits {
		l := &lr.Spec.Limits[i]
		if l.Type != corev1.LimitTypeContainer {
			continue
		}
		if l.Default == nil {
			l.Default = corev1.ResourceList{}
		}
		if l.DefaultRequest == nil {
			l.DefaultRequest = corev1.ResourceList{}
		}
		for _, from := range []struct{ src, dst corev1.ResourceList }{{l.Max, l.Default}, {l.Default, l.DefaultRequest}, {l.Min, l.DefaultRequest}} {
			for k, v := range from.src {
				if _, ok := from.dst[k]; !ok {
					from.dst[k] = v.DeepCopy()
				}
			}
		}
	}
}

// validate is upstream's: known limit types, each once; resource names
// each type takes; min ≤ default request ≤ default ≤ max; ratios of at
// least 1 and at most max/min; defaults equal to default requests for what
// may not be overcommitted. Errors come in the names' order.
func (limitRangeRules) validate(lr, _ *corev1.LimitRange) field.ErrorList {
	var errs field.ErrorList
	types := map[corev1.LimitType]bool{}
	for i := range lr.Spec.Limits {
		p, l := field.NewPath("spec", "limits").Index(i), &lr.Spec.Limits[i]
		errs = append(errs, validateLimitType(l.Type, p.Child("type"))...)
		if types[l.Type] {
			errs = append(errs, field.Duplicate(p.Child("type"), l.Type))
		}
		types[l.Type] = true
		names := func(l corev1.ResourceList, child string) {
			for _, k := range slices.Sorted(maps.Keys(l)) {
				errs = append(errs, validateLimitResourceName(lr.Spec.Limits[i].Type, k, p.Child(child).Key(string(k)))...)
			}
		}
		names(l.Max, "max")
		names(l.Min, "min")
		if l.Type == corev1.LimitTypePod {
			if len(l.Default) > 0 {
				errs = append(errs, field.Forbidden(p.Child("default"), "may not be specified when `type` is 'Pod'"))
			}
			if len(l.DefaultRequest) > 0 {
				errs = append(errs, field.Forbidden(p.Child("defaultRequest"), "may not be specified when `type` is 'Pod'"))
			}
		} else {
			names(l.Default, "default")
			names(l.DefaultRequest, "defaultRequest")
		}
		if l.Type == corev1.LimitTypePersistentVolumeClaim {
			_, hasMin := l.Min[corev1.ResourceStorage]
			_, hasMax := l.Max[corev1.ResourceStorage]
			if !hasMin && !hasMax {
				errs = append(errs, field.Required(p.Child("limits"), "either minimum or maximum storage value is required, but neither was provided"))
			}
		}
		names(l.MaxLimitRequestRatio, "maxLimitRequestRatio")
		errs = append(errs, validateLimitAmounts(l, p)...)
	}
	return errs
}

// validateLimitAmounts checks how one limit's amounts of each resource
// stand to each other.
func validateLimitAmounts(l *corev1.LimitRangeItem, p *field.Path) field.ErrorList {
	defaults, defaultRequests := l.Default, l.DefaultRequest
	if l.Type == corev1.LimitTypePod {
		defaults, defaultRequests = nil, nil
	}
	keys := map[corev1.ResourceName]bool{}
	for _, list := range []corev1.ResourceList{l.Max, l.Min, defaults, defaultRequests, l.MaxLimitRequestRatio} {
		for k := range list {
			keys[k] = true
		}
	}
	var errs field.ErrorList
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		min, hasMin := l.Min[k]
		max, hasMax := l.Max[k]
		def, hasDef := defaults[k]
		req, hasReq := defaultRequests[k]
		ratio, hasRatio := l.MaxLimitRequestRatio[k]
		invalid := func(child string, v resource.Quantity, format string, args ...any) {
			errs = append(errs, field.Invalid(p.Child(child).Key(string(k)), v, fmt.Sprintf(format, args...)))
		}
		if hasMin && hasMax && min.Cmp(max) > 0 {
			invalid("min", min, "min value %s is greater than max value %s", min.String(), max.String())
		}
		if hasReq && hasMin && min.Cmp(req) > 0 {
			invalid("defaultRequest", req, "min value %s is greater than default request value %s", min.String(), req.String())
		}
		if hasReq && hasMax && req.Cmp(max) > 0 {
			invalid("defaultRequest", req, "default request value %s is greater than max value %s", req.String(), max.String())
		}
		if hasReq && hasDef && req.Cmp(def) > 0 {
			invalid("defaultRequest", req, "default request value %s is greater than default limit value %s", req.String(), def.String())
		}
		if hasDef && hasMin && min.Cmp(def) > 0 {
			invalid("default", min, "min value %s is greater than default value %s", min.String(), def.String())
		}
		if hasDef && hasMax && def.Cmp(max) > 0 {
			invalid("default", max, "default value %s is greater than max value %s", def.String(), max.String())
		}
		if hasRatio && ratio.Cmp(*resource.NewQuantity(1, resource.DecimalSI)) < 0 {
			invalid("maxLimitRequestRatio", ratio, "ratio %s is less than 1", ratio.String())
		}
		if hasRatio && hasMin && hasMax {
			ratioValue, minValue, maxValue := float64(ratio.Value()), min.Value(), max.Value()
			if ratio.Value() < resource.MaxMilliValue && minValue < resource.MaxMilliValue && maxValue < resource.MaxMilliValue {
				ratioValue, minValue, maxValue = float64(ratio.MilliValue())/1000, min.MilliValue(), max.MilliValue()
			}
			if limit := float64(maxValue) / float64(minValue); ratioValue > limit {
				invalid("maxLimitRequestRatio", ratio, "ratio %s is greater than max/min = %f", ratio.String(), limit)
			}
		}
		if !overcommitAllowed(k) && hasDef && hasReq && def.Cmp(req) != 0 {
			invalid("defaultRequest", req, "default value %s must equal to defaultRequest value %s in %s", def.String(), req.String(), k)
		}
	}
	return errs
}

// overcommitAllowed: native resources but huge pages.
func overcommitAllowed(name corev1.ResourceName) bool {
	s := string(name)
	native := !strings.Contains(s, "/") || strings.Contains(s, corev1.ResourceDefaultNamespacePrefix)
	return native && !strings.HasPrefix(s, corev1.ResourceHugePagesPrefix)
}

var limitTypes = []corev1.LimitType{corev1.LimitTypePod, corev1.LimitTypeContainer, corev1.LimitTypePersistentVolumeClaim}

func validateLimitType(t corev1.LimitType, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(string(t)) {
		errs = append(errs, field.Invalid(p, t, msg))
	}
	if len(errs) == 0 && !strings.Contains(string(t), "/") && !slices.Contains(limitTypes, t) {
		errs = append(errs, field.Invalid(p, t, "must be a standard limit type or fully qualified"))
	}
	return errs
}

// validateLimitResourceName: what a Pod or Container limit may name are
// container resources; other types any resource name.
func validateLimitResourceName(t corev1.LimitType, name corev1.ResourceName, p *field.Path) field.ErrorList {
	errs := validateResourceName(name, p)
	if t != corev1.LimitTypePod && t != corev1.LimitTypeContainer {
		return errs
	}
	s := string(name)
	switch {
	case !strings.Contains(s, "/"):
		if name != corev1.ResourceCPU && name != corev1.ResourceMemory && name != corev1.ResourceEphemeralStorage &&
			!strings.HasPrefix(s, corev1.ResourceHugePagesPrefix) {
			errs = append(errs, field.Invalid(p, name, "must be a standard resource for containers"))
		}
	case !strings.Contains(s, corev1.ResourceDefaultNamespacePrefix) && !isExtendedResource(name):
		errs = append(errs, field.Invalid(p, name, "doesn't follow extended resource name standard"))
	}
	return errs
}

// isExtendedResource: a qualified name outside kubernetes.io, not a
// request, valid as a quota's requests.<name>.
func isExtendedResource(name corev1.ResourceName) bool {
	s := string(name)
	if !strings.Contains(s, "/") || strings.Contains(s, corev1.ResourceDefaultNamespacePrefix) || strings.HasPrefix(s, corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(corev1.DefaultResourceRequestsPrefix+s)) == 0
}

// No printer upstream: the default Name and Created At.
func (limitRangeRules) columns() []metav1.TableColumnDefinition { return roleColumns() }

func (limitRangeRules) cells(lr *corev1.LimitRange) []any {
	return []any{lr.Name, lr.CreationTimestamp.UTC().Format("2006-01-02T15:04:05Z")}
}
