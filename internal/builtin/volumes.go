package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/builtin/podwarnings"
	"github.com/crdserver/crdserver/internal/registry"
)

// The storage objects a cluster's controllers and kubelets act on:
// PersistentVolumeClaims and PersistentVolumes (core/v1) and
// StorageClasses (storage.k8s.io/v1). crdserver stores them with
// upstream's defaults, validation and columns; nothing provisions,
// binds or mounts volumes, so a claim stays Pending unless a client
// writes its status.

// Upstream's names of the annotations and finalizers the storage kinds
// share.
const (
	betaStorageClassAnnotation    = "volume.beta.kubernetes.io/storage-class"
	defaultStorageClassAnnotation = "storageclass.kubernetes.io/is-default-class"
	betaDefaultClassAnnotation    = "storageclass.beta.kubernetes.io/is-default-class"
	// PVCProtectionFinalizer is what upstream's StorageObjectInUseProtection
	// admission gives every claim; its pvc-protection controller removes
	// it once no pod uses the claim.
	PVCProtectionFinalizer = "kubernetes.io/pvc-protection"
	pvProtectionFinalizer  = "kubernetes.io/pv-protection"
)

// StorageClassLister lists the stored StorageClasses, for the claims'
// DefaultStorageClass and PersistentVolumeClaimResize admission.
type StorageClassLister func(ctx context.Context) ([]storagev1.StorageClass, error)

// PersistentVolumeClaims is the core/v1 persistentvolumeclaims resource.
// A create gets upstream's admission on claims: the default StorageClass
// among classes when it names none (DefaultStorageClass) and the
// pvc-protection finalizer (StorageObjectInUseProtection); an update
// that grows a claim's request is refused unless the claim is bound and
// its class allows expansion (PersistentVolumeClaimResize). A nil classes
// lists none.
func PersistentVolumeClaims(classes StorageClassLister) *registry.Definition {
	k := kindDef{
		group: "", version: "v1", resource: "persistentvolumeclaims", kind: "PersistentVolumeClaim",
		shortNames: []string{"pvc"}, scope: registry.Namespaced, status: true, noGeneration: true,
		statusMetadata: registry.UserMetadata,
	}
	h := kindHooksNoGeneration[corev1.PersistentVolumeClaim, pvcRules]{kindHooks: newKindHooks[corev1.PersistentVolumeClaim](k, pvcRules{})}
	return k.definition(pvcHooks{kindHooksNoGeneration: h, classes: classes})
}

type pvcHooks struct {
	kindHooksNoGeneration[corev1.PersistentVolumeClaim, pvcRules]
	classes StorageClassLister
}

// ReturnDeletedObject: as upstream's store, a delete answers with the
// claim.
func (pvcHooks) ReturnDeletedObject() {}

var (
	_ registry.CreateAdmitter = pvcHooks{}
	_ registry.WriteChecker   = pvcHooks{}
	_ registry.CreatePreparer = pvcHooks{}
)

// PrepareForCreate resets the status as upstream's strategy does, and
// fills dataSource and dataSourceRef from each other.
func (h pvcHooks) PrepareForCreate(obj map[string]any) {
	h.kindHooksNoGeneration.PrepareForCreate(obj)
	h.rewrite(obj, func(c *corev1.PersistentVolumeClaim) { normalizeDataSources(&c.Spec, nil) })
}

func (h pvcHooks) PrepareForUpdate(obj, old map[string]any) {
	h.kindHooksNoGeneration.PrepareForUpdate(obj, old)
	was, _, err := h.Decode(old)
	if err != nil {
		return
	}
	h.rewrite(obj, func(c *corev1.PersistentVolumeClaim) { normalizeDataSources(&c.Spec, &was.Spec) })
}

