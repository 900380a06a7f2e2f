package builtin

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"path"
	"reflect"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/builtin/podwarnings"
	"github.com/crdserver/crdserver/internal/registry"
)

// PersistentVolumes is the core/v1 persistentvolumes resource. A volume
// starts Pending, as upstream's strategy sets it; nothing binds it to a
// claim, so its phase is what /status writes. now stamps
// status.lastPhaseTransitionTime (time.Now when nil).
func PersistentVolumes(now func() time.Time) *registry.Definition {
	if now == nil {
		now = time.Now
	}
	k := kindDef{
		group: "", version: "v1", resource: "persistentvolumes", kind: "PersistentVolume",
		shortNames: []string{"pv"}, scope: registry.Cluster, status: true, noGeneration: true,
		statusMetadata: registry.UserMetadata,
	}
	h := kindHooksNoGeneration[corev1.PersistentVolume, pvRules]{kindHooks: newKindHooks[corev1.PersistentVolume](k, pvRules{})}
	return k.definition(pvHooks{kindHooksNoGeneration: h, now: now})
}

type pvHooks struct {
	kindHooksNoGeneration[corev1.PersistentVolume, pvRules]
	now func() time.Time
}

var (
	_ registry.CreatePreparer       = pvHooks{}
	_ registry.StatusUpdatePreparer = pvHooks{}
	_ registry.CreateAdmitter       = pvHooks{}
)

// ReturnDeletedObject: as upstream's store, a delete answers with the
// volume.
func (pvHooks) ReturnDeletedObject() {}

// PrepareForCreate starts the volume Pending, at the time of its create.
func (h pvHooks) PrepareForCreate(obj map[string]any) {
	h.kindHooksNoGeneration.PrepareForCreate(obj)
	t := metav1.NewTime(h.now().Truncate(time.Second))
	h.rewrite(obj, func(v *corev1.PersistentVolume) {
		v.Status = corev1.PersistentVolumeStatus{Phase: corev1.VolumePending, LastPhaseTransitionTime: &t}
	})
}

// PrepareForStatusUpdate stamps a phase change the writer gave no new
// transition time, and keeps the stored time when the phase stays.
func (h pvHooks) PrepareForStatusUpdate(obj, old map[string]any) {
	was, _, err := h.Decode(old)
	if err != nil {
		return
	}
	h.rewrite(obj, func(v *corev1.PersistentVolume) {
		s, ws := &v.Status, &was.Status
		switch {
		case s.Phase == ws.Phase && s.LastPhaseTransitionTime == nil:
			s.LastPhaseTransitionTime = ws.LastPhaseTransitionTime
		case s.Phase != ws.Phase && (s.LastPhaseTransitionTime == nil || s.LastPhaseTransitionTime.Equal(ws.LastPhaseTransitionTime)):
			t := metav1.NewTime(h.now().Truncate(time.Second))
			s.LastPhaseTransitionTime = &t
		}
	})
}

// AdmitCreate is upstream's StorageObjectInUseProtection on volumes: the
// pv-protection finalizer.
func (pvHooks) AdmitCreate(_ context.Context, obj map[string]any) error {
	md, _ := obj["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		obj["metadata"] = md
	}
	addFinalizer(md, pvProtectionFinalizer)
	return nil
}

type pvRules struct{}

