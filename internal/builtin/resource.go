package builtin

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metatable "k8s.io/apimachinery/pkg/api/meta/table"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/registry"
)

// The resource.k8s.io/v1 kinds of Dynamic Resource Allocation. No
// scheduler allocates claims and no kubelet or driver publishes slices
// here: the objects are stored with upstream's defaults and validation, so
// that drivers and operators can be tested against them. Selector CEL
// expressions are checked for presence and length, not compiled.

// DeviceClasses is the resource.k8s.io/v1 deviceclasses resource.
func DeviceClasses() *registry.Definition {
	k := kindDef{
		group: "resource.k8s.io", version: "v1", resource: "deviceclasses", kind: "DeviceClass",
		scope: registry.Cluster,
	}
	return k.definition(deviceClassHooks{newKindHooks[resourcev1.DeviceClass](k, deviceClassRules{})})
}

// ResourceClaims is the resource.k8s.io/v1 resourceclaims resource: its
// spec is immutable, its status written through /status.
func ResourceClaims() *registry.Definition {
	k := kindDef{
		group: "resource.k8s.io", version: "v1", resource: "resourceclaims", kind: "ResourceClaim",
		scope: registry.Namespaced, status: true, noGeneration: true,
	}
	return k.definition(resourceClaimHooks{kindHooksNoGeneration[resourcev1.ResourceClaim, resourceClaimRules]{
		kindHooks: newKindHooks[resourcev1.ResourceClaim](k, resourceClaimRules{}),
	}})
}

// ResourceClaimTemplates is the resource.k8s.io/v1 resourceclaimtemplates
// resource: its spec is immutable.
func ResourceClaimTemplates() *registry.Definition {
	k := kindDef{
		group: "resource.k8s.io", version: "v1", resource: "resourceclaimtemplates", kind: "ResourceClaimTemplate",
		scope: registry.Namespaced, noGeneration: true,
	}
	return k.definition(resourceClaimTemplateHooks{kindHooksNoGeneration[resourcev1.ResourceClaimTemplate, resourceClaimTemplateRules]{
		kindHooks: newKindHooks[resourcev1.ResourceClaimTemplate](k, resourceClaimTemplateRules{}),
	}})
}

// ResourceSlices is the resource.k8s.io/v1 resourceslices resource, with
// upstream's selectable fields.
func ResourceSlices() *registry.Definition {
	k := kindDef{
		group: "resource.k8s.io", version: "v1", resource: "resourceslices", kind: "ResourceSlice",
		scope:      registry.Cluster,
		selectable: []string{"spec.nodeName", "spec.driver", "spec.pool.name"},
	}
	return k.definition(resourceSliceHooks{newKindHooks[resourcev1.ResourceSlice](k, resourceSliceRules{})})
}

// The hooks of the DRA kinds: as upstream's stores, a delete answers with
// the object.
type (
	deviceClassHooks struct {
		kindHooks[resourcev1.DeviceClass, deviceClassRules]
	}
	resourceClaimHooks struct {
		kindHooksNoGeneration[resourcev1.ResourceClaim, resourceClaimRules]
	}
	resourceClaimTemplateHooks struct {
		kindHooksNoGeneration[resourcev1.ResourceClaimTemplate, resourceClaimTemplateRules]
	}
	resourceSliceHooks struct {
		kindHooks[resourcev1.ResourceSlice, resourceSliceRules]
	}
)

var (
	_ registry.ReturnsDeletedObject = deviceClassHooks{}
	_ registry.ReturnsDeletedObject = resourceClaimHooks{}
	_ registry.ReturnsDeletedObject = resourceClaimTemplateHooks{}
	_ registry.ReturnsDeletedObject = resourceSliceHooks{}
	_ registry.StatusValidator      = resourceClaimHooks{}
	_ registry.FieldLabelRefuser    = resourceSliceHooks{}
)

func (deviceClassHooks) ReturnDeletedObject()           {}
func (resourceClaimHooks) ReturnDeletedObject()         {}
func (resourceClaimTemplateHooks) ReturnDeletedObject() {}
func (resourceSliceHooks) ReturnDeletedObject()         {}

