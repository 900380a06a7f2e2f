package builtin

import (
	"math"

	storagev1 "k8s.io/api/storage/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/registry"
)

// VolumeAttachments is the storage.k8s.io/v1 volumeattachments resource:
// no attacher acts on them, so their status is what /status writes. The
// spec is immutable. An inline volume spec is checked for what inline
// volumes may not have (a claim, a capacity) and its CSI source alone.
func VolumeAttachments() *registry.Definition {
	k := kindDef{
		group: "storage.k8s.io", version: "v1", resource: "volumeattachments", kind: "VolumeAttachment",
		scope: registry.Cluster, status: true, noGeneration: true, conditional: true,
	}
	h := kindHooksNoGeneration[storagev1.VolumeAttachment, volumeAttachmentRules]{kindHooks: newKindHooks[storagev1.VolumeAttachment](k, volumeAttachmentRules{})}
	return k.definition(volumeAttachmentHooks{h})
}

type volumeAttachmentHooks struct {
	kindHooksNoGeneration[storagev1.VolumeAttachment, volumeAttachmentRules]
}

// ReturnDeletedObject: as upstream's store, a delete answers with the
// attachment.
func (volumeAttachmentHooks) ReturnDeletedObject() {}

type volumeAttachmentRules struct{}

// Upstream's limits on an attachment's status.
const (
	maxAttachmentMetadataSize = 256 << 10
	maxVolumeErrorMessageSize = 1024
)

func (volumeAttachmentRules) defaults(*storagev1.VolumeAttachment) {}

func (r volumeAttachmentRules) validate(a, was *storagev1.VolumeAttachment) field.ErrorList {
	s, p := &a.Spec, field.NewPath("spec")
	var errs field.ErrorList
	sp := p.Child("source")
	switch src := s.Source; {
	case src.InlineVolumeSpec == nil && src.PersistentVolumeName == nil:
		errs = append(errs, field.Required(sp, "must specify exactly one of inlineVolumeSpec and persistentVolumeName"))
	case src.InlineVolumeSpec != nil && src.PersistentVolumeName != nil:
		errs = append(errs, field.Forbidden(sp, "must specify exactly one of inlineVolumeSpec and persistentVolumeName"))
	case src.PersistentVolumeName != nil:
		if *src.PersistentVolumeName == "" {
			errs = append(errs, field.Required(sp.Child("persistentVolumeName"), "must specify non empty persistentVolumeName"))
		}
	default:
		ip, in := sp.Child("inlineVolumeSpec"), src.InlineVolumeSpec
		if in.ClaimRef != nil {
			errs = append(errs, field.Forbidden(ip.Child("claimRef"), "may not be specified in the context of inline volumes"))
		}
		if len(in.Capacity) != 0 {
			errs = append(errs, field.Forbidden(ip.Child("capacity"), "may not be specified in the context of inline volumes"))
		}
		if in.CSI == nil {
			errs = append(errs, field.Required(ip.Child("csi"), "has to be specified in the context of inline volumes"))
		}
		errs = append(errs, validateAccessModes(in.AccessModes, ip.Child("accessModes"), "")...)
		if in.CSI != nil {
			errs = append(errs, validatePVSource(in, "CSI", ip.Child("csi"), false)...)
		}
	}
	for _, msg := range validation.IsDNS1123Subdomain(s.NodeName) {
		errs = append(errs, field.Invalid(p.Child("nodeName"), s.NodeName, msg))
	}
	errs = append(errs, r.validateStatus(a)...)
	if name := s.Source.PersistentVolumeName; name != nil {
		for _, msg := range validation.IsDNS1123Subdomain(*name) {
			errs = append(errs, field.Invalid(field.NewPath("spec.source.persistentVolumeName"), *name, msg))
		}
	}
	// Upstream's declarative validation checks the attacher, listed last.
	errs = append(errs, validateCSIDriverName(s.Attacher, p.Child("attacher"))...)
	if was != nil && !apiequality.Semantic.DeepEqual(a.Spec, was.Spec) {
		// Upstream's declarative validation words it, without the value.
		errs = append(errs, field.Invalid(p, nil, apivalidation.FieldImmutableErrorMsg))
	}
	return errs
}