func (pvRules) defaults(v *corev1.PersistentVolume) {
	if v.Status.Phase == "" {
		v.Status.Phase = corev1.VolumePending
	}
	if v.Spec.PersistentVolumeReclaimPolicy == "" {
		v.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
	}
	if v.Spec.VolumeMode == nil {
		v.Spec.VolumeMode = new(corev1.PersistentVolumeFilesystem)
	}
	for k, q := range v.Spec.Capacity {
		q.RoundUp(-3)
		v.Spec.Capacity[k] = q
	}
	src := &v.Spec.PersistentVolumeSource
	if hp := src.HostPath; hp != nil && hp.Type == nil {
		hp.Type = new(corev1.HostPathUnset)
	}
	if rbd := src.RBD; rbd != nil {
		rbd.RBDPool = cmp.Or(rbd.RBDPool, "rbd")
		rbd.RadosUser = cmp.Or(rbd.RadosUser, "admin")
		rbd.Keyring = cmp.Or(rbd.Keyring, "/etc/ceph/keyring")
	}
	if is := src.ISCSI; is != nil {
		is.ISCSIInterface = cmp.Or(is.ISCSIInterface, "default")
	}
	if ad := src.AzureDisk; ad != nil {
		if ad.CachingMode == nil {
			ad.CachingMode = new(corev1.AzureDataDiskCachingReadWrite)
		}
		if ad.FSType == nil {
			ad.FSType = new("ext4")
		}
		if ad.ReadOnly == nil {
			ad.ReadOnly = new(false)
		}
		if ad.Kind == nil {
			ad.Kind = new(corev1.AzureSharedBlobDisk)
		}
	}
	if sio := src.ScaleIO; sio != nil {
		sio.StorageMode = cmp.Or(sio.StorageMode, "ThinProvisioned")
		sio.FSType = cmp.Or(sio.FSType, "xfs")
	}
}

// pvSources are the volume sources of a PersistentVolumeSource in
// upstream's order of checking, by JSON name, with the path upstream's
// "more than 1" error names (cephFS, unlike its JSON name).
var pvSources = func() []struct{ field, json, path string } {
	t := reflect.TypeFor[corev1.PersistentVolumeSource]()
	order := []string{"HostPath", "GCEPersistentDisk", "AWSElasticBlockStore", "Glusterfs", "Flocker", "NFS", "RBD", "Quobyte", "CephFS", "ISCSI", "Cinder", "FC", "FlexVolume", "AzureFile", "VsphereVolume", "PhotonPersistentDisk", "PortworxVolume", "AzureDisk", "ScaleIO", "Local", "StorageOS", "CSI"}
	out := make([]struct{ field, json, path string }, 0, len(order))
	for _, name := range order {
		f, _ := t.FieldByName(name)
		j, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		p := j
		if name == "CephFS" {
			p = "cephFS"
		}
		out = append(out, struct{ field, json, path string }{name, j, p})
	}
	return out
}()

