package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"github.com/google/cel-go/cel"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/operation"
	"k8s.io/apimachinery/pkg/api/validate"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// draErrs collects a DRA object's errors in upstream's order. Upstream
// validates these kinds twice: by hand, then declaratively; it drops the
// handwritten errors a declarative rule covers and lists the declarative
// ones last, in the order of the fields of the v1 types (a list's size and
// uniqueness before its items). hv are the first, dv the others.
type draErrs struct{ hv, dv field.ErrorList }

func (e *draErrs) list() field.ErrorList { return append(e.hv, e.dv...) }

// dvOp is the operation the declarative checks are called with: none of
// those used here looks at it but the immutability ones, done apart.
var dvOp = operation.Operation{Type: operation.Create}

// fits reports whether a list of n items is within max (negative: no
// limit); a longer one is refused whole, its items unchecked, as upstream
// refuses it (declaratively when declared).
func (e *draErrs) fits(n, max int, p *field.Path, declared bool) bool {
	if max < 0 || n <= max {
		return true
	}
	err := field.TooMany(p, n, max)
	if declared {
		e.dv = append(e.dv, err)
	} else {
		e.hv = append(e.hv, err)
	}
	return false
}

// uniqueDeclared lists the items of a declared set whose key an earlier
// item has, each quoted whole, as upstream's declarative check does.
func uniqueDeclared[T any, K comparable](e *draErrs, items []T, p *field.Path, key func(T) K) {
	seen := sets.New[K]()
	for i, it := range items {
		k := key(it)
		if seen.Has(k) {
			e.dv = append(e.dv, field.Duplicate(p.Index(i), it))
		}
		seen.Insert(k)
	}
}

// uniqueHandwritten lists the items whose key an earlier item has, each
// by its key, after the items' own errors (upstream's handwritten sets).
func uniqueHandwritten[T any, K comparable](e *draErrs, items []T, p *field.Path, key func(T) K) {
	seen := sets.New[K]()
	for i, it := range items {
		k := key(it)
		if seen.Has(k) {
			e.hv = append(e.hv, field.Duplicate(p.Index(i), k))
		}
		seen.Insert(k)
	}
}

// requestNames are a claim's request names, each with its subrequests'.
type requestNames map[string]sets.Set[string]

func gatherRequestNames(d *resourcev1.DeviceClaim) requestNames {
	names := requestNames{}
	for _, r := range d.Requests {
		var subs sets.Set[string]
		if len(r.FirstAvailable) > 0 {
			subs = sets.New[string]()
			for _, s := range r.FirstAvailable {
				subs.Insert(s.Name)
			}
		}
		names[r.Name] = subs
	}
	return names
}

// has tells whether ref names a request or a request/subrequest.
func (n requestNames) has(ref string) bool {
	req, sub, found := strings.Cut(ref, "/")
	subs, ok := n[req]
	if !ok {
		return false
	}
	if !found {
		return true
	}
	return !strings.Contains(sub, "/") && subs.Has(sub)
}

// validateDeviceClaim checks a claim's (or a template's claim's)
// requests, constraints and config.
func validateDeviceClaim(e *draErrs, d *resourcev1.DeviceClaim, p *field.Path) {
	names := gatherRequestNames(d)
	rp := p.Child("requests")
	if e.fits(len(d.Requests), resourcev1.DeviceRequestsMaxSize, rp, true) {
		uniqueDeclared(e, d.Requests, rp, func(r resourcev1.DeviceRequest) string { return r.Name })
		for i, r := range d.Requests {
			validateDeviceRequest(e, r, rp.Index(i))
		}
	}
	cp := p.Child("constraints")
	if e.fits(len(d.Constraints), resourcev1.DeviceConstraintsMaxSize, cp, true) {
		for i, c := range d.Constraints {
			ip := cp.Index(i)
			validateRequestRefs(e, c.Requests, ip.Child("requests"), names)
			switch {
			case c.MatchAttribute != nil:
				e.dv = append(e.dv, validateFullyQualifiedName(string(*c.MatchAttribute), ip.Child("matchAttribute"))...)
			case c.DistinctAttribute != nil:
				e.dv = append(e.dv, validateFullyQualifiedName(string(*c.DistinctAttribute), ip.Child("distinctAttribute"))...)
			default:
				e.hv = append(e.hv, field.Required(ip, "exactly one of \"matchAttribute\" or \"distinctAttribute\" is required, but multiple fields are set"))
			}
		}
	}
	gp := p.Child("config")
	if e.fits(len(d.Config), resourcev1.DeviceConfigMaxSize, gp, true) {
		for i, c := range d.Config {
			validateRequestRefs(e, c.Requests, gp.Index(i).Child("requests"), names)
			validateDeviceConfiguration(e, c.DeviceConfiguration, gp.Index(i))
		}
	}
}

