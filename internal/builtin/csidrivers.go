package builtin

import (
	"context"
	"slices"
	"strings"

	storagev1 "k8s.io/api/storage/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/registry"
)

// CSIDrivers is the storage.k8s.io/v1 csidrivers resource: a driver's
// registration, with upstream's defaults; no driver runs here. As
// upstream's, a driver's metadata.generation starts at its first spec
// change.
func CSIDrivers() *registry.Definition {
	k := kindDef{
		group: "storage.k8s.io", version: "v1", resource: "csidrivers", kind: "CSIDriver",
		scope: registry.Cluster, conditional: true,
	}
	return k.definition(csiDriverHooks{newKindHooks[storagev1.CSIDriver](k, csiDriverRules{})})
}

type csiDriverHooks struct {
	kindHooks[storagev1.CSIDriver, csiDriverRules]
}

var _ registry.GenerationOnChange = csiDriverHooks{}

func (csiDriverHooks) GenerationOnChange() {}

// ReturnDeletedObject: as upstream's store, a delete answers with the
// driver.
func (csiDriverHooks) ReturnDeletedObject() {}

type csiDriverRules struct{}

// defaults are upstream's, with the gates on by default in 1.37
// (SELinuxMountReadWriteOncePod, VolumeLimitScaling).
func (csiDriverRules) defaults(d *storagev1.CSIDriver) {
	s := &d.Spec
	no := func(b **bool) {
		if *b == nil {
			*b = new(false)
		}
	}
	if s.AttachRequired == nil {
		s.AttachRequired = new(true)
	}
	no(&s.PodInfoOnMount)
	no(&s.StorageCapacity)
	if s.FSGroupPolicy == nil {
		s.FSGroupPolicy = new(storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy)
	}
	if len(s.VolumeLifecycleModes) == 0 {
		s.VolumeLifecycleModes = append(s.VolumeLifecycleModes, storagev1.VolumeLifecyclePersistent)
	}
	no(&s.RequiresRepublish)
	no(&s.SELinuxMount)
	no(&s.PreventPodSchedulingIfMissing)
}

var fsGroupPolicies = []string{string(storagev1.FileFSGroupPolicy), string(storagev1.NoneFSGroupPolicy), string(storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy)}

func (csiDriverRules) validate(d, was *storagev1.CSIDriver) field.ErrorList {
	s, p := &d.Spec, field.NewPath("spec")
	var errs field.ErrorList
	for _, b := range []struct {
		v    *bool
		name string
	}{{s.AttachRequired, "attachedRequired"}, {s.PodInfoOnMount, "podInfoOnMount"}, {s.StorageCapacity, "storageCapacity"}} {
		if b.v == nil {
			errs = append(errs, field.Required(p.Child(b.name), ""))
		}
	}
	if f := s.FSGroupPolicy; f != nil && !slices.Contains(fsGroupPolicies, string(*f)) {
		errs = append(errs, field.NotSupported(p.Child("fsGroupPolicy"), f, fsGroupPolicies))
	}
	audiences := map[string]bool{}
	for i, t := range s.TokenRequests {
		tp := p.Child("tokenRequests").Index(i)
		if audiences[t.Audience] {
			errs = append(errs, field.Duplicate(tp.Child("audience"), t.Audience))
			continue
		}
		audiences[t.Audience] = true
		if e := t.ExpirationSeconds; e != nil {
			if *e < 600 {
				errs = append(errs, field.Invalid(tp.Child("expirationSeconds"), *e, "may not specify a duration less than 10 minutes"))
			}
			if *e > 1<<32 {
				errs = append(errs, field.Invalid(tp.Child("expirationSeconds"), *e, "may not specify a duration larger than 2^32 seconds"))
			}
		}
	}
	for _, m := range s.VolumeLifecycleModes {
		if m != storagev1.VolumeLifecyclePersistent && m != storagev1.VolumeLifecycleEphemeral {
			errs = append(errs, field.NotSupported(p.Child("volumeLifecycleModes"), m, []string{string(storagev1.VolumeLifecyclePersistent), string(storagev1.VolumeLifecycleEphemeral)}))
		}
	}
	if s.SELinuxMount == nil {
		errs = append(errs, field.Required(p.Child("seLinuxMount"), ""))
	}
	if ps := s.NodeAllocatableUpdatePeriodSeconds; ps != nil && *ps < 10 {
		errs = append(errs, field.Invalid(p.Child("nodeAllocatableUpdatePeriodSeconds"), *ps, "must be greater than or equal to 10 seconds"))
	}
	if s.ServiceAccountTokenInSecrets != nil && len(s.TokenRequests) == 0 {
		errs = append(errs, field.Invalid(p.Child("serviceAccountTokenInSecrets"), s.ServiceAccountTokenInSecrets, "serviceAccountTokenInSecrets is set but no tokenRequests are specified"))
	}
	if s.PreventPodSchedulingIfMissing == nil {
		errs = append(errs, field.Required(p.Child("preventPodSchedulingIfMissing"), ""))
	}
	if was == nil {
		return errs
	}
	errs = append(errs, apivalidation.ValidateImmutableField(s.AttachRequired, was.Spec.AttachRequired, p.Child("attachedRequired"))...)
	return append(errs, apivalidation.ValidateImmutableField(s.VolumeLifecycleModes, was.Spec.VolumeLifecycleModes, p.Child("volumeLifecycleModes"))...)
}