var hostPathTypes = []string{"", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate", "Socket"}

func (pvRules) validate(v, was *corev1.PersistentVolume) field.ErrorList {
	s, p := &v.Spec, field.NewPath("spec")
	errs := validateAccessModes(s.AccessModes, p.Child("accessModes"), "")
	if len(s.Capacity) == 0 {
		errs = append(errs, field.Required(p.Child("capacity"), ""))
	}
	if _, ok := s.Capacity[corev1.ResourceStorage]; !ok || len(s.Capacity) > 1 {
		errs = append(errs, field.NotSupported(p.Child("capacity"), s.Capacity, []string{string(corev1.ResourceStorage)}))
	}
	for _, r := range sortedKeys(s.Capacity) {
		q, rp := s.Capacity[r], p.Child("capacity").Key(string(r))
		if q.Value() < 0 {
			errs = append(errs, field.Invalid(rp, q.Value(), "must be a valid resource quantity"))
		}
		if q.Cmp(resource.Quantity{}) <= 0 {
			errs = append(errs, field.Invalid(rp, q.String(), isNotPositive))
		}
	}
	if r := s.PersistentVolumeReclaimPolicy; r != "" && !slices.Contains(reclaimPolicys, string(r)) {
		errs = append(errs, field.NotSupported(p.Child("persistentVolumeReclaimPolicy"), r, reclaimPolicys))
	}
	affinity := false
	if na := s.NodeAffinity; na != nil {
		affinity = true
		if na.Required == nil {
			errs = append(errs, field.Required(p.Child("nodeAffinity", "required"), "must specify required node constraints"))
		} else {
			errs = append(errs, validateNodeSelector(na.Required, p.Child("nodeAffinity", "required"))...)
		}
	}
	src := reflect.ValueOf(s.PersistentVolumeSource)
	n := 0
	for _, vs := range pvSources {
		if src.FieldByName(vs.field).IsNil() {
			continue
		}
		if n > 0 && vs.field != "FlexVolume" {
			errs = append(errs, field.Forbidden(p.Child(vs.path), "may not specify more than 1 volume type"))
			continue
		}
		n++
		errs = append(errs, validatePVSource(s, vs.field, p.Child(vs.json), affinity)...)
	}
	if n == 0 {
		errs = append(errs, field.Required(p, "must specify a volume type"))
	}
	if s.HostPath != nil && path.Clean(s.HostPath.Path) == "/" && s.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimRecycle {
		errs = append(errs, field.Forbidden(p.Child("persistentVolumeReclaimPolicy"), "may not be 'recycle' for a hostPath mount of '/'"))
	}
	if s.StorageClassName != "" {
		errs = append(errs, validateClassName(s.StorageClassName, p.Child("storageClassName"))...)
	}
	if s.VolumeMode != nil && !slices.Contains(volumeModes, string(*s.VolumeMode)) {
		errs = append(errs, field.NotSupported(p.Child("volumeMode"), *s.VolumeMode, volumeModes))
	}
	if c := s.VolumeAttributesClassName; c != nil {
		if *c == "" {
			errs = append(errs, field.Required(p.Child("volumeAttributesClassName"), "an empty string is disallowed"))
		} else {
			errs = append(errs, validateClassName(*c, p.Child("volumeAttributesClassName"))...)
		}
		if s.CSI == nil {
			errs = append(errs, field.Required(p.Child("csi"), "has to be specified when using volumeAttributesClassName"))
		}
	}
	if was == nil {
		return errs
	}
	now := v.Spec.PersistentVolumeSource
	if was.Spec.CSI != nil && was.Spec.CSI.ControllerExpandSecretRef == nil && now.CSI != nil && now.CSI.ControllerExpandSecretRef != nil {
		csi := *now.CSI
		csi.ControllerExpandSecretRef = nil
		now.CSI = &csi
	}
	if !apiequality.Semantic.DeepEqual(now, was.Spec.PersistentVolumeSource) {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "persistentvolumesource"), "spec.persistentvolumesource is immutable after creation\n"+specDiffRaw(goNamesJSON(reflect.ValueOf(was.Spec.PersistentVolumeSource)), goNamesJSON(reflect.ValueOf(now)))))
	}
	errs = append(errs, apivalidation.ValidateImmutableField(v.Spec.VolumeMode, was.Spec.VolumeMode, field.NewPath("volumeMode"))...)
	if was.Spec.VolumeAttributesClassName != nil && v.Spec.VolumeAttributesClassName == nil {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "volumeAttributesClassName"), "update from non-nil value to nil is forbidden"))
	}
	return errs
}

// validatePVSource checks the sources whose rules crdserver knows:
// hostPath, nfs, local (which needs node affinity) and csi.
func validatePVSource(s *corev1.PersistentVolumeSpec, name string, p *field.Path, affinity bool) field.ErrorList {
	var errs field.ErrorList
	switch name {
	case "HostPath":
		if s.HostPath.Path == "" {
			return field.ErrorList{field.Required(p.Child("path"), "")}
		}
		errs = append(errs, noBacksteps(s.HostPath.Path, p.Child("path"))...)
		if t := s.HostPath.Type; t != nil && !slices.Contains(hostPathTypes, string(*t)) {
			errs = append(errs, field.NotSupported(p.Child("type"), t, hostPathTypes))
		}
	case "NFS":
		errs = append(errs, validateNFS(s.NFS, p)...)
	case "Local":
		if s.Local.Path == "" {
			errs = append(errs, field.Required(p.Child("path"), ""))
		} else {
			errs = append(errs, noBacksteps(s.Local.Path, p.Child("path"))...)
		}
		if !affinity {
			errs = append(errs, field.Required(field.NewPath("spec", "nodeAffinity"), "Local volume requires node affinity"))
		}
	case "CSI":
		errs = append(errs, validateCSIDriverName(s.CSI.Driver, p.Child("driver"))...)
		if s.CSI.VolumeHandle == "" {
			errs = append(errs, field.Required(p.Child("volumeHandle"), ""))
		}
	}
	return errs
}