func validateDeviceRequest(e *draErrs, r resourcev1.DeviceRequest, p *field.Path) {
	e.hv = append(e.hv, validateDNSLabel(r.Name, p.Child("name"))...)
	switch {
	case r.Exactly == nil && len(r.FirstAvailable) == 0:
		e.hv = append(e.hv, field.Required(p, "exactly one of `exactly` or `firstAvailable` is required"))
	case r.Exactly != nil && len(r.FirstAvailable) > 0:
		e.hv = append(e.hv, field.Invalid(p, nil, "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set"))
	case r.Exactly != nil:
		x, xp := r.Exactly, p.Child("exactly")
		if x.DeviceClassName == "" {
			e.hv = append(e.hv, field.Required(xp.Child("deviceClassName"), ""))
		} else {
			e.hv = append(e.hv, validateDNSSubdomain(x.DeviceClassName, xp.Child("deviceClassName"))...)
		}
		validateSelectors(e, x.Selectors, xp.Child("selectors"))
		validateAllocationMode(e, x.AllocationMode, x.Count, xp)
		validateTolerations(e, x.Tolerations, xp.Child("tolerations"))
	default:
		fp := p.Child("firstAvailable")
		if !e.fits(len(r.FirstAvailable), resourcev1.FirstAvailableDeviceRequestMaxSize, fp, true) {
			return
		}
		uniqueDeclared(e, r.FirstAvailable, fp, func(s resourcev1.DeviceSubRequest) string { return s.Name })
		for i, s := range r.FirstAvailable {
			sp := fp.Index(i)
			e.hv = append(e.hv, validateDNSLabel(s.Name, sp.Child("name"))...)
			if s.DeviceClassName == "" {
				e.dv = append(e.dv, field.Required(sp.Child("deviceClassName"), ""))
			} else {
				e.dv = append(e.dv, validateDNSSubdomain(s.DeviceClassName, sp.Child("deviceClassName"))...)
			}
			validateSelectors(e, s.Selectors, sp.Child("selectors"))
			validateAllocationMode(e, s.AllocationMode, s.Count, sp)
			validateTolerations(e, s.Tolerations, sp.Child("tolerations"))
		}
	}
}

func validateAllocationMode(e *draErrs, mode resourcev1.DeviceAllocationMode, count int64, p *field.Path) {
	switch mode {
	case resourcev1.DeviceAllocationModeAll:
		if count != 0 {
			e.hv = append(e.hv, field.Invalid(p.Child("count"), count, fmt.Sprintf("must not be specified when allocationMode is '%s'", mode)))
		}
	case resourcev1.DeviceAllocationModeExactCount:
		if count <= 0 {
			e.hv = append(e.hv, field.Invalid(p.Child("count"), count, "must be greater than zero"))
		}
	default:
		e.dv = append(e.dv, field.NotSupported(p.Child("allocationMode"), mode,
			[]resourcev1.DeviceAllocationMode{resourcev1.DeviceAllocationModeAll, resourcev1.DeviceAllocationModeExactCount}))
	}
}

// celParser parses selectors. Upstream compiles them in its DRA
// environment (the device variable and its attributes and capacity
// typed): here they are parsed alone, so a syntax error is refused with
// upstream's words and an expression that would not type-check is stored.
var celParser, _ = cel.NewEnv()

func validateSelectors(e *draErrs, selectors []resourcev1.DeviceSelector, p *field.Path) {
	if !e.fits(len(selectors), resourcev1.DeviceSelectorsMaxSize, p, true) {
		return
	}
	for i, s := range selectors {
		sp := p.Index(i)
		if s.CEL == nil {
			e.hv = append(e.hv, field.Required(sp.Child("cel"), ""))
			continue
		}
		ep := sp.Child("cel", "expression")
		if len(s.CEL.Expression) > resourcev1.CELSelectorExpressionMaxLength {
			e.hv = append(e.hv, field.TooLong(ep, "", resourcev1.CELSelectorExpressionMaxLength))
			continue
		}
		if _, issues := celParser.Parse(s.CEL.Expression); issues != nil && issues.Err() != nil {
			e.hv = append(e.hv, field.Invalid(ep, s.CEL.Expression, "compilation failed: "+issues.String()))
		}
	}
}

var (
	deviceTaintEffects        = []resourcev1.DeviceTaintEffect{resourcev1.DeviceTaintEffectNoExecute, resourcev1.DeviceTaintEffectNoSchedule, resourcev1.DeviceTaintEffectNone}
	deviceTolerationOperators = []resourcev1.DeviceTolerationOperator{resourcev1.DeviceTolerationOpEqual, resourcev1.DeviceTolerationOpExists}
)