// RefuseFieldLabel words the refusal as upstream's field label conversion
// of ResourceSlices does.
func (resourceSliceHooks) RefuseFieldLabel(label string) string {
	return "field label not supported for resource.k8s.io/v1, Kind=ResourceSlice: " + label
}

// ValidateStatusUpdate checks a /status write as upstream's status
// strategy does: reservations, and an allocation that is new (a stored
// one may not change).
func (h resourceClaimHooks) ValidateStatusUpdate(obj, old map[string]any) field.ErrorList {
	c, was, err := h.decodeUpdate(obj, old)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return validateClaimStatus(c, was)
}

// Upstream's bounds on DRA objects.
const (
	deviceMaxIDLength = 32
	// attributeKeyMaxLength is where a too long attribute or capacity key
	// is cut in an error's path.
	attributeKeyMaxLength = 63 + 1 + deviceMaxIDLength
)

// defaultDeviceRequests applies upstream's v1 defaults to a claim's
// requests: an allocation mode of ExactCount with a count of one, and
// tolerations' operator Equal.
func defaultDeviceRequests(d *resourcev1.DeviceClaim) {
	tolerations := func(ts []resourcev1.DeviceToleration) {
		for i := range ts {
			if ts[i].Operator == "" {
				ts[i].Operator = resourcev1.DeviceTolerationOpEqual
			}
		}
	}
	mode := func(m *resourcev1.DeviceAllocationMode, count *int64) {
		if *m == "" {
			*m = resourcev1.DeviceAllocationModeExactCount
		}
		if *m == resourcev1.DeviceAllocationModeExactCount && *count == 0 {
			*count = 1
		}
	}
	for i := range d.Requests {
		r := &d.Requests[i]
		if r.Exactly != nil {
			mode(&r.Exactly.AllocationMode, &r.Exactly.Count)
			tolerations(r.Exactly.Tolerations)
		}
		for j := range r.FirstAvailable {
			s := &r.FirstAvailable[j]
			mode(&s.AllocationMode, &s.Count)
			tolerations(s.Tolerations)
		}
	}
}

// defaultTaint stamps a taint's timeAdded, as upstream's defaulter does.
func defaultTaint(t *resourcev1.DeviceTaint) {
	if t.TimeAdded == nil {
		t.TimeAdded = &metav1.Time{Time: time.Now().Truncate(time.Second)}
	}
}

type deviceClassRules struct{}

func (deviceClassRules) defaults(*resourcev1.DeviceClass) {}

func (deviceClassRules) validate(c, was *resourcev1.DeviceClass) field.ErrorList {
	if was == nil {
		return validateDeviceClassSpec(&c.Spec, nil)
	}
	return validateDeviceClassSpec(&c.Spec, &was.Spec)
}

func (deviceClassRules) columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{nameColumn, ageColumn}
}

func (deviceClassRules) cells(c *resourcev1.DeviceClass) []any {
	return []any{c.Name, age(&c.ObjectMeta)}
}

type resourceClaimRules struct{}

func (resourceClaimRules) defaults(c *resourcev1.ResourceClaim) {
	defaultDeviceRequests(&c.Spec.Devices)
}

// validate checks a new claim's devices; an update may not change the
// spec (upstream's declarative rule, which quotes no value).
func (resourceClaimRules) validate(c, was *resourcev1.ResourceClaim) field.ErrorList {
	if was != nil {
		if !equality.Semantic.DeepEqual(c.Spec, was.Spec) {
			return field.ErrorList{field.Invalid(field.NewPath("spec"), nil, "field is immutable")}
		}
		return nil
	}
	var e draErrs
	validateDeviceClaim(&e, &c.Spec.Devices, field.NewPath("spec", "devices"))
	return e.list()
}

var resourceClaimStateDescription = "A summary of the current state (allocated, pending, reserved, etc.)."

func (resourceClaimRules) columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{nameColumn, {Name: "State", Type: "string", Description: resourceClaimStateDescription}, ageColumn}
}

func (resourceClaimRules) cells(c *resourcev1.ResourceClaim) []any {
	return []any{c.Name, resourceClaimState(c), age(&c.ObjectMeta)}
}