func noBacksteps(target string, p *field.Path) field.ErrorList {
	if slices.Contains(strings.Split(target, "/"), "..") {
		return field.ErrorList{field.Invalid(p, target, "must not contain '..'")}
	}
	return nil
}

// validateStatus: upstream checks nothing of a volume's status but its
// metadata.
func (pvRules) validateStatus(*corev1.PersistentVolume) field.ErrorList { return nil }

func (pvRules) columns() []metav1.TableColumnDefinition {
	spec, status := corev1.PersistentVolumeSpec{}.SwaggerDoc(), corev1.PersistentVolumeStatus{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Capacity", Type: "string", Description: spec["capacity"]},
		{Name: "Access Modes", Type: "string", Description: spec["accessModes"]},
		{Name: "Reclaim Policy", Type: "string", Description: spec["persistentVolumeReclaimPolicy"]},
		{Name: "Status", Type: "string", Description: status["phase"]},
		{Name: "Claim", Type: "string", Description: spec["claimRef"]},
		{Name: "StorageClass", Type: "string", Description: "StorageClass of the pv"},
		{Name: "VolumeAttributesClass", Type: "string", Description: "VolumeAttributesClass of the pv"},
		{Name: "Reason", Type: "string", Description: status["reason"]},
		ageColumn,
		{Name: "VolumeMode", Type: "string", Priority: 1, Description: spec["volumeMode"]},
	}
}

func (pvRules) cells(v *corev1.PersistentVolume) []any {
	claim := ""
	if r := v.Spec.ClaimRef; r != nil {
		claim = r.Namespace + "/" + r.Name
	}
	q := v.Spec.Capacity[corev1.ResourceStorage]
	phase := string(v.Status.Phase)
	if v.DeletionTimestamp != nil {
		phase = "Terminating"
	}
	class := v.Spec.StorageClassName
	if c, ok := v.Annotations[betaStorageClassAnnotation]; ok {
		class = c
	}
	return []any{v.Name, q.String(), accessModesString(v.Spec.AccessModes), string(v.Spec.PersistentVolumeReclaimPolicy),
		phase, claim, class, unsetOr(v.Spec.VolumeAttributesClassName), v.Status.Reason, age(&v.ObjectMeta), unsetOr((*string)(v.Spec.VolumeMode))}
}

// goNamesJSON encodes v as encoding/json encodes upstream's internal
// types, which have the fields of the core/v1 ones in the same order but
// no JSON tags: every field, by its Go name, an embedded struct's fields
// among its container's (EphemeralContainer's EphemeralContainerCommon,
// Probe's ProbeHandler). apimachinery's types keep their own encoding.
// encoding/json's rule for two fields of one name (the shallower is kept,
// neither at one depth) is not followed: these types have none such.
func goNamesJSON(v reflect.Value) []byte {
	var b bytes.Buffer
	writeGoNames(&b, v)
	return b.Bytes()
}

var jsonMarshaler = reflect.TypeFor[json.Marshaler]()