func validateTolerations(e *draErrs, ts []resourcev1.DeviceToleration, p *field.Path) {
	for i, t := range ts {
		tp := p.Index(i)
		if t.Key != "" {
			e.dv = append(e.dv, metav1validation.ValidateLabelName(t.Key, tp.Child("key"))...)
		}
		switch t.Operator {
		case resourcev1.DeviceTolerationOpExists:
			if t.Value != "" {
				e.hv = append(e.hv, field.Invalid(tp.Child("value"), t.Value, "must be empty for operator `Exists`"))
			}
		case resourcev1.DeviceTolerationOpEqual:
			e.hv = append(e.hv, validateLabelValue(t.Value, tp.Child("value"))...)
		case "":
			e.dv = append(e.dv, field.Required(tp.Child("operator"), ""))
		default:
			e.dv = append(e.dv, field.NotSupported(tp.Child("operator"), t.Operator, deviceTolerationOperators))
		}
		if t.Effect != "" && !containsEffect(t.Effect) {
			e.dv = append(e.dv, field.NotSupported(tp.Child("effect"), t.Effect, deviceTaintEffects))
		}
	}
}

func containsEffect(v resourcev1.DeviceTaintEffect) bool {
	for _, known := range deviceTaintEffects {
		if v == known {
			return true
		}
	}
	return false
}

func validateLabelValue(v string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsValidLabelValue(v) {
		errs = append(errs, field.Invalid(p, v, msg))
	}
	return errs
}

// validateRequestRefs checks the names of requests (or
// request/subrequest) a constraint or config applies to: each in the
// claim, each once.
func validateRequestRefs(e *draErrs, refs []string, p *field.Path, names requestNames) {
	if !e.fits(len(refs), resourcev1.DeviceRequestsMaxSize, p, true) {
		return
	}
	uniqueDeclared(e, refs, p, func(s string) string { return s })
	for i, ref := range refs {
		e.hv = append(e.hv, validateRequestRef(ref, p.Index(i), names)...)
	}
}

// validateRequestRef checks one name of a request (or request/subrequest)
// of the claim.
func validateRequestRef(ref string, p *field.Path, names requestNames) field.ErrorList {
	const msg = "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"
	segments := strings.Split(ref, "/")
	if len(segments) > 2 {
		return field.ErrorList{field.Invalid(p, ref, msg)}
	}
	var errs field.ErrorList
	for _, s := range segments {
		errs = append(errs, validateDNSLabel(s, p)...)
	}
	if !names.has(ref) {
		errs = append(errs, field.Invalid(p, ref, msg))
	}
	return errs
}

// validateDeviceConfiguration checks an opaque configuration: its driver
// (declaratively) and parameters that are a JSON object of at most 10 KiB.
func validateDeviceConfiguration(e *draErrs, c resourcev1.DeviceConfiguration, p *field.Path) {
	if c.Opaque == nil {
		e.hv = append(e.hv, field.Required(p.Child("opaque"), ""))
		return
	}
	op := p.Child("opaque")
	e.dv = append(e.dv, validateDriverNameDeclared(c.Opaque.Driver, op.Child("driver"))...)
	e.hv = append(e.hv, validateRawObject(c.Opaque.Parameters, op.Child("parameters"), resourcev1.OpaqueParametersMaxLength)...)
}

// validateDriverNameDeclared is upstream's declarative rule for a driver
// name: required, a DNS subdomain in any case, at most 63 characters.
func validateDriverNameDeclared(name string, p *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	errs := validate.LongNameCaseless(context.Background(), dvOp, p, &name, nil)
	return append(errs, validate.MaxLength(context.Background(), dvOp, p, &name, nil, 63)...)
}

func validateRawObject(raw runtime.RawExtension, p *field.Path, maxLength int) field.ErrorList {
	var v any
	switch {
	case len(raw.Raw) == 0:
		return field.ErrorList{field.Required(p, "")}
	case len(raw.Raw) > maxLength:
		return field.ErrorList{field.TooLong(p, "", maxLength)}
	}
	if err := json.Unmarshal(raw.Raw, &v); err != nil {
		return field.ErrorList{field.Invalid(p, "<value omitted>", "error parsing data as JSON: "+err.Error())}
	}
	switch v.(type) {
	case nil:
		return field.ErrorList{field.Required(p, "")}
	case map[string]any:
		return nil
	}
	return field.ErrorList{field.Invalid(p, "<value omitted>", "must be a valid JSON object")}
}

// validateDeviceClassSpec checks a class's selectors, configs and
// extended resource name; selectors or configs unchanged by an update
// are not checked again, as upstream treats them as stored.
func validateDeviceClassSpec(c, was *resourcev1.DeviceClassSpec) field.ErrorList {
	var e draErrs
	p := field.NewPath("spec")
	if was == nil || !equality.Semantic.DeepEqual(c.Selectors, was.Selectors) {
		validateSelectors(&e, c.Selectors, p.Child("selectors"))
	} else {
		e.fits(len(c.Selectors), resourcev1.DeviceSelectorsMaxSize, p.Child("selectors"), true)
	}
	cp := p.Child("config")
	if e.fits(len(c.Config), resourcev1.DeviceConfigMaxSize, cp, true) {
		for i, cfg := range c.Config {
			validateDeviceConfiguration(&e, cfg.DeviceConfiguration, cp.Index(i))
		}
	}
	if n := c.ExtendedResourceName; n != nil && (was == nil || was.ExtendedResourceName == nil || *was.ExtendedResourceName != *n) {
		e.dv = append(e.dv, validate.ExtendedResourceName(context.Background(), dvOp, p.Child("extendedResourceName"), n, nil)...)
	}
	return e.list()
}