// resourceClaimState is upstream's State cell: deleted, then pending, or
// allocated and reserved.
func resourceClaimState(c *resourcev1.ResourceClaim) string {
	var states []string
	if c.DeletionTimestamp != nil {
		states = append(states, "deleted")
	}
	switch {
	case c.Status.Allocation != nil:
		states = append(states, "allocated")
		if len(c.Status.ReservedFor) > 0 {
			states = append(states, "reserved")
		}
	case c.DeletionTimestamp == nil:
		states = append(states, "pending")
	}
	return strings.Join(states, ",")
}

type resourceClaimTemplateRules struct{}

func (resourceClaimTemplateRules) defaults(t *resourcev1.ResourceClaimTemplate) {
	defaultDeviceRequests(&t.Spec.Spec.Devices)
}

func (resourceClaimTemplateRules) validate(t, was *resourcev1.ResourceClaimTemplate) field.ErrorList {
	p := field.NewPath("spec")
	if was != nil {
		if !equality.Semantic.DeepEqual(t.Spec, was.Spec) {
			return field.ErrorList{field.Invalid(p, internalForm(reflect.ValueOf(t.Spec)), "field is immutable")}
		}
		return nil
	}
	mp := p.Child("metadata")
	e := draErrs{hv: metav1validation.ValidateLabels(t.Spec.Labels, mp.Child("labels"))}
	e.hv = append(e.hv, apivalidation.ValidateAnnotations(t.Spec.Annotations, mp.Child("annotations"))...)
	validateDeviceClaim(&e, &t.Spec.Spec.Devices, p.Child("spec", "devices"))
	return e.list()
}

func (resourceClaimTemplateRules) columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{nameColumn, ageColumn}
}

func (resourceClaimTemplateRules) cells(t *resourcev1.ResourceClaimTemplate) []any {
	return []any{t.Name, age(&t.ObjectMeta)}
}

type resourceSliceRules struct{}

func (resourceSliceRules) defaults(s *resourcev1.ResourceSlice) {
	for i := range s.Spec.Devices {
		for j := range s.Spec.Devices[i].Taints {
			defaultTaint(&s.Spec.Devices[i].Taints[j])
		}
	}
}

func (resourceSliceRules) validate(s, was *resourcev1.ResourceSlice) field.ErrorList {
	if was == nil {
		return validateResourceSliceSpec(&s.Spec, nil)
	}
	return validateResourceSliceSpec(&s.Spec, &was.Spec)
}

func (resourceSliceRules) columns() []metav1.TableColumnDefinition {
	spec := resourcev1.ResourceSliceSpec{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Node", Type: "string", Description: spec["nodeName"]},
		{Name: "Driver", Type: "string", Description: spec["driver"]},
		{Name: "Pool", Type: "string", Description: resourcev1.ResourcePool{}.SwaggerDoc()["name"]},
		ageColumn,
	}
}

func (resourceSliceRules) cells(s *resourcev1.ResourceSlice) []any {
	node := ""
	if s.Spec.NodeName != nil {
		node = *s.Spec.NodeName
	}
	return []any{s.Name, node, s.Spec.Driver, s.Spec.Pool.Name, age(&s.ObjectMeta)}
}

// DeviceTaintRules is the resource.k8s.io/v1 devicetaintrules resource:
// taints for the devices a selector picks, with a /status no controller
// writes here. A PUT names the revision it replaces; a delete answers a
// Status, as upstream's store does.
func DeviceTaintRules() *registry.Definition {
	k := kindDef{
		group: "resource.k8s.io", version: "v1", resource: "devicetaintrules", kind: "DeviceTaintRule",
		scope: registry.Cluster, status: true, conditional: true,
	}
	def := k.definition(deviceTaintRuleHooks{newKindHooks[resourcev1.DeviceTaintRule](k, deviceTaintRuleRules{})})
	// kube-apiserver 1.37 stores the rules at v1beta2.
	def.HashedStorageVersion = "v1beta2"
	return def
}

type deviceTaintRuleHooks struct {
	kindHooks[resourcev1.DeviceTaintRule, deviceTaintRuleRules]
}

var _ registry.UpdatePreparer = deviceTaintRuleHooks{}