// normalizeDataSources drops a dataSource other than a claim or a
// VolumeSnapshot when the claim has no dataSourceRef (upstream's legacy
// behaviour, kept for a stored claim that had one), then fills
// dataSource and dataSourceRef from each other, as upstream's strategy
// does.
func normalizeDataSources(s, was *corev1.PersistentVolumeClaimSpec) {
	inUse := was != nil && (was.DataSource != nil || was.DataSourceRef != nil)
	if !inUse && s.DataSourceRef == nil && s.DataSource != nil {
		ds := s.DataSource
		snapshot := ds.APIGroup != nil && *ds.APIGroup == "snapshot.storage.k8s.io" && ds.Kind == "VolumeSnapshot"
		claim := (ds.APIGroup == nil || *ds.APIGroup == "") && ds.Kind == "PersistentVolumeClaim"
		if !snapshot && !claim {
			s.DataSource = nil
		}
	}
	switch {
	case s.DataSource != nil && s.DataSourceRef == nil:
		s.DataSourceRef = &corev1.TypedObjectReference{Kind: s.DataSource.Kind, Name: s.DataSource.Name}
		if g := s.DataSource.APIGroup; g != nil {
			s.DataSourceRef.APIGroup = new(*g)
		}
	case s.DataSourceRef != nil && s.DataSource == nil && (s.DataSourceRef.Namespace == nil || *s.DataSourceRef.Namespace == ""):
		s.DataSource = &corev1.TypedLocalObjectReference{Kind: s.DataSourceRef.Kind, Name: s.DataSourceRef.Name}
		if g := s.DataSourceRef.APIGroup; g != nil {
			s.DataSource.APIGroup = new(*g)
		}
	}
}

// AdmitCreate runs upstream's DefaultStorageClass and
// StorageObjectInUseProtection plugins, in upstream's order.
func (h pvcHooks) AdmitCreate(ctx context.Context, obj map[string]any) error {
	md, _ := obj["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		obj["metadata"] = md
	}
	ann, _ := md["annotations"].(map[string]any)
	spec, _ := obj["spec"].(map[string]any)
	_, annotated := ann[betaStorageClassAnnotation]
	if !annotated && spec["storageClassName"] == nil && h.classes != nil {
		classes, err := h.classes(ctx)
		if err != nil {
			return fmt.Errorf("listing StorageClasses: %w", err)
		}
		if def := defaultStorageClass(classes); def != "" {
			if spec == nil {
				spec = map[string]any{}
				obj["spec"] = spec
			}
			spec["storageClassName"] = def
		}
	}
	addFinalizer(md, PVCProtectionFinalizer)
	return nil
}

// addFinalizer appends f to the metadata's finalizers unless it is there.
func addFinalizer(md map[string]any, f string) {
	fs, _ := md["finalizers"].([]any)
	if slices.Contains(fs, any(f)) {
		return
	}
	md["finalizers"] = append(slices.Clip(fs), f)
}

// defaultStorageClass names the class annotated default (by the current
// or the beta annotation), or "" when none is (defaultClass).
func defaultStorageClass(classes []storagev1.StorageClass) string {
	metas := make([]metav1.ObjectMeta, len(classes))
	for i := range classes {
		metas[i] = classes[i].ObjectMeta
	}
	return defaultClass(metas, isDefaultStorageClass)
}

func isDefaultStorageClass(m *metav1.ObjectMeta) bool {
	return m.Annotations[defaultStorageClassAnnotation] == "true" || m.Annotations[betaDefaultClassAnnotation] == "true"
}

// errNotExpandable and errNotBound are upstream's PersistentVolumeClaimResize
// refusals.
var (
	errNotBound      = errors.New("Only bound persistent volume claims can be expanded") //nolint:staticcheck // upstream's words
	errNotExpandable = errors.New("only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize")
)

// CheckWrite is upstream's PersistentVolumeClaimResize admission: an
// update that grows the requested storage needs a bound claim whose class
// (unchanged) allows volume expansion. Upstream validates before this
// plugin runs, so an update validation refuses is left to validation.
func (h pvcHooks) CheckWrite(ctx context.Context, obj, old map[string]any) error {
	if old == nil {
		return nil
	}
	now, was, err := h.decodeUpdate(obj, old)
	if err != nil || len(h.rules.validate(now, was)) > 0 {
		return nil
	}
	if err := h.checkResize(ctx, now, was); err != nil {
		return apierrors.NewForbidden(schema.GroupResource{Resource: "persistentvolumeclaims"}, now.Name, err)
	}
	return nil
}

