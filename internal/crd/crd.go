// Package crd is the CustomResourceDefinition API: the built-in
// apiextensions.k8s.io/v1 customresourcedefinitions resource (defaults,
// status rules, validation, deletion through the cleanup finalizer), the
// conversion of a stored CRD into the registry.Definition that serves its
// custom resources, and the status conditions and accepted names that the
// CRD controller computes. Everything here is pure: no storage, no clock
// (callers pass the time), no goroutines.
package crd

import (
	"fmt"
	"slices"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/registry"
)

// Group, resource and kind of the CRD API itself.
const (
	Group    = "apiextensions.k8s.io"
	Version  = "v1"
	Resource = "customresourcedefinitions"
	Kind     = "CustomResourceDefinition"
)

// CleanupFinalizer keeps a deleted CRD until the cleanup controller has
// deleted every instance of it.
const CleanupFinalizer = "customresourcecleanup.apiextensions.k8s.io"

// Definition is the built-in customresourcedefinitions resource, with
// schemas held to the structural rules (see StructuralChecker).
func Definition() *registry.Definition { return NewDefinition(StructuralChecker{}) }

// NewDefinition is Definition with schemas checks: schemas, when not nil,
// validates every openAPIV3Schema of a CRD being written.
func NewDefinition(schemas SchemaChecker) *registry.Definition {
	return &registry.Definition{
		Group:      Group,
		Resource:   Resource,
		Singular:   "customresourcedefinition",
		Kind:       Kind,
		ListKind:   Kind + "List",
		ShortNames: []string{"crd", "crds"},
		Categories: []string{"api-extensions"},
		Scope:      registry.Cluster,
		Versions: []registry.Version{{
			Name: Version, Served: true, Storage: true,
			Subresources:   statusKeepingMetadata,
			PrinterColumns: crdPrinterColumns,
		}, {
			// The legacy API (v1beta1.go), converted to v1 for storage.
			Name: VersionV1beta1, Served: true,
			Deprecated:         true,
			DeprecationWarning: "apiextensions.k8s.io/v1beta1 CustomResourceDefinition is deprecated in v1.16+, unavailable in v1.22+; use apiextensions.k8s.io/v1 CustomResourceDefinition",
			RemovedRelease:     "1.22",
			Subresources:       statusKeepingMetadata,
			PrinterColumns:     crdPrinterColumns,
		}},
		Hooks:                Hooks{Schemas: schemas},
		HashedStorageVersion: VersionV1beta1,
	}
}

// crdPrinterColumns are the columns JSONPath can express; Hooks.TableColumns
// and TableRow give upstream's full table (Versions and Established are
// computed, Created At is an absolute time).
// statusKeepingMetadata is the CRDs' status subresource: upstream's status
// strategy means to reset the metadata a status write sets, but resets it
// to the request's own, and declares the spec alone reset to match
// (kubernetes#137681), so a status write keeps the labels, annotations,
// finalizers and owner references it sets.
var statusKeepingMetadata = registry.Subresources{Status: true, StatusMetadata: registry.UserMetadata}

var crdPrinterColumns = []registry.PrinterColumn{
	{Name: "Scope", Type: "string", JSONPath: ".spec.scope", Description: "Cluster/Namespaced"},
	{Name: "Created At", Type: "date", JSONPath: ".metadata.creationTimestamp", Description: metaDocs["creationTimestamp"]},
	{Name: "Group", Type: "string", JSONPath: ".spec.group", Priority: 1, Description: "API group"},
	{Name: "Kind", Type: "string", JSONPath: ".spec.names.kind", Priority: 1, Description: "CustomResource kind"},
}

var metaDocs = metav1.ObjectMeta{}.SwaggerDoc()

// Hooks is the behaviour of the customresourcedefinitions resource beyond
// a schema. The zero value checks schemas for presence only.
type Hooks struct {
	// Schemas validates each openAPIV3Schema; nil skips the schema's
	// internal rules.
	Schemas SchemaChecker
}

var (
	_ registry.CreatePreparer       = Hooks{}
	_ registry.UpdatePreparer       = Hooks{}
	_ registry.Validator            = Hooks{}
	_ registry.CreateNameValidator  = Hooks{}
	_ registry.VersionValidator     = Hooks{}
	_ registry.Finalizer            = Hooks{}
	_ registry.StrategicMerger      = Hooks{}
	_ registry.StatusUpdatePreparer = Hooks{}
	_ registry.Protobuf             = Hooks{}
	_ registry.Defaulter            = Hooks{}
	_ registry.Zeroer               = Hooks{}
	_ registry.DuplicateErrorKeeper = Hooks{}
)