// validateClaimStatus is upstream's check of a claim's status update.
func validateClaimStatus(c, was *resourcev1.ResourceClaim) field.ErrorList {
	var e draErrs
	p := field.NewPath("status")
	s := &c.Status
	rp := p.Child("reservedFor")
	if e.fits(len(s.ReservedFor), resourcev1.ResourceClaimReservedForMaxSize, rp, true) {
		uniqueDeclared(&e, s.ReservedFor, rp, func(r resourcev1.ResourceClaimConsumerReference) string { return string(r.UID) })
		for i, r := range s.ReservedFor {
			ip := rp.Index(i)
			if r.Resource == "" {
				e.hv = append(e.hv, field.Required(ip.Child("resource"), ""))
			}
			if r.Name == "" {
				e.hv = append(e.hv, field.Required(ip.Child("name"), ""))
			}
			if r.UID == "" {
				e.hv = append(e.hv, field.Required(ip.Child("uid"), ""))
			}
		}
	}
	if len(s.ReservedFor) > 0 {
		if s.Allocation == nil {
			e.hv = append(e.hv, field.Forbidden(rp, "may not be specified when `allocated` is not set"))
		} else if c.DeletionTimestamp != nil {
			before := sets.New(was.Status.ReservedFor...)
			for _, r := range s.ReservedFor {
				if !before.Has(r) {
					e.hv = append(e.hv, field.Forbidden(rp, "new entries may not be added while `deallocationRequested` or `deletionTimestamp` are set"))
					break
				}
			}
		}
	}
	ap := p.Child("allocation")
	switch {
	case s.Allocation != nil && was.Status.Allocation != nil:
		if !equality.Semantic.DeepEqual(s.Allocation, was.Status.Allocation) {
			e.dv = append(e.dv, field.Invalid(ap, nil, "field cannot be modified once set"))
		}
	case s.Allocation != nil:
		validateAllocation(&e, s.Allocation, ap, gatherRequestNames(&c.Spec.Devices))
	}
	return e.list()
}

func validateAllocation(e *draErrs, a *resourcev1.AllocationResult, p *field.Path, names requestNames) {
	dp := p.Child("devices")
	rp := dp.Child("results")
	if e.fits(len(a.Devices.Results), resourcev1.AllocationResultsMaxSize, rp, true) {
		for i, r := range a.Devices.Results {
			ip := rp.Index(i)
			e.hv = append(e.hv, validateRequestRef(r.Request, ip.Child("request"), names)...)
			e.dv = append(e.dv, validateDriverNameDeclared(r.Driver, ip.Child("driver"))...)
			if r.Pool == "" {
				e.dv = append(e.dv, field.Required(ip.Child("pool"), ""))
			} else {
				e.dv = append(e.dv, validate.ResourcePoolName(context.Background(), dvOp, ip.Child("pool"), &r.Pool, nil)...)
			}
			e.hv = append(e.hv, validateDNSLabel(r.Device, ip.Child("device"))...)
			validateTolerations(e, r.Tolerations, ip.Child("tolerations"))
		}
	}
	cp := dp.Child("config")
	if e.fits(len(a.Devices.Config), 2*resourcev1.DeviceConfigMaxSize, cp, true) {
		for i, c := range a.Devices.Config {
			ip := cp.Index(i)
			switch c.Source {
			case "":
				e.dv = append(e.dv, field.Required(ip.Child("source"), ""))
			case resourcev1.AllocationConfigSourceClaim, resourcev1.AllocationConfigSourceClass:
			default:
				e.dv = append(e.dv, field.NotSupported(ip.Child("source"), c.Source,
					[]resourcev1.AllocationConfigSource{resourcev1.AllocationConfigSourceClaim, resourcev1.AllocationConfigSourceClass}))
			}
			validateRequestRefs(e, c.Requests, ip.Child("requests"), names)
			validateDeviceConfiguration(e, c.DeviceConfiguration, ip)
		}
	}
	if a.NodeSelector != nil {
		e.hv = append(e.hv, validateNodeSelector(a.NodeSelector, p.Child("nodeSelector"))...)
	}
}