func (h pvcHooks) checkResize(ctx context.Context, now, was *corev1.PersistentVolumeClaim) error {
	newSize, oldSize := now.Spec.Resources.Requests[corev1.ResourceStorage], was.Spec.Resources.Requests[corev1.ResourceStorage]
	if newSize.Cmp(oldSize) <= 0 {
		return nil
	}
	if was.Status.Phase != corev1.ClaimBound {
		return errNotBound
	}
	class, oldClass := claimClass(now), claimClass(was)
	if class == "" || class != oldClass || h.classes == nil {
		return errNotExpandable
	}
	classes, err := h.classes(ctx)
	if err != nil {
		return fmt.Errorf("listing StorageClasses: %w", err)
	}
	for _, c := range classes {
		if c.Name == class && c.AllowVolumeExpansion != nil && *c.AllowVolumeExpansion {
			return nil
		}
	}
	return errNotExpandable
}

// claimClass is the claim's class: the beta annotation's, else its
// storageClassName.
func claimClass(c *corev1.PersistentVolumeClaim) string {
	if class, ok := c.Annotations[betaStorageClassAnnotation]; ok {
		return class
	}
	if c.Spec.StorageClassName != nil {
		return *c.Spec.StorageClassName
	}
	return ""
}

type pvcRules struct{}

func (pvcRules) defaults(c *corev1.PersistentVolumeClaim) {
	if c.Status.Phase == "" {
		c.Status.Phase = corev1.ClaimPending
	}
	if c.Spec.VolumeMode == nil {
		c.Spec.VolumeMode = new(corev1.PersistentVolumeFilesystem)
	}
}

// Upstream's supported access modes, volume modes and reclaim policies,
// sorted as its messages list them.
var (
	accessModes    = []string{string(corev1.ReadOnlyMany), string(corev1.ReadWriteMany), string(corev1.ReadWriteOnce), string(corev1.ReadWriteOncePod)}
	volumeModes    = []string{string(corev1.PersistentVolumeBlock), string(corev1.PersistentVolumeFilesystem)}
	reclaimPolicys = []string{string(corev1.PersistentVolumeReclaimDelete), string(corev1.PersistentVolumeReclaimRecycle), string(corev1.PersistentVolumeReclaimRetain)}
)

const isNotPositive = "must be greater than zero"

// validateAccessModes checks modes as upstream checks a claim's or a
// volume's.
func validateAccessModes(modes []corev1.PersistentVolumeAccessMode, p *field.Path, requiredMsg string) field.ErrorList {
	var errs field.ErrorList
	if len(modes) == 0 {
		errs = append(errs, field.Required(p, requiredMsg))
	}
	rwop, other := false, false
	for _, m := range modes {
		if !slices.Contains(accessModes, string(m)) {
			errs = append(errs, field.NotSupported(p, m, accessModes))
			continue
		}
		if m == corev1.ReadWriteOncePod {
			rwop = true
		} else {
			other = true
		}
	}
	if rwop && other {
		errs = append(errs, field.Forbidden(p, "may not use ReadWriteOncePod with other access modes"))
	}
	return errs
}

func validateClassName(name string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		errs = append(errs, field.Invalid(p, name, msg))
	}
	return errs
}