// KeepDuplicateErrors: upstream's CRD strategy runs no declarative
// validation, so an update lists each metadata error once per check.
func (Hooks) KeepDuplicateErrors() {}

// Default applies the v1 defaults to a v1 object (conversion.strategy,
// names.listKind, …) before its writer's fields are recorded, as
// upstream's typed decoding does: the writer owns what defaulting set.
// A v1beta1 object is defaulted once converted, and one that does not
// decode is left alone for Validate to report.
func (Hooks) Default(obj map[string]any) {
	if isV1beta1(obj) {
		return
	}
	if c, err := decode(obj); err == nil {
		encodeInto(obj, c)
	}
}

// ZeroObject is the empty CRD a create's fields are compared with, as
// upstream's field manager compares: its spec and names are there
// already, so a writer's field set has no "." members for them.
func (Hooks) ZeroObject() map[string]any { return typedCRD.ZeroObject() }

// PrepareForCreate applies the v1 defaults and resets status to what a new
// CRD has: no conditions, empty accepted names, the storage version stored.
// An object that does not decode is left alone; Validate reports it.
func (Hooks) PrepareForCreate(obj map[string]any) {
	c, err := decode(obj)
	if err != nil {
		return
	}
	c.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
	if v := storageVersion(&c.Spec); v != "" {
		c.Status.StoredVersions = []string{v}
	}
	encodeInto(obj, c)
}

// PrepareForUpdate applies the v1 defaults and records a new storage
// version in status.storedVersions. The handler has already carried the
// old status over (status is a subresource); the rest of status is kept.
func (Hooks) PrepareForUpdate(obj, old map[string]any) {
	c, err := decode(obj)
	if err != nil {
		return
	}
	if v := storageVersion(&c.Spec); v != "" && !contains(c.Status.StoredVersions, v) {
		c.Status.StoredVersions = append(c.Status.StoredVersions, v)
	}
	encodeInto(obj, c)
}

// Validate checks a new CRD. Rules, field paths and messages are
// upstream's, including its habit of naming fields as its internal
// version does (spec.validation when every version has the same schema,
// spec.conversion.webhookClientConfig). Its name is checked with its
// metadata (CreateNameValidator).
func (h Hooks) Validate(obj map[string]any) field.ErrorList {
	return h.ValidateIn(Version, obj)
}

// ValidateUpdate checks an update of a CRD against the stored one.
func (h Hooks) ValidateUpdate(obj, old map[string]any) field.ErrorList {
	return h.ValidateUpdateIn(Version, obj, old)
}

// ValidateIn is Validate for a CRD written in version: through v1beta1,
// schemas are optional, preserveUnknownFields may be true and then
// schemas may be non-structural, as upstream's v1beta1 API allowed. obj
// is in v1.
func (h Hooks) ValidateIn(version string, obj map[string]any) field.ErrorList {
	c, err := decode(obj)
	if err != nil {
		return decodeErrors(err)
	}
	return validateCreate(c, version, h.Schemas)
}

// ValidateUpdateIn is ValidateUpdate for a CRD written in version.
func (h Hooks) ValidateUpdateIn(version string, obj, old map[string]any) field.ErrorList {
	c, err := decode(obj)
	if err != nil {
		return decodeErrors(err)
	}
	o, err := decode(old)
	if err != nil {
		// The stored object is ours; validate as a create rather than fail.
		return validateCreate(c, version, h.Schemas)
	}
	return append(metadataUpdate(obj, old), validateUpdate(c, o, version, h.Schemas)...)
}

// metadataUpdate checks the metadata of an update once more: upstream's
// CRD validation repeats the generic checks of an update's metadata (the
// handler's), so their errors come twice, then once more here.
func metadataUpdate(obj, old map[string]any) field.ErrorList {
	return apivalidation.ValidateObjectMetaAccessorUpdate(&unstructured.Unstructured{Object: obj}, &unstructured.Unstructured{Object: old}, field.NewPath("metadata"))
}

// PrepareForStatusUpdate puts the storage version back into an emptied
// status.storedVersions, as upstream's v1 defaults do on every write: a
// client cannot record that nothing is stored.
func (Hooks) PrepareForStatusUpdate(obj, old map[string]any) {
	if status, _ := obj["status"].(map[string]any); status != nil {
		if stored, _ := status["storedVersions"].([]any); len(stored) > 0 {
			return
		}
	}
	c, err := decode(obj)
	if err != nil {
		return
	}
	if v := storageVersion(&c.Spec); v != "" {
		c.Status.StoredVersions = []string{v}
		encodeInto(obj, c)
	}
}