// validateStatus checks the attachment metadata's size and the errors'
// messages and codes.
func (volumeAttachmentRules) validateStatus(a *storagev1.VolumeAttachment) field.ErrorList {
	p := field.NewPath("status")
	var errs field.ErrorList
	size := 0
	for k, v := range a.Status.AttachmentMetadata {
		size += len(k) + len(v)
	}
	if size > maxAttachmentMetadataSize {
		errs = append(errs, field.TooLong(p.Child("attachmentMetadata"), "", maxAttachmentMetadataSize))
	}
	for _, e := range []struct {
		err  *storagev1.VolumeError
		name string
	}{{a.Status.AttachError, "attachError"}, {a.Status.DetachError, "detachError"}} {
		if e.err == nil {
			continue
		}
		if len(e.err.Message) > maxVolumeErrorMessageSize {
			errs = append(errs, field.TooLong(p.Child(e.name, "message"), "", maxVolumeErrorMessageSize))
		}
		if c := e.err.ErrorCode; c != nil && *c < 0 {
			errs = append(errs, field.Invalid(p.Child(e.name, "errorCode"), *c, validation.InclusiveRangeError(0, math.MaxInt32)))
		}
	}
	return errs
}

func (volumeAttachmentRules) columns() []metav1.TableColumnDefinition {
	spec := storagev1.VolumeAttachmentSpec{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Attacher", Type: "string", Format: "name", Description: spec["attacher"]},
		{Name: "PV", Type: "string", Description: storagev1.VolumeAttachmentSource{}.SwaggerDoc()["persistentVolumeName"]},
		{Name: "Node", Type: "string", Description: spec["nodeName"]},
		{Name: "Attached", Type: "boolean", Description: storagev1.VolumeAttachmentStatus{}.SwaggerDoc()["attached"]},
		ageColumn,
	}
}

func (volumeAttachmentRules) cells(a *storagev1.VolumeAttachment) []any {
	pv := ""
	if a.Spec.Source.PersistentVolumeName != nil {
		pv = *a.Spec.Source.PersistentVolumeName
	}
	return []any{a.Name, a.Spec.Attacher, pv, a.Spec.NodeName, a.Status.Attached, age(&a.ObjectMeta)}
}

// CSIStorageCapacities is the storage.k8s.io/v1 csistoragecapacities
// resource: what a CSI driver reports, stored; nothing schedules by it.
func CSIStorageCapacities() *registry.Definition {
	return define[storagev1.CSIStorageCapacity](kindDef{
		group: "storage.k8s.io", version: "v1", resource: "csistoragecapacities", kind: "CSIStorageCapacity",
		scope: registry.Namespaced, noGeneration: true, conditional: true,
	}, csiStorageCapacityRules{})
}

type csiStorageCapacityRules struct{}

func (csiStorageCapacityRules) defaults(*storagev1.CSIStorageCapacity) {}

func (csiStorageCapacityRules) validate(c, was *storagev1.CSIStorageCapacity) field.ErrorList {
	errs := metav1validation.ValidateLabelSelector(c.NodeTopology, metav1validation.LabelSelectorValidationOptions{}, field.NewPath("nodeTopology"))
	errs = append(errs, validateClassName(c.StorageClassName, field.NewPath("storageClassName"))...)
	if q := c.Capacity; q != nil && q.Cmp(resource.Quantity{}) < 0 {
		errs = append(errs, field.Invalid(field.NewPath("capacity"), q.String(), apivalidation.IsNegativeErrorMsg))
	}
	if was == nil {
		return errs
	}
	if !apiequality.Semantic.DeepEqual(c.NodeTopology, was.NodeTopology) {
		errs = append(errs, field.Invalid(field.NewPath("nodeTopology"), c.NodeTopology, apivalidation.FieldImmutableErrorMsg))
	}
	if c.StorageClassName != was.StorageClassName {
		errs = append(errs, field.Invalid(field.NewPath("storageClassName"), c.StorageClassName, apivalidation.FieldImmutableErrorMsg))
	}
	return errs
}

// columns are upstream's default Table (its store registers no printer
// for the kind): the name and when it was created.
func (csiStorageCapacityRules) columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Created At", Type: "date", Description: ageColumn.Description},
	}
}

func (csiStorageCapacityRules) cells(c *storagev1.CSIStorageCapacity) []any {
	return []any{c.Name, c.CreationTimestamp}
}