func validatePVCSpec(s *corev1.PersistentVolumeClaimSpec, p *field.Path) field.ErrorList {
	errs := validateAccessModes(s.AccessModes, p.Child("accessModes"), "at least 1 access mode is required")
	if s.Selector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(s.Selector, metav1validation.LabelSelectorValidationOptions{}, p.Child("selector"))...)
	}
	sp := p.Child("resources").Key(string(corev1.ResourceStorage))
	if q, ok := s.Resources.Requests[corev1.ResourceStorage]; !ok {
		errs = append(errs, field.Required(sp, ""))
	} else if q.Cmp(resource.Quantity{}) <= 0 {
		errs = append(errs, field.Invalid(sp, q.String(), isNotPositive))
	}
	if s.StorageClassName != nil && *s.StorageClassName != "" {
		errs = append(errs, validateClassName(*s.StorageClassName, p.Child("storageClassName"))...)
	}
	if s.VolumeMode != nil && !slices.Contains(volumeModes, string(*s.VolumeMode)) {
		errs = append(errs, field.NotSupported(p.Child("volumeMode"), *s.VolumeMode, volumeModes))
	}
	if ds := s.DataSource; ds != nil {
		errs = append(errs, validateDataSource(ds.APIGroup, ds.Kind, ds.Name, p.Child("dataSource"))...)
	}
	if ref := s.DataSourceRef; ref != nil {
		errs = append(errs, validateDataSource(ref.APIGroup, ref.Kind, ref.Name, p.Child("dataSourceRef"))...)
		if ref.Namespace != nil && *ref.Namespace != "" {
			for _, msg := range apivalidation.ValidateNamespaceName(*ref.Namespace, false) {
				errs = append(errs, field.Invalid(p.Child("dataSourceRef", "namespace"), *ref.Namespace, msg))
			}
		}
	}
	if ref := s.DataSourceRef; ref != nil && ref.Namespace != nil && *ref.Namespace != "" {
		if s.DataSource != nil {
			errs = append(errs, field.Invalid(p, p.Child("dataSource"), "may not be specified when dataSourceRef.namespace is specified"))
		}
	} else if ds := s.DataSource; ds != nil && ref != nil {
		if !apiequality.Semantic.DeepEqual(ds.APIGroup, ref.APIGroup) || ds.Kind != ref.Kind || ds.Name != ref.Name {
			errs = append(errs, field.Invalid(p, p.Child("dataSource"), "must match dataSourceRef"))
		}
	}
	if s.VolumeAttributesClassName != nil && *s.VolumeAttributesClassName != "" {
		errs = append(errs, validateClassName(*s.VolumeAttributesClassName, p.Child("volumeAttributesClassName"))...)
	}
	return errs
}

func validateDataSource(group *string, kind, name string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	}
	if kind == "" {
		errs = append(errs, field.Required(p.Child("kind"), ""))
	}
	g := ""
	if group != nil {
		g = *group
	}
	if g == "" && kind != "PersistentVolumeClaim" {
		errs = append(errs, field.Invalid(p, kind, "must be 'PersistentVolumeClaim' when referencing the default apiGroup"))
	}
	if g != "" {
		for _, msg := range validation.IsDNS1123Subdomain(g) {
			errs = append(errs, field.Invalid(p.Child("apiGroup"), g, msg))
		}
	}
	return errs
}