// validateResourceSliceSpec is upstream's check of a slice; was is the
// stored slice on an update.
func validateResourceSliceSpec(spec, was *resourcev1.ResourceSliceSpec) field.ErrorList {
	var e draErrs
	p := field.NewPath("spec")
	e.hv = append(e.hv, validateCSIDriverName(spec.Driver, p.Child("driver"))...)
	pp := p.Child("pool")
	e.hv = append(e.hv, validatePoolName(spec.Pool.Name, pp.Child("name"))...)
	if spec.Pool.ResourceSliceCount <= 0 {
		e.hv = append(e.hv, field.Invalid(pp.Child("resourceSliceCount"), spec.Pool.ResourceSliceCount, "must be greater than zero"))
	}
	if spec.Pool.Generation < 0 {
		e.hv = append(e.hv, field.Invalid(pp.Child("generation"), spec.Pool.Generation, "must be greater than or equal to zero"))
	}
	if was != nil {
		e.hv = append(e.hv, apivalidation.ValidateImmutableField(spec.Pool.Name, was.Pool.Name, pp.Child("name"))...)
		e.hv = append(e.hv, apivalidation.ValidateImmutableField(spec.Driver, was.Driver, p.Child("driver"))...)
		e.hv = append(e.hv, apivalidation.ValidateImmutableField(spec.NodeName, was.NodeName, p.Child("nodeName"))...)
	}
	var set []string
	if spec.NodeName != nil {
		if *spec.NodeName != "" {
			set = append(set, "`nodeName`")
			e.hv = append(e.hv, validateNodeName(*spec.NodeName, p.Child("nodeName"))...)
		} else {
			e.hv = append(e.hv, field.Invalid(p.Child("nodeName"), *spec.NodeName, "must be either unset or set to a non-empty string"))
		}
	}
	if spec.NodeSelector != nil {
		set = append(set, "`nodeSelector`")
		e.hv = append(e.hv, validateNodeSelector(spec.NodeSelector, p.Child("nodeSelector"))...)
		if len(spec.NodeSelector.NodeSelectorTerms) != 1 {
			e.hv = append(e.hv, field.Invalid(p.Child("nodeSelector", "nodeSelectorTerms"), internalNodeSelectorTerms(spec.NodeSelector.NodeSelectorTerms), "must have exactly one node selector term"))
		}
	}
	for _, b := range []struct {
		name string
		v    *bool
	}{{"allNodes", spec.AllNodes}, {"perDeviceNodeSelection", spec.PerDeviceNodeSelection}} {
		if b.v == nil {
			continue
		}
		if *b.v {
			set = append(set, "`"+b.name+"`")
		} else {
			e.hv = append(e.hv, field.Invalid(p.Child(b.name), *b.v, "must be either unset or set to true"))
		}
	}
	switch {
	case len(set) == 0:
		e.hv = append(e.hv, field.Required(p, "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"))
	case len(set) > 1:
		e.hv = append(e.hv, field.Invalid(p, "{"+strings.Join(set, ", ")+"}",
			"exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set"))
	}
	if spec.SharedCounters != nil && spec.Devices != nil {
		e.hv = append(e.hv, field.Invalid(p, "", "only one of `sharedCounters` or `devices` is allowed"))
	}

	maxDevices := resourcev1.ResourceSliceMaxDevices
	for _, d := range spec.Devices {
		advanced := len(d.Taints) > 0 || len(d.ConsumesCounters) > 0
		for _, a := range d.Attributes {
			advanced = advanced || a.BoolValues != nil || a.IntValues != nil || a.StringValues != nil || a.VersionValues != nil
		}
		if advanced {
			maxDevices = resourcev1.ResourceSliceMaxDevicesWithAdvancedFeatures
		}
	}
	perDevice := spec.PerDeviceNodeSelection != nil && *spec.PerDeviceNodeSelection
	dp := p.Child("devices")
	if e.fits(len(spec.Devices), maxDevices, dp, false) {
		for i, d := range spec.Devices {
			var old *resourcev1.Device
			if was != nil {
				for j := range was.Devices {
					if was.Devices[j].Name == d.Name {
						old = &was.Devices[j]
					}
				}
			}
			validateDevice(&e, d, old, dp.Index(i), perDevice)
		}
		uniqueHandwritten(&e, spec.Devices, dp, func(d resourcev1.Device) string { return d.Name })
	}
	sp := p.Child("sharedCounters")
	if e.fits(len(spec.SharedCounters), resourcev1.ResourceSliceMaxCounterSets, sp, true) {
		uniqueDeclared(&e, spec.SharedCounters, sp, func(c resourcev1.CounterSet) string { return c.Name })
		for i, c := range spec.SharedCounters {
			cp := sp.Index(i)
			if c.Name == "" {
				e.dv = append(e.dv, field.Required(cp.Child("name"), ""))
			} else {
				e.dv = append(e.dv, validateDNSLabel(c.Name, cp.Child("name"))...)
			}
			if len(c.Counters) == 0 {
				e.dv = append(e.dv, field.Required(cp.Child("counters"), ""))
			}
			for _, k := range sets.List(sets.KeySet(c.Counters)) {
				e.dv = append(e.dv, validateDNSLabel(k, cp.Child("counters"))...)
			}
		}
	}
	return e.list()
}