// ValidateStatusUpdate checks a write of the status subresource: upstream
// validates only metadata (the handler's part, repeated) and
// status.acceptedNames.
func (Hooks) ValidateStatusUpdate(obj, old map[string]any) field.ErrorList {
	c, err := decode(obj)
	if err != nil {
		return decodeErrors(err)
	}
	return append(metadataUpdate(obj, old), validateStatus(&c.Status, field.NewPath("status"))...)
}

// Pending is false: a CRD marked by its first delete is kept by the
// cleanup finalizer alone.
func (Hooks) Pending(obj map[string]any) bool { return false }

// MarkDeleting adds the cleanup finalizer and the Terminating condition to
// a CRD the handler has just given a deletionTimestamp, as upstream's CRD
// storage does on the first delete, whatever the options; the condition's
// lastTransitionTime is that timestamp.
func (Hooks) MarkDeleting(obj map[string]any, _ *metav1.DeleteOptions) {
	md, _ := obj["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		obj["metadata"] = md
	}
	fin, _ := md["finalizers"].([]any)
	if !slices.Contains(fin, any(CleanupFinalizer)) {
		md["finalizers"] = append(fin, CleanupFinalizer)
	}
	now := time.Now()
	if s, _ := md["deletionTimestamp"].(string); s != "" {
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			now = t
		}
	}
	SetCondition(obj, ConditionTerminating, StatusTrue, ReasonInstanceDeletionPending, MessageInstanceDeletionPending, now)
}

// PreconditionFailed words an unmet precondition as upstream's CRD
// storage does.
func (Hooks) PreconditionFailed(name, field, want, have string) error {
	return apierrors.NewConflict(schema.GroupResource{Group: Group, Resource: Resource}, name,
		fmt.Errorf("precondition failed: %s in precondition: %s, %s in object meta: %s", field, want, field, have))
}

// StartCleanup records that the cleanup controller is deleting the
// instances of a terminating CRD (Terminating True,
// InstanceDeletionInProgress) and reports whether that changed status.
func StartCleanup(obj map[string]any, now time.Time) bool {
	return SetCondition(obj, ConditionTerminating, StatusTrue, ReasonInstanceDeletionInProgress, MessageInstanceDeletionInProgress, now)
}

// FinishCleanup records that no instance of a terminating CRD remains and
// removes the cleanup finalizer, as upstream's finalizer controller does
// in one status write: Terminating becomes False, InstanceDeletionCompleted
// (NeverEstablished when the CRD never served). It reports whether obj
// changed.
func FinishCleanup(obj map[string]any, now time.Time) bool {
	changed := false
	if Established(obj) {
		changed = SetCondition(obj, ConditionTerminating, StatusFalse, ReasonInstanceDeletionCompleted, MessageInstanceDeletionCompleted, now)
	} else {
		changed = SetCondition(obj, ConditionTerminating, StatusFalse, ReasonNeverEstablished, MessageNeverEstablished, now)
	}
	md, _ := obj["metadata"].(map[string]any)
	fin, _ := md["finalizers"].([]any)
	kept := make([]any, 0, len(fin))
	for _, f := range fin {
		if f != CleanupFinalizer {
			kept = append(kept, f)
		}
	}
	if len(kept) != len(fin) {
		changed = true
		if len(kept) == 0 {
			delete(md, "finalizers")
		} else {
			md["finalizers"] = kept
		}
	}
	return changed
}

// RemoveCleanupFinalizer is FinishCleanup at the current time.
func RemoveCleanupFinalizer(obj map[string]any) bool { return FinishCleanup(obj, time.Now()) }

// PatchSchema makes strategic merge patches apply to CRDs, as upstream.
func (Hooks) PatchSchema() any { return apiextensionsv1.CustomResourceDefinition{} }

// NewProtobuf decodes protobuf request bodies.
func (Hooks) NewProtobuf() registry.ProtoMessage { return &apiextensionsv1.CustomResourceDefinition{} }

func storageVersion(spec *apiextensionsv1.CustomResourceDefinitionSpec) string {
	for _, v := range spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// SetStoredVersions sets status.storedVersions to versions and reports
// whether it changed. The storage version migration controller calls it
// once every object is stored at the one version left.
func SetStoredVersions(obj map[string]any, versions []string) bool {
	st := statusMap(obj)
	cur, _ := st["storedVersions"].([]any)
	same := len(cur) == len(versions)
	for i := 0; same && i < len(cur); i++ {
		same = cur[i] == versions[i]
	}
	if same {
		return false
	}
	l := make([]any, len(versions))
	for i, v := range versions {
		l[i] = v
	}
	st["storedVersions"] = l
	return true
}