// validate checks the spec and, on an update, upstream's immutability: the
// spec may change only in volumeName (once), a storageClassName that was
// unset (or named by the beta annotation), and, for a bound claim, its
// requested storage and volumeAttributesClassName.
func (pvcRules) validate(c, was *corev1.PersistentVolumeClaim) field.ErrorList {
	errs := validatePVCSpec(&c.Spec, field.NewPath("spec"))
	if was == nil {
		return errs
	}
	now, old := c.Spec.DeepCopy(), was.Spec.DeepCopy()
	if old.VolumeName == "" {
		old.VolumeName = now.VolumeName
	}
	oldClass, annotated := was.Annotations[betaStorageClassAnnotation]
	newAnn, newAnnotated := c.Annotations[betaStorageClassAnnotation]
	if annotated && was.Spec.StorageClassName == nil && now.StorageClassName != nil && *now.StorageClassName == oldClass && (!newAnnotated || newAnn == oldClass) {
		now.StorageClassName = nil
	} else {
		if newAnn != oldClass {
			errs = append(errs, field.Forbidden(field.NewPath("metadata").Child("annotations", betaStorageClassAnnotation), "field is immutable"))
		}
		if now.StorageClassName != nil && was.Spec.StorageClassName == nil && (!annotated || *now.StorageClassName == oldClass) {
			now.StorageClassName = old.StorageClassName
		}
	}
	if c.Status.Phase == corev1.ClaimBound {
		if now.Resources.Requests != nil {
			now.Resources.Requests[corev1.ResourceStorage] = was.Spec.Resources.Requests[corev1.ResourceStorage]
		}
		now.VolumeAttributesClassName = old.VolumeAttributesClassName
	}
	if !apiequality.Semantic.DeepEqual(now, old) {
		errs = append(errs, field.Forbidden(field.NewPath("spec"), "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n"+specDiff(internalPVCSpec(old), internalPVCSpec(now))))
	}
	newSize, statusSize := c.Spec.Resources.Requests[corev1.ResourceStorage], was.Status.Capacity[corev1.ResourceStorage]
	if newSize.Cmp(was.Spec.Resources.Requests[corev1.ResourceStorage]) < 0 && newSize.Cmp(statusSize) <= 0 {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "resources", "requests", "storage"), "field can not be less than status.capacity"))
	}
	errs = append(errs, apivalidation.ValidateImmutableField(c.Spec.VolumeMode, was.Spec.VolumeMode, field.NewPath("volumeMode"))...)
	if !apiequality.Semantic.DeepEqual(was.Spec.VolumeAttributesClassName, c.Spec.VolumeAttributesClassName) && was.Status.CurrentVolumeAttributesClassName != nil {
		vp := field.NewPath("spec", "volumeAttributesClassName")
		if c.Spec.VolumeAttributesClassName == nil {
			errs = append(errs, field.Forbidden(vp, "update to nil is forbidden when status.currentVolumeAttributesClassName is not nil"))
		} else if *c.Spec.VolumeAttributesClassName == "" {
			errs = append(errs, field.Forbidden(vp, "update to empty string is forbidden when status.currentVolumeAttributesClassName is not nil"))
		}
	}
	return errs
}

// validateStatus is upstream's check of a claim's /status write: access
// modes still there (under upstream's capitalized "Spec"), capacities not
// negative.
func (pvcRules) validateStatus(c *corev1.PersistentVolumeClaim) field.ErrorList {
	var errs field.ErrorList
	if len(c.Spec.AccessModes) == 0 {
		errs = append(errs, field.Required(field.NewPath("Spec", "accessModes"), ""))
	}
	cp := field.NewPath("status", "capacity")
	for _, r := range sortedKeys(c.Status.Capacity) {
		if q := c.Status.Capacity[r]; q.Value() < 0 {
			errs = append(errs, field.Invalid(cp.Key(string(r)), q.Value(), "must be a valid resource quantity"))
		}
	}
	return errs
}

func sortedKeys[V any](m map[corev1.ResourceName]V) []corev1.ResourceName {
	keys := make([]corev1.ResourceName, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// pvcSpecInternal mirrors the field order and names of upstream's
// internal claim spec, which has no JSON tags: its immutability message
// shows a diff of two of them encoded as JSON.
type pvcSpecInternal struct {
	AccessModes               []corev1.PersistentVolumeAccessMode
	Selector                  *metav1.LabelSelector
	Resources                 resourcesInternal
	VolumeName                string
	StorageClassName          *string
	VolumeMode                *corev1.PersistentVolumeMode
	DataSource                *localRefInternal
	DataSourceRef             *refInternal
	VolumeAttributesClassName *string
}

type resourcesInternal struct {
	Limits   corev1.ResourceList
	Requests corev1.ResourceList
}

type localRefInternal struct {
	APIGroup *string
	Kind     string
	Name     string
}

type refInternal struct {
	APIGroup  *string
	Kind      string
	Name      string
	Namespace *string
}

func internalPVCSpec(s *corev1.PersistentVolumeClaimSpec) pvcSpecInternal {
	in := pvcSpecInternal{
		AccessModes: s.AccessModes, Selector: s.Selector,
		Resources:  resourcesInternal{Limits: s.Resources.Limits, Requests: s.Resources.Requests},
		VolumeName: s.VolumeName, StorageClassName: s.StorageClassName, VolumeMode: s.VolumeMode,
		VolumeAttributesClassName: s.VolumeAttributesClassName,
	}
	if ds := s.DataSource; ds != nil {
		in.DataSource = &localRefInternal{APIGroup: ds.APIGroup, Kind: ds.Kind, Name: ds.Name}
	}
	if ref := s.DataSourceRef; ref != nil {
		in.DataSourceRef = &refInternal{APIGroup: ref.APIGroup, Kind: ref.Kind, Name: ref.Name, Namespace: ref.Namespace}
	}
	return in
}

// specDiff is the unified diff (3 lines of context) of a and b as
// indented JSON, as upstream's immutability messages show it.
func specDiff(a, b any) string {
	as, _ := json.Marshal(a)
	bs, _ := json.Marshal(b)
	return specDiffRaw(as, bs)
}

// specDiffRaw is specDiff of two JSON texts.
func specDiffRaw(a, b []byte) string {
	var as, bs bytes.Buffer
	_ = json.Indent(&as, a, "", " ")
	_ = json.Indent(&bs, b, "", " ")
	d, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(as.String()), B: difflib.SplitLines(bs.String()), Context: 3,
	})
	if err != nil {
		return fmt.Sprintf("error generating diff: %v", err)
	}
	return d
}