func validateNodeName(name string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range apivalidation.NameIsDNSSubdomain(name, false) {
		errs = append(errs, field.Invalid(p, name, msg))
	}
	return errs
}

// validateDevice checks a device's name, attributes, capacity names,
// taints and node selection.
func validateDevice(e *draErrs, d resourcev1.Device, old *resourcev1.Device, p *field.Path, perDevice bool) {
	e.hv = append(e.hv, validateDNSLabel(d.Name, p.Child("name"))...)
	if n := len(d.Attributes) + len(d.Capacity); n > resourcev1.ResourceSliceMaxAttributesAndCapacitiesPerDevice {
		e.hv = append(e.hv, field.Invalid(p, n, fmt.Sprintf("the total number of attributes and capacities must not exceed %d", resourcev1.ResourceSliceMaxAttributesAndCapacitiesPerDevice)))
	}
	// Upstream checks attributes in map order, which varies; here by key.
	ap := p.Child("attributes")
	for _, k := range sets.List(sets.KeySet(d.Attributes)) {
		e.hv = append(e.hv, validateQualifiedName(string(k), ap)...)
		validateDeviceAttribute(e, d.Attributes[k], ap.Key(cutMiddle(string(k), attributeKeyMaxLength)))
	}
	if old == nil || !equality.Semantic.DeepEqual(old.Capacity, d.Capacity) {
		for _, k := range sets.List(sets.KeySet(d.Capacity)) {
			e.hv = append(e.hv, validateQualifiedName(string(k), p.Child("capacity"))...)
		}
	}
	if old == nil || !equality.Semantic.DeepEqual(old.Taints, d.Taints) {
		tp := p.Child("taints")
		if e.fits(len(d.Taints), resourcev1.DeviceTaintsMaxLength, tp, false) {
			for i, t := range d.Taints {
				validateDeviceTaint(e, t, tp.Index(i))
			}
		}
	}
	selection := d.NodeName != nil || d.NodeSelector != nil || d.AllNodes != nil
	if !perDevice {
		if selection {
			e.hv = append(e.hv, field.Invalid(p, nil, "`nodeName`, `nodeSelector` and `allNodes` can only be set if `perDeviceNodeSelection` is set to true in the ResourceSlice spec"))
		}
		return
	}
	const msg = "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` is set to true in the ResourceSlice spec"
	var set []string
	if d.NodeName != nil {
		if *d.NodeName != "" {
			set = append(set, "`nodeName`")
			e.hv = append(e.hv, validateNodeName(*d.NodeName, p.Child("nodeName"))...)
		} else {
			e.hv = append(e.hv, field.Invalid(p.Child("nodeName"), *d.NodeName, "must not be empty"))
		}
	}
	if d.NodeSelector != nil {
		set = append(set, "`nodeSelector`")
		e.hv = append(e.hv, validateNodeSelector(d.NodeSelector, p.Child("nodeSelector"))...)
	}
	if d.AllNodes != nil {
		if *d.AllNodes {
			set = append(set, "`allNodes`")
		} else {
			e.hv = append(e.hv, field.Invalid(p.Child("allNodes"), *d.AllNodes, "must be either unset or set to true"))
		}
	}
	switch {
	case len(set) == 0:
		e.hv = append(e.hv, field.Required(p, msg))
	case len(set) > 1:
		e.hv = append(e.hv, field.Invalid(p, "{"+strings.Join(set, ", ")+"}", msg))
	}
}

// deviceAttributeMembers are the members of an attribute's union, in
// upstream's order.
var deviceAttributeMembers = []string{"int", "bool", "string", "version", "ints", "bools", "strings", "versions"}