const tokenSecretsWarning = "spec.serviceAccountTokenInSecrets is unset; if supported by this CSI driver, set to true to prevent possible logging of tokens in volume attributes"

// warnings are upstream's: token requests whose tokens may end up in
// volume attributes, on a create or when they change.
func (csiDriverRules) warnings(d, was *storagev1.CSIDriver, sub string) []string {
	if sub != "" || len(d.Spec.TokenRequests) == 0 || d.Spec.ServiceAccountTokenInSecrets != nil {
		return nil
	}
	if was != nil && apiequality.Semantic.DeepEqual(d.Spec.TokenRequests, was.Spec.TokenRequests) {
		return nil
	}
	return []string{tokenSecretsWarning}
}

func (csiDriverRules) columns() []metav1.TableColumnDefinition {
	doc := storagev1.CSIDriverSpec{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "AttachRequired", Type: "boolean", Description: doc["attachRequired"]},
		{Name: "PodInfoOnMount", Type: "boolean", Description: doc["podInfoOnMount"]},
		{Name: "StorageCapacity", Type: "boolean", Description: doc["storageCapacity"]},
		{Name: "TokenRequests", Type: "string", Description: doc["tokenRequests"]},
		{Name: "RequiresRepublish", Type: "boolean", Description: doc["requiresRepublish"]},
		{Name: "Modes", Type: "string", Description: doc["volumeLifecycleModes"]},
		ageColumn,
	}
}

func (csiDriverRules) cells(d *storagev1.CSIDriver) []any {
	s := &d.Spec
	or := func(b *bool, def bool) bool {
		if b == nil {
			return def
		}
		return *b
	}
	modes := make([]string, 0, len(s.VolumeLifecycleModes))
	for _, m := range s.VolumeLifecycleModes {
		modes = append(modes, string(m))
	}
	modesCell := strings.Join(modes, ",")
	if modesCell == "" {
		modesCell = "<none>"
	}
	tokens := "<unset>"
	if s.TokenRequests != nil {
		auds := make([]string, 0, len(s.TokenRequests))
		for _, t := range s.TokenRequests {
			auds = append(auds, t.Audience)
		}
		tokens = strings.Join(auds, ",")
	}
	return []any{d.Name, or(s.AttachRequired, true), or(s.PodInfoOnMount, false), or(s.StorageCapacity, false), tokens, or(s.RequiresRepublish, false), modesCell, age(&d.ObjectMeta)}
}

// VolumeAttributesClasses is the storage.k8s.io/v1 volumeattributesclasses
// resource. A create gets the vac-protection finalizer, as upstream's
// StorageObjectInUseProtection gives it; nothing removes it here.
func VolumeAttributesClasses() *registry.Definition {
	k := kindDef{
		group: "storage.k8s.io", version: "v1", resource: "volumeattributesclasses", kind: "VolumeAttributesClass",
		shortNames: []string{"vac"}, scope: registry.Cluster, noGeneration: true,
	}
	h := kindHooksNoGeneration[storagev1.VolumeAttributesClass, vacRules]{kindHooks: newKindHooks[storagev1.VolumeAttributesClass](k, vacRules{})}
	return k.definition(vacHooks{h})
}

type vacHooks struct {
	kindHooksNoGeneration[storagev1.VolumeAttributesClass, vacRules]
}

var _ registry.CreateAdmitter = vacHooks{}

// ReturnDeletedObject: as upstream's store, a delete answers with the
// class.
func (vacHooks) ReturnDeletedObject() {}

// AdmitCreate adds the vac-protection finalizer.
func (vacHooks) AdmitCreate(_ context.Context, obj map[string]any) error {
	md, _ := obj["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		obj["metadata"] = md
	}
	addFinalizer(md, "kubernetes.io/vac-protection")
	return nil
}

type vacRules struct{}

func (vacRules) defaults(*storagev1.VolumeAttributesClass) {}

func (vacRules) validate(c, was *storagev1.VolumeAttributesClass) field.ErrorList {
	var errs field.ErrorList
	if was != nil {
		if c.DriverName != was.DriverName {
			errs = append(errs, field.Forbidden(field.NewPath("driverName"), "updates to driverName are forbidden."))
		}
		if !apiequality.Semantic.DeepEqual(c.Parameters, was.Parameters) {
			errs = append(errs, field.Forbidden(field.NewPath("parameters"), "updates to parameters are forbidden."))
		}
	}
	dp := field.NewPath("driverName")
	if c.DriverName == "" {
		errs = append(errs, field.Required(dp, ""))
	} else {
		for _, msg := range validation.IsQualifiedName(strings.ToLower(c.DriverName)) {
			errs = append(errs, field.Invalid(dp, strings.ToLower(c.DriverName), msg))
		}
	}
	pp := field.NewPath("parameters")
	errs = append(errs, validateParameters(c.Parameters, pp)...)
	if len(c.Parameters) == 0 {
		errs = append(errs, field.Required(pp, "must contain at least one key/value pair"))
	}
	return errs
}

func (vacRules) columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{nameColumn, {Name: "DriverName", Type: "string", Description: storagev1.VolumeAttributesClass{}.SwaggerDoc()["driverName"]}, ageColumn}
}

func (vacRules) cells(c *storagev1.VolumeAttributesClass) []any {
	return []any{c.Name, c.DriverName, age(&c.ObjectMeta)}
}