// warnings are upstream's: the deprecated beta class annotation and a
// fractional byte count requested or limited.
func (pvcRules) warnings(c, _ *corev1.PersistentVolumeClaim, sub string) []string {
	if sub != "" {
		return nil
	}
	var ws []string
	if _, ok := c.Annotations[betaStorageClassAnnotation]; ok {
		ws = append(ws, fmt.Sprintf("%s: %s", field.NewPath("metadata", "annotations").Key(betaStorageClassAnnotation), deprecatedClassAnnotation))
	}
	return append(ws, podwarnings.ClaimSpec(field.NewPath("spec"), &c.Spec)...)
}

const deprecatedClassAnnotation = `deprecated since v1.8; use "storageClassName" attribute instead`

func (pvcRules) columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Status", Type: "string", Description: corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["phase"]},
		{Name: "Volume", Type: "string", Description: corev1.PersistentVolumeClaimSpec{}.SwaggerDoc()["volumeName"]},
		{Name: "Capacity", Type: "string", Description: corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["capacity"]},
		{Name: "Access Modes", Type: "string", Description: corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["accessModes"]},
		{Name: "StorageClass", Type: "string", Description: "StorageClass of the pvc"},
		{Name: "VolumeAttributesClass", Type: "string", Description: "VolumeAttributesClass of the pvc"},
		ageColumn,
		{Name: "VolumeMode", Type: "string", Priority: 1, Description: corev1.PersistentVolumeClaimSpec{}.SwaggerDoc()["volumeMode"]},
	}
}

func (pvcRules) cells(c *corev1.PersistentVolumeClaim) []any {
	phase := string(c.Status.Phase)
	if c.DeletionTimestamp != nil {
		phase = "Terminating"
	}
	capacity, modes := "", ""
	if c.Spec.VolumeName != "" {
		modes = accessModesString(c.Status.AccessModes)
		q := c.Status.Capacity[corev1.ResourceStorage]
		capacity = q.String()
	}
	return []any{c.Name, phase, c.Spec.VolumeName, capacity, modes, claimClass(c), unsetOr(c.Spec.VolumeAttributesClassName), age(&c.ObjectMeta), unsetOr((*string)(c.Spec.VolumeMode))}
}

func unsetOr(s *string) string {
	if s == nil {
		return "<unset>"
	}
	return *s
}

// accessModesString is kubectl's short form of access modes, each once
// in a fixed order.
func accessModesString(modes []corev1.PersistentVolumeAccessMode) string {
	var out []string
	for _, m := range []struct {
		mode  corev1.PersistentVolumeAccessMode
		short string
	}{{corev1.ReadWriteOnce, "RWO"}, {corev1.ReadOnlyMany, "ROX"}, {corev1.ReadWriteMany, "RWX"}, {corev1.ReadWriteOncePod, "RWOP"}} {
		if slices.Contains(modes, m.mode) {
			out = append(out, m.short)
		}
	}
	return strings.Join(out, ",")
}