// validateDeviceAttribute checks that an attribute has exactly one value
// (a scalar or a non-empty list) and the lengths of strings and versions,
// versions being semantic ones.
func validateDeviceAttribute(e *draErrs, a resourcev1.DeviceAttribute, p *field.Path) {
	str := func(v string, p *field.Path) field.ErrorList {
		if len(v) > resourcev1.DeviceAttributeMaxValueLength {
			return field.ErrorList{field.TooLong(p, "", resourcev1.DeviceAttributeMaxValueLength)}
		}
		return nil
	}
	version := func(v string, p *field.Path) {
		if !semverPattern.MatchString(v) {
			e.hv = append(e.hv, field.Invalid(p, v, "must be a string compatible with semver.org spec 2.0.0"))
		}
		e.hv = append(e.hv, str(v, p)...)
	}
	if a.StringValue != nil {
		e.hv = append(e.hv, str(*a.StringValue, p.Child("string"))...)
	}
	if a.VersionValue != nil {
		version(*a.VersionValue, p.Child("version"))
	}
	empty := func(set bool, n int, name string, v any) {
		if set && n == 0 {
			e.hv = append(e.hv, field.Invalid(p.Child(name), v, "must not be empty if specified"))
		}
	}
	empty(a.BoolValues != nil, len(a.BoolValues), "bools", a.BoolValues)
	empty(a.IntValues != nil, len(a.IntValues), "ints", a.IntValues)
	empty(a.StringValues != nil, len(a.StringValues), "strings", a.StringValues)
	for i, v := range a.StringValues {
		e.dv = append(e.dv, str(v, p.Child("strings").Index(i))...)
	}
	empty(a.VersionValues != nil, len(a.VersionValues), "versions", a.VersionValues)
	for i, v := range a.VersionValues {
		version(v, p.Child("versions").Index(i))
	}
	var set []string
	for i, isSet := range []bool{a.IntValue != nil, a.BoolValue != nil, a.StringValue != nil, a.VersionValue != nil,
		a.IntValues != nil, a.BoolValues != nil, a.StringValues != nil, a.VersionValues != nil} {
		if isSet {
			set = append(set, deviceAttributeMembers[i])
		}
	}
	quoted := make([]string, len(deviceAttributeMembers))
	for i, m := range deviceAttributeMembers {
		quoted[i] = "`" + m + "`"
	}
	switch {
	case len(set) == 0:
		e.dv = append(e.dv, field.Invalid(p, "", "must specify one of: "+strings.Join(quoted, ", ")))
	case len(set) > 1:
		e.dv = append(e.dv, field.Invalid(p, "{"+strings.Join(set, ", ")+"}", "must specify exactly one of: "+strings.Join(quoted, ", ")))
	}
}

