package builtin

import (
	"encoding/json"
	"fmt"
	"time"

	svmv1 "k8s.io/api/storagemigration/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/registry"
)

// The storagemigration.k8s.io StorageVersionMigration API (GA in
// Kubernetes 1.37): a request to rewrite every stored object of one
// resource at its current storage version. The migration controller
// (controllers.Migrations) acts on it and reports through its status.
const (
	MigrationGroup    = svmv1.GroupName
	MigrationVersion  = "v1"
	MigrationResource = "storageversionmigrations"
	MigrationKind     = "StorageVersionMigration"
)

// The reasons of the migration conditions, upstream's controller's.
const (
	MigrationReasonRunning   = "StorageVersionMigrationInProgress"
	MigrationReasonSucceeded = "StorageVersionMigrationSucceeded"
	MigrationReasonFailed    = "StorageVersionMigrationFailed"
)

// StorageVersionMigrations is the storagemigration.k8s.io/v1
// storageversionmigrations resource.
func StorageVersionMigrations() *registry.Definition {
	return &registry.Definition{
		Group:    MigrationGroup,
		Resource: MigrationResource,
		Singular: "storageversionmigration",
		Kind:     MigrationKind,
		ListKind: MigrationKind + "List",
		Scope:    registry.Cluster,
		Versions: []registry.Version{{
			Name: MigrationVersion, Served: true, Storage: true,
			Subresources:   registry.Subresources{Status: true},
			PrinterColumns: []registry.PrinterColumn{registry.BuiltinAgeColumn},
		}},
		Hooks:                migrationHooks{migrationTyped},
		HashedStorageVersion: "v1beta1", // upstream stores them at v1beta1 still
	}
}

var migrationTyped = Typed[svmv1.StorageVersionMigration]{Kind: MigrationKind, Version: MigrationVersion}

// migrationHooks embeds the typed checks of StorageVersionMigration.
type migrationHooks struct {
	Typed[svmv1.StorageVersionMigration]
}

var (
	_ registry.CreatePreparer  = migrationHooks{}
	_ registry.UpdatePreparer  = migrationHooks{}
	_ registry.Validator       = migrationHooks{}
	_ registry.StatusValidator = migrationHooks{}
	_ registry.StrategicMerger = migrationHooks{}
	_ registry.Protobuf        = migrationHooks{}
	_ registry.TypeChecker     = migrationHooks{}
	_ registry.UnknownFielder  = migrationHooks{}
)

// PrepareForCreate drops what the type does not have and the status: a
// new migration has not started.
func (h migrationHooks) PrepareForCreate(obj map[string]any) {
	h.trim(obj)
	delete(obj, "status")
}

// PrepareForUpdate drops what the type does not have; the handler keeps
// the status (a subresource).
func (h migrationHooks) PrepareForUpdate(obj, old map[string]any) {
	h.trim(obj)
}

// Validate: the resource to migrate is required (its group may be empty,
// for the core group).
func (h migrationHooks) Validate(obj map[string]any) field.ErrorList {
	m, _, err := h.Decode(obj)
	if err != nil {
		return field.ErrorList{field.Invalid(field.NewPath("spec"), field.OmitValueType{}, err.Error())}
	}
	if m.Spec.Resource.Resource == "" {
		return field.ErrorList{field.Required(field.NewPath("spec", "resource", "resource"), "")}
	}
	return nil
}

// ValidateUpdate: the resource never changes.
func (h migrationHooks) ValidateUpdate(obj, old map[string]any) field.ErrorList {
	errs := h.Validate(obj)
	m, _, err1 := h.Decode(obj)
	o, _, err2 := h.Decode(old)
	if err1 == nil && err2 == nil && !apiequality.Semantic.DeepEqual(m.Spec, o.Spec) {
		errs = append(errs, field.Invalid(field.NewPath("spec"), m.Spec, "field is immutable"))
	}
	return errs
}

// ValidateStatusUpdate checks the conditions as every metav1.Condition
// list is checked, and that Succeeded and Failed are never both True.
func (h migrationHooks) ValidateStatusUpdate(obj, old map[string]any) field.ErrorList {
	m, _, err := h.Decode(obj)
	if err != nil {
		return field.ErrorList{field.Invalid(field.NewPath("status"), field.OmitValueType{}, err.Error())}
	}
	p := field.NewPath("status", "conditions")
	errs := metav1validation.ValidateConditions(m.Status.Conditions, p)
	if MigrationCondition(m.Status.Conditions, svmv1.MigrationSucceeded) && MigrationCondition(m.Status.Conditions, svmv1.MigrationFailed) {
		errs = append(errs, field.Invalid(p, m.Status.Conditions, "both Succeeded and Failed conditions cannot be true at the same time"))
	}
	return errs
}

func (migrationHooks) PatchSchema() any { return svmv1.StorageVersionMigration{} }

func (migrationHooks) NewProtobuf() registry.ProtoMessage { return &svmv1.StorageVersionMigration{} }

// MigrationCondition reports whether the condition of type typ is True.
func MigrationCondition(conds []metav1.Condition, typ svmv1.MigrationConditionType) bool {
	for _, c := range conds {
		if c.Type == string(typ) {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}

// DecodeMigration reads a stored StorageVersionMigration.
func DecodeMigration(data []byte) (*svmv1.StorageVersionMigration, error) {
	m := &svmv1.StorageVersionMigration{}
	if err := json.Unmarshal(data, m); err != nil {
		return nil, err
	}
	return m, nil
}

// SetMigrationCondition sets the condition typ of status as the handler
// stores it: lastTransitionTime moves only when the status changes. It
// reports whether anything changed.
func SetMigrationCondition(st *svmv1.StorageVersionMigrationStatus, typ svmv1.MigrationConditionType, status metav1.ConditionStatus, reason, message string, generation int64, now time.Time) bool {
	for i := range st.Conditions {
		c := &st.Conditions[i]
		if c.Type != string(typ) {
			continue
		}
		if c.Status == status && c.Reason == reason && c.Message == message && c.ObservedGeneration == generation {
			return false
		}
		if c.Status != status {
			c.LastTransitionTime = metav1.NewTime(now.UTC().Truncate(time.Second))
		}
		c.Status, c.Reason, c.Message, c.ObservedGeneration = status, reason, message, generation
		return true
	}
	st.Conditions = append(st.Conditions, metav1.Condition{
		Type: string(typ), Status: status, Reason: reason, Message: message,
		ObservedGeneration: generation, LastTransitionTime: metav1.NewTime(now.UTC().Truncate(time.Second)),
	})
	return true
}

// MigrationProgress is the Running condition's message while a migration
// rewrites objects: done of total objects are at version.
// ParseMigrationProgress reads it back (crdserver migrate draws it).
func MigrationProgress(done, total int, version string) string {
	return fmt.Sprintf("migrated %d of %d objects to %s", done, total, version)
}

// ParseMigrationProgress reads a MigrationProgress message.
func ParseMigrationProgress(msg string) (done, total int, ok bool) {
	var version string
	n, _ := fmt.Sscanf(msg, "migrated %d of %d objects to %s", &done, &total, &version)
	return done, total, n == 3
}