// StorageClasses is the storage.k8s.io/v1 storageclasses resource: no
// provisioner acts on them. A list's Table marks the default class, as
// upstream's does.
func StorageClasses() *registry.Definition {
	k := kindDef{
		group: "storage.k8s.io", version: "v1", resource: "storageclasses", kind: "StorageClass",
		shortNames: []string{"sc"}, scope: registry.Cluster, noGeneration: true,
	}
	h := kindHooksNoGeneration[storagev1.StorageClass, storageClassRules]{kindHooks: newKindHooks[storagev1.StorageClass](k, storageClassRules{})}
	return k.definition(storageClassHooks{h})
}

type storageClassHooks struct {
	kindHooksNoGeneration[storagev1.StorageClass, storageClassRules]
}

var _ registry.ListTablePrinter = storageClassHooks{}

// ReturnDeletedObject: as upstream's store, a delete answers with the
// StorageClass.
func (storageClassHooks) ReturnDeletedObject() {}

// TableListRow marks, in a list's rows, the effective default class:
// the newest of those annotated default, then the first by name.
func (h storageClassHooks) TableListRow(objs []map[string]any) func(map[string]any) []any {
	classes := make([]storagev1.StorageClass, 0, len(objs))
	for _, o := range objs {
		if c, _, err := h.Decode(o); err == nil {
			classes = append(classes, *c)
		}
	}
	def := defaultStorageClass(classes)
	return func(obj map[string]any) []any {
		cells := h.TableRow(obj)
		if def != "" && len(cells) > 0 && cells[0] == def {
			cells[0] = def + " (default)"
		}
		return cells
	}
}

type storageClassRules struct{}

// Upstream's limits on a class's parameters.
const (
	maxParameterCount = 512
	maxParameterSize  = 256 << 10
)

var volumeBindingModes = []string{string(storagev1.VolumeBindingImmediate), string(storagev1.VolumeBindingWaitForFirstConsumer)}

func (storageClassRules) defaults(c *storagev1.StorageClass) {
	if c.ReclaimPolicy == nil {
		c.ReclaimPolicy = new(corev1.PersistentVolumeReclaimDelete)
	}
	if c.VolumeBindingMode == nil {
		c.VolumeBindingMode = new(storagev1.VolumeBindingImmediate)
	}
}

func (storageClassRules) validate(c, was *storagev1.StorageClass) field.ErrorList {
	var errs field.ErrorList
	pp := field.NewPath("provisioner")
	if c.Provisioner == "" {
		errs = append(errs, field.Required(pp, ""))
	} else {
		for _, msg := range validation.IsQualifiedName(strings.ToLower(c.Provisioner)) {
			errs = append(errs, field.Invalid(pp, strings.ToLower(c.Provisioner), msg))
		}
	}
	errs = append(errs, validateParameters(c.Parameters, field.NewPath("parameters"))...)
	if r := c.ReclaimPolicy; r != nil && *r != "" && *r != corev1.PersistentVolumeReclaimDelete && *r != corev1.PersistentVolumeReclaimRetain {
		errs = append(errs, field.NotSupported(field.NewPath("reclaimPolicy"), r, []string{string(corev1.PersistentVolumeReclaimDelete), string(corev1.PersistentVolumeReclaimRetain)}))
	}
	bp := field.NewPath("volumeBindingMode")
	if m := c.VolumeBindingMode; m == nil {
		errs = append(errs, field.Required(bp, ""))
	} else if !slices.Contains(volumeBindingModes, string(*m)) {
		errs = append(errs, field.NotSupported(bp, m, volumeBindingModes))
	}
	errs = append(errs, validateAllowedTopologies(c.AllowedTopologies, field.NewPath("allowedTopologies"))...)
	if was == nil {
		return errs
	}
	// Upstream's declarative validation words these, without the value.
	if !apiequality.Semantic.DeepEqual(c.Parameters, was.Parameters) {
		errs = append(errs, field.Invalid(field.NewPath("parameters"), nil, apivalidation.FieldImmutableErrorMsg))
	}
	if c.Provisioner != was.Provisioner {
		errs = append(errs, field.Invalid(pp, nil, apivalidation.FieldImmutableErrorMsg))
	}
	if !apiequality.Semantic.DeepEqual(c.ReclaimPolicy, was.ReclaimPolicy) {
		errs = append(errs, field.Invalid(field.NewPath("reclaimPolicy"), nil, apivalidation.FieldImmutableErrorMsg))
	}
	if !apiequality.Semantic.DeepEqual(c.VolumeBindingMode, was.VolumeBindingMode) {
		errs = append(errs, field.Invalid(bp, nil, apivalidation.FieldImmutableErrorMsg))
	}
	return errs
}