// semverPattern is semver.org's 2.0.0 grammar.
var semverPattern = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)` +
	`(-(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(\.(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*)?` +
	`(\+[0-9a-zA-Z-]+(\.[0-9a-zA-Z-]+)*)?$`)

func validateDeviceTaint(e *draErrs, t resourcev1.DeviceTaint, p *field.Path) {
	e.hv = append(e.hv, metav1validation.ValidateLabelName(t.Key, p.Child("key"))...)
	if t.Value != "" {
		e.hv = append(e.hv, validateLabelValue(t.Value, p.Child("value"))...)
	}
	switch {
	case t.Effect == "":
		e.dv = append(e.dv, field.Required(p.Child("effect"), ""))
	case !containsEffect(t.Effect):
		e.dv = append(e.dv, field.NotSupported(p.Child("effect"), t.Effect, deviceTaintEffects))
	}
}

// validateQualifiedName checks an attribute or capacity name: a C
// identifier, or a driver-like domain and a C identifier.
func validateQualifiedName(name string, p *field.Path) field.ErrorList {
	domain, id, found := strings.Cut(name, "/")
	if !found {
		return validateCIdentifier(name, p)
	}
	var errs field.ErrorList
	if domain == "" {
		errs = append(errs, field.Invalid(p, "", "the domain must not be empty"))
	} else {
		errs = append(errs, validateCSIDriverName(domain, p)...)
	}
	if id == "" {
		errs = append(errs, field.Invalid(p, "", "the name must not be empty"))
	} else {
		errs = append(errs, validateCIdentifier(id, p)...)
	}
	return errs
}

// validateFullyQualifiedName is the declarative rule for a constraint's
// attribute: a domain and a C identifier.
func validateFullyQualifiedName(name string, p *field.Path) field.ErrorList {
	return validate.ResourceFullyQualifiedName(context.Background(), dvOp, p, &name, nil)
}

func validateCIdentifier(id string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(id) > deviceMaxIDLength {
		errs = append(errs, field.TooLong(p, "", deviceMaxIDLength))
	}
	for _, msg := range validation.IsCIdentifier(id) {
		errs = append(errs, field.Invalid(p, id, msg))
	}
	return errs
}

// cutMiddle shortens a key for an error's path, as upstream does.
func cutMiddle(s string, maxLen int) string {
	if maxLen < 16 {
		maxLen = 16
	}
	if len(s) <= maxLen {
		return s
	}
	keep := maxLen - 3
	return s[:(keep+1)/2] + "..." + s[len(s)-keep/2:]
}

func validatePoolName(name string, p *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	var errs field.ErrorList
	if len(name) > resourcev1.PoolNameMaxLength {
		errs = append(errs, field.TooLong(p, "", resourcev1.PoolNameMaxLength))
	}
	for _, part := range strings.Split(name, "/") {
		errs = append(errs, validateDNSSubdomain(part, p)...)
	}
	return errs
}

func validateDNSLabel(v string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(v) {
		errs = append(errs, field.Invalid(p, v, msg))
	}
	return errs
}

func validateDNSSubdomain(v string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(v) {
		errs = append(errs, field.Invalid(p, v, msg))
	}
	return errs
}

// internalNodeSelectorTerms are node selector terms as upstream quotes
// them in an error: its internal types have no JSON names.
func internalNodeSelectorTerms(terms []corev1.NodeSelectorTerm) any {
	type requirement struct {
		Key      string
		Operator corev1.NodeSelectorOperator
		Values   []string
	}
	type term struct {
		MatchExpressions []requirement
		MatchFields      []requirement
	}
	out := make([]term, len(terms))
	for i, t := range terms {
		for _, list := range []struct {
			from []corev1.NodeSelectorRequirement
			to   *[]requirement
		}{{t.MatchExpressions, &out[i].MatchExpressions}, {t.MatchFields, &out[i].MatchFields}} {
			if list.from == nil {
				continue
			}
			*list.to = make([]requirement, len(list.from))
			for j, r := range list.from {
				(*list.to)[j] = requirement{Key: r.Key, Operator: r.Operator, Values: r.Values}
			}
		}
	}
	return out
}

// validateNodeSelector is upstream's check of a required node selector.
func validateNodeSelector(s *corev1.NodeSelector, p *field.Path) field.ErrorList {
	tp := p.Child("nodeSelectorTerms")
	if len(s.NodeSelectorTerms) == 0 {
		return field.ErrorList{field.Required(tp, "must have at least one node selector term")}
	}
	var errs field.ErrorList
	for i := range s.NodeSelectorTerms {
		errs = append(errs, validateNodeSelectorTerm(&s.NodeSelectorTerms[i], tp.Index(i), true)...)
	}
	return errs
}

// validateNodeSelectorTerm is upstream's check of one node selector term:
// its expressions' operators, keys and, when labelValues (a required term;
// a preference may have values in any form), values as label values; its
// field expressions on metadata.name alone.
func validateNodeSelectorTerm(t *corev1.NodeSelectorTerm, p *field.Path, labelValues bool) field.ErrorList {
	var errs field.ErrorList
	for j, r := range t.MatchExpressions {
		rp := p.Child("matchExpressions").Index(j)
		switch r.Operator {
		case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
			if len(r.Values) == 0 {
				errs = append(errs, field.Required(rp.Child("values"), "must be specified when `operator` is 'In' or 'NotIn'"))
			}
		case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
			if len(r.Values) > 0 {
				errs = append(errs, field.Forbidden(rp.Child("values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
			}
		case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
			if len(r.Values) != 1 {
				errs = append(errs, field.Required(rp.Child("values"), "must be specified single value when `operator` is 'Lt' or 'Gt'"))
			}
		default:
			errs = append(errs, field.Invalid(rp.Child("operator"), r.Operator, "not a valid selector operator"))
		}
		errs = append(errs, metav1validation.ValidateLabelName(r.Key, rp.Child("key"))...)
		if labelValues {
			for k, v := range r.Values {
				errs = append(errs, validateLabelValue(v, rp.Child("values").Index(k))...)
			}
		}
	}
	for j, r := range t.MatchFields {
		rp := p.Child("matchFields").Index(j)
		switch r.Operator {
		case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
			if len(r.Values) != 1 {
				errs = append(errs, field.Required(rp.Child("values"), "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"))
			}
		default:
			errs = append(errs, field.Invalid(rp.Child("operator"), r.Operator, "not a valid selector operator"))
		}
		if r.Key != metav1.ObjectNameField {
			errs = append(errs, field.Invalid(rp.Child("key"), r.Key, "not a valid field selector key"))
			continue
		}
		for k, v := range r.Values {
			errs = append(errs, validateNodeName(v, rp.Child("values").Index(k))...)
		}
	}
	return errs
}

// resourceAPIPath is the package of the v1 types, whose internal
// counterparts upstream quotes with their Go field names.
var resourceAPIPath = reflect.TypeOf(resourcev1.ResourceClaimTemplateSpec{}).PkgPath()

// internalForm is v as upstream quotes its internal resource types in an
// error: the v1 types' fields under their Go names, none omitted, an
// embedded ObjectMeta inlined; other types (metadata, quantities, raw
// parameters) as they encode.
func internalForm(v reflect.Value) any {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return internalForm(v.Elem())
	case reflect.Slice:
		if v.IsNil() {
			return nil
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return v.Interface()
		}
		out := make([]any, v.Len())
		for i := range out {
			out[i] = internalForm(v.Index(i))
		}
		return out
	case reflect.Map:
		if v.IsNil() {
			return nil
		}
		out := make(map[string]any, v.Len())
		for it := v.MapRange(); it.Next(); {
			out[it.Key().String()] = internalForm(it.Value())
		}
		return out
	case reflect.Struct:
		if v.Type().PkgPath() != resourceAPIPath {
			return v.Interface()
		}
		out := map[string]any{}
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			if f.Type == reflect.TypeOf(metav1.ObjectMeta{}) {
				b, _ := json.Marshal(v.Field(i).Interface())
				_ = json.Unmarshal(b, &out)
				continue
			}
			out[f.Name] = internalForm(v.Field(i))
		}
		return out
	}
	return v.Interface()
}