// PrepareForUpdate stamps the taint anew when its effect changes and its
// time does not, as upstream's strategy does.
func (h deviceTaintRuleHooks) PrepareForUpdate(obj, old map[string]any) {
	h.kindHooks.PrepareForUpdate(obj, old)
	r, was, err := h.decodeUpdate(obj, old)
	if err != nil || r.Spec.Taint.Effect == was.Spec.Taint.Effect || !r.Spec.Taint.TimeAdded.Equal(was.Spec.Taint.TimeAdded) {
		return
	}
	h.rewrite(obj, func(r *resourcev1.DeviceTaintRule) {
		r.Spec.Taint.TimeAdded = &metav1.Time{Time: time.Now().Truncate(time.Second)}
	})
}

type deviceTaintRuleRules struct{}

func (deviceTaintRuleRules) defaults(r *resourcev1.DeviceTaintRule) { defaultTaint(&r.Spec.Taint) }

// validate checks the selector's driver, pool and device names and the
// taint (its effect only when it changes).
func (deviceTaintRuleRules) validate(r, was *resourcev1.DeviceTaintRule) field.ErrorList {
	var e draErrs
	p := field.NewPath("spec")
	if s := r.Spec.DeviceSelector; s != nil {
		sp := p.Child("deviceSelector")
		if s.Driver != nil {
			e.hv = append(e.hv, validateCSIDriverName(*s.Driver, sp.Child("driver"))...)
		}
		if s.Pool != nil {
			e.hv = append(e.hv, validatePoolName(*s.Pool, sp.Child("pool"))...)
		}
		if s.Device != nil {
			e.hv = append(e.hv, validateDNSLabel(*s.Device, sp.Child("device"))...)
		}
	}
	t, tp := r.Spec.Taint, p.Child("taint")
	e.hv = append(e.hv, metav1validation.ValidateLabelName(t.Key, tp.Child("key"))...)
	if t.Value != "" {
		e.hv = append(e.hv, validateLabelValue(t.Value, tp.Child("value"))...)
	}
	if was == nil || was.Spec.Taint.Effect != t.Effect {
		switch {
		case t.Effect == "":
			e.dv = append(e.dv, field.Required(tp.Child("effect"), ""))
		case !containsEffect(t.Effect):
			e.dv = append(e.dv, field.NotSupported(tp.Child("effect"), t.Effect, deviceTaintEffects))
		}
	}
	return e.list()
}

// validateStatus checks the conditions, at most upstream's number.
func (deviceTaintRuleRules) validateStatus(r *resourcev1.DeviceTaintRule) field.ErrorList {
	p := field.NewPath("status", "conditions")
	errs := metav1validation.ValidateConditions(r.Status.Conditions, p)
	if n := len(r.Status.Conditions); n > resourcev1.DeviceTaintRuleStatusMaxConditions {
		errs = append(errs, field.TooMany(p, n, resourcev1.DeviceTaintRuleStatusMaxConditions))
	}
	return errs
}

func (deviceTaintRuleRules) columns() []metav1.TableColumnDefinition {
	doc := resourcev1.DeviceTaint{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Key", Type: "string", Description: doc["key"]},
		{Name: "Value", Type: "string", Description: doc["value"]},
		{Name: "Effect", Type: "string", Description: doc["effect"]},
		{Name: "TimeAdded", Type: "string", Description: doc["timeAdded"]},
		ageColumn,
	}
}

func (deviceTaintRuleRules) cells(r *resourcev1.DeviceTaintRule) []any {
	added := ""
	if t := r.Spec.Taint.TimeAdded; t != nil {
		added = metatable.ConvertToHumanReadableDateType(*t)
	}
	return []any{r.Name, r.Spec.Taint.Key, r.Spec.Taint.Value, string(r.Spec.Taint.Effect), added, age(&r.ObjectMeta)}
}

// warnings are upstream's: a driver name with capitals works, but should
// not be.
func (resourceSliceRules) warnings(s, _ *resourcev1.ResourceSlice, _ string) []string {
	if s.Spec.Driver != strings.ToLower(s.Spec.Driver) {
		return []string{fmt.Sprintf("spec.driver: driver names should be lowercase; %q contains uppercase characters", s.Spec.Driver)}
	}
	return nil
}