func writeGoNames(b *bytes.Buffer, v reflect.Value) {
	t := v.Type()
	switch {
	case t.Kind() == reflect.Pointer || t.Kind() == reflect.Map || t.Kind() == reflect.Slice:
		if v.IsNil() {
			b.WriteString("null")
			return
		}
	}
	if t.Implements(jsonMarshaler) || strings.HasPrefix(t.PkgPath(), "k8s.io/apimachinery/") || t.Kind() == reflect.Map && strings.HasPrefix(t.Elem().PkgPath(), "k8s.io/apimachinery/") {
		j, _ := json.Marshal(v.Interface())
		b.Write(j)
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		writeGoNames(b, v.Elem())
	case reflect.Struct:
		b.WriteByte('{')
		writeGoNamesFields(b, v, 0)
		b.WriteByte('}')
	case reflect.Slice:
		b.WriteByte('[')
		for i := range v.Len() {
			if i > 0 {
				b.WriteByte(',')
			}
			writeGoNames(b, v.Index(i))
		}
		b.WriteByte(']')
	default:
		j, _ := json.Marshal(v.Interface())
		b.Write(j)
	}
}

// writeGoNamesFields writes the members of struct v after n others,
// those of an embedded struct in its place, and returns how many there
// are then.
func writeGoNamesFields(b *bytes.Buffer, v reflect.Value, n int) int {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct && !strings.HasPrefix(f.Type.PkgPath(), "k8s.io/apimachinery/") {
			n = writeGoNamesFields(b, v.Field(i), n)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		j, _ := json.Marshal(f.Name)
		b.Write(j)
		b.WriteByte(':')
		writeGoNames(b, v.Field(i))
	}
	return n
}

// warnings are upstream's: deprecated annotations, the Recycle policy,
// deprecated node labels in the node affinity and volume plugins that no
// longer work.
func (pvRules) warnings(v, _ *corev1.PersistentVolume, sub string) []string {
	if sub != "" {
		return nil
	}
	var ws []string
	for _, a := range []struct{ key, msg string }{
		{betaStorageClassAnnotation, deprecatedClassAnnotation},
		{"volume.beta.kubernetes.io/mount-options", `deprecated since v1.31; use "mountOptions" attribute instead`},
	} {
		if _, ok := v.Annotations[a.key]; ok {
			ws = append(ws, fmt.Sprintf("%s: %s", field.NewPath("metadata", "annotations").Key(a.key), a.msg))
		}
	}
	s := &v.Spec
	if s.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimRecycle {
		ws = append(ws, "spec.persistentVolumeReclaimPolicy: The Recycle reclaim policy is deprecated. Instead, the recommended approach is to use dynamic provisioning.")
	}
	if s.NodeAffinity != nil && s.NodeAffinity.Required != nil {
		tp := field.NewPath("spec", "nodeAffinity", "required", "nodeSelectorTerms")
		for i, t := range s.NodeAffinity.Required.NodeSelectorTerms {
			for j, e := range t.MatchExpressions {
				if msg, ok := podwarnings.DeprecatedNodeLabel(e.Key); ok {
					ws = append(ws, fmt.Sprintf("%s: %s is %s", tp.Index(i).Child("matchExpressions").Index(j).Child("key"), e.Key, msg))
				}
			}
		}
	}
	for _, d := range []struct {
		set        bool
		path, when string
	}{
		{s.CephFS != nil, "cephfs", "deprecated in v1.28, non-functional in v1.31+"},
		{s.PhotonPersistentDisk != nil, "photonPersistentDisk", "deprecated in v1.11, non-functional in v1.16+"},
		{s.ScaleIO != nil, "scaleIO", "deprecated in v1.16, non-functional in v1.22+"},
		{s.StorageOS != nil, "storageOS", "deprecated in v1.22, non-functional in v1.25+"},
		{s.Glusterfs != nil, "glusterfs", "deprecated in v1.25, non-functional in v1.26+"},
		{s.RBD != nil, "rbd", "deprecated in v1.28, non-functional in v1.31+"},
	} {
		if d.set {
			ws = append(ws, fmt.Sprintf("spec.%s: %s", d.path, d.when))
		}
	}
	return ws
}