func validateParameters(params map[string]string, p *field.Path) field.ErrorList {
	if len(params) > maxParameterCount {
		return field.ErrorList{field.TooLong(p, "", maxParameterCount)}
	}
	var errs field.ErrorList
	size := 0
	for k, v := range params {
		if k == "" {
			errs = append(errs, field.Invalid(p, k, "field can not be empty."))
		}
		size += len(k) + len(v)
	}
	if size > maxParameterSize {
		errs = append(errs, field.TooLong(p, "", maxParameterSize))
	}
	return errs
}

// validateAllowedTopologies checks each term's expressions (a key, once,
// with values) and that no two terms are alike.
func validateAllowedTopologies(terms []corev1.TopologySelectorTerm, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	var seen []map[string]sets.Set[string]
	for i, t := range terms {
		ip := p.Index(i)
		exprs := map[string]sets.Set[string]{}
		for j, r := range t.MatchLabelExpressions {
			rp := ip.Child("matchLabelExpressions").Index(j)
			values := sets.New[string]()
			if len(r.Values) == 0 {
				errs = append(errs, field.Required(rp.Child("values"), ""))
			}
			for k, v := range r.Values {
				if values.Has(v) {
					errs = append(errs, field.Duplicate(rp.Child("values").Index(k), v))
				}
				values.Insert(v)
			}
			errs = append(errs, metav1validation.ValidateLabelName(r.Key, rp.Child("key"))...)
			if _, ok := exprs[r.Key]; ok {
				errs = append(errs, field.Duplicate(rp.Child("key"), r.Key))
			}
			exprs[r.Key] = values
		}
		for _, s := range seen {
			if apiequality.Semantic.DeepEqual(exprs, s) {
				errs = append(errs, field.Duplicate(ip.Child("matchLabelExpressions"), ""))
			}
		}
		seen = append(seen, exprs)
	}
	return errs
}

// warnings are upstream's: deprecated node labels as topology keys.
func (storageClassRules) warnings(c, _ *storagev1.StorageClass, _ string) []string {
	var ws []string
	for i, t := range c.AllowedTopologies {
		for j, r := range t.MatchLabelExpressions {
			if msg, ok := podwarnings.DeprecatedNodeLabel(r.Key); ok {
				ws = append(ws, fmt.Sprintf("%s: %s", field.NewPath("allowedTopologies").Index(i).Child("matchLabelExpressions").Index(j).Child("key"), msg))
			}
		}
	}
	return ws
}

func (storageClassRules) columns() []metav1.TableColumnDefinition {
	doc := storagev1.StorageClass{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Provisioner", Type: "string", Description: doc["provisioner"]},
		{Name: "ReclaimPolicy", Type: "string", Description: doc["reclaimPolicy"]},
		{Name: "VolumeBindingMode", Type: "string", Description: doc["volumeBindingMode"]},
		{Name: "AllowVolumeExpansion", Type: "string", Description: doc["allowVolumeExpansion"]},
		ageColumn,
	}
}

func (storageClassRules) cells(c *storagev1.StorageClass) []any {
	reclaim, binding := string(corev1.PersistentVolumeReclaimDelete), string(storagev1.VolumeBindingImmediate)
	if c.ReclaimPolicy != nil {
		reclaim = string(*c.ReclaimPolicy)
	}
	if c.VolumeBindingMode != nil {
		binding = string(*c.VolumeBindingMode)
	}
	expand := c.AllowVolumeExpansion != nil && *c.AllowVolumeExpansion
	return []any{c.Name, c.Provisioner, reclaim, binding, expand, age(&c.ObjectMeta)}
}
