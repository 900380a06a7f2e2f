// Package builtin defines the resources crdserver serves besides CRDs, one
// file each: their definitions and the hooks they need beyond a schema.
package builtin

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/registry"
)

// FinalizerKubernetes is the namespace finalizer the namespace controller
// removes once the namespace is empty.
const FinalizerKubernetes = "kubernetes"

// labelMetadataName is set on every namespace to its name, as upstream does.
const labelMetadataName = "kubernetes.io/metadata.name"

// InitialNamespaces exist after the first start.
var InitialNamespaces = []string{"default", "kube-system", "kube-public", "kube-node-lease"}

// Namespaces is the core v1 namespaces resource.
func Namespaces() *registry.Definition {
	return &registry.Definition{
		Group:      "",
		Resource:   "namespaces",
		Singular:   "namespace",
		Kind:       "Namespace",
		ListKind:   "NamespaceList",
		ShortNames: []string{"ns"},
		Scope:      registry.Cluster,
		// Upstream serves no deletecollection on namespaces.
		Verbs: []string{"create", "delete", "get", "list", "patch", "update", "watch"},
		Versions: []registry.Version{{
			Name: "v1", Served: true, Storage: true,
			// As upstream's field label conversion of namespaces.
			SelectableFields: []string{"status.phase"},
			Subresources: registry.Subresources{
				Status:         true,
				StatusMetadata: registry.UserMetadata,
				Other:          []registry.OtherSubresource{{Name: "finalize", Verbs: []string{"update"}}},
			},
			PrinterColumns: []registry.PrinterColumn{
				{Name: "Status", Type: "string", JSONPath: ".status.phase", Description: "The status of the namespace"},
				registry.BuiltinAgeColumn,
			},
		}},
		Hooks: namespaceHooks{Typed: namespaceTyped},
	}
}

// NewNamespace returns a complete stored namespace object, for the
// namespaces that exist from the start.
func NewNamespace(name string, now time.Time) map[string]any {
	obj := map[string]any{
		"apiVersion": "v1",
		"kind":       "Namespace",
		"metadata": map[string]any{
			"name":              name,
			"uid":               string(uuid.NewUUID()),
			"creationTimestamp": now.UTC().Format(time.RFC3339),
		},
	}
	namespaceHooks{Typed: namespaceTyped}.PrepareForCreate(obj)
	return obj
}

// namespaceHooks embeds the typed checks of corev1.Namespace.
type namespaceHooks struct {
	Typed[corev1.Namespace]
	coreFieldLabels
}

var namespaceTyped = Typed[corev1.Namespace]{Kind: "Namespace", Version: "v1"}

var (
	_ registry.CreatePreparer       = namespaceHooks{}
	_ registry.UpdatePreparer       = namespaceHooks{}
	_ registry.Validator            = namespaceHooks{}
	_ registry.Finalizer            = namespaceHooks{}
	_ registry.StrategicMerger      = namespaceHooks{}
	_ registry.SubresourceUpdater   = namespaceHooks{}
	_ registry.ReturnsDeletedObject = namespaceHooks{}
	_ registry.NoGeneration         = namespaceHooks{}
	_ registry.NameValidator        = namespaceHooks{}
	_ registry.Protobuf             = namespaceHooks{}
	_ registry.TypeChecker          = namespaceHooks{}
	_ registry.UnknownFielder       = namespaceHooks{}
	_ registry.UnconditionalUpdater = namespaceHooks{}
	_ registry.FieldResetter        = namespaceHooks{}
)

func (h namespaceHooks) PrepareForCreate(obj map[string]any) {
	h.trim(obj)
	obj["status"] = map[string]any{"phase": string(corev1.NamespaceActive)}
	spec, _ := obj["spec"].(map[string]any)
	if spec == nil {
		spec = map[string]any{}
		obj["spec"] = spec
	}
	fin := codec.Strings(spec["finalizers"])
	if !slices.Contains(fin, FinalizerKubernetes) {
		fin = append(fin, FinalizerKubernetes)
	}
	spec["finalizers"] = anyList(fin)
	setNameLabel(obj)
}

func (h namespaceHooks) PrepareForUpdate(obj, old map[string]any) {
	h.trim(obj)
	// spec.finalizers change only through /finalize.
	spec, _ := obj["spec"].(map[string]any)
	if spec == nil {
		spec = map[string]any{}
		obj["spec"] = spec
	}
	if oldSpec, _ := old["spec"].(map[string]any); oldSpec != nil && oldSpec["finalizers"] != nil {
		spec["finalizers"] = oldSpec["finalizers"]
	} else {
		delete(spec, "finalizers")
	}
	setNameLabel(obj)
}

// Default sets the name label and, where the status names no phase, the
// phase Active, as upstream's defaulting of a Namespace does.
func (h namespaceHooks) Default(obj map[string]any) {
	h.trim(obj)
	setNameLabel(obj)
	st, _ := obj["status"].(map[string]any)
	if st == nil {
		st = map[string]any{}
		obj["status"] = st
	}
	if p, _ := st["phase"].(string); p == "" {
		st["phase"] = string(corev1.NamespaceActive)
	}
}

func setNameLabel(obj map[string]any) {
	md, _ := obj["metadata"].(map[string]any)
	if md == nil {
		return
	}
	name, _ := md["name"].(string)
	if name == "" {
		return
	}
	labels, _ := md["labels"].(map[string]any)
	if labels == nil {
		labels = map[string]any{}
		md["labels"] = labels
	}
	labels[labelMetadataName] = name
}

// Validate checks spec.finalizers as upstream's ValidateNamespace does:
// each error names the list, not the item.
func (namespaceHooks) Validate(obj map[string]any) field.ErrorList {
	return validateSpecFinalizers(obj, false)
}

// ValidateUpdate checks spec.finalizers as on create; PrepareForUpdate
// left them as they were.
func (namespaceHooks) ValidateUpdate(obj, old map[string]any) field.ErrorList {
	return validateSpecFinalizers(obj, false)
}

var (
	_ registry.SubresourceValidator = namespaceHooks{}
	_ registry.StatusValidator      = namespaceHooks{}
)

// ValidateStatusUpdate checks a write through /status as upstream's
// ValidateNamespaceStatusUpdate does: the phase is Active while the
// namespace has no deletionTimestamp, Terminating once it has one. The
// spec, old's, is not checked again.
func (namespaceHooks) ValidateStatusUpdate(obj, _ map[string]any) field.ErrorList {
	phase, _ := nested(obj, "status", "phase").(string)
	want, msg := corev1.NamespaceActive, "may only be 'Active' if `deletionTimestamp` is empty"
	if nested(obj, "metadata", "deletionTimestamp") != nil {
		want, msg = corev1.NamespaceTerminating, "may only be 'Terminating' if `deletionTimestamp` is not empty"
	}
	if phase != string(want) {
		return field.ErrorList{field.Invalid(field.NewPath("status", "Phase"), phase, msg)}
	}
	return nil
}

// ValidateSubresourceUpdate checks a write through /finalize, whose
// errors, unlike those of a create or an update, name each item of
// spec.finalizers (upstream's ValidateNamespaceFinalizeUpdate).
func (namespaceHooks) ValidateSubresourceUpdate(sub string, obj, old map[string]any) field.ErrorList {
	return validateSpecFinalizers(obj, sub == "finalize")
}

// validateSpecFinalizers checks that each of a namespace's
// spec.finalizers is a qualified name and, when it has no "/", one of the
// standard finalizers (kubernetes, orphan, foregroundDeletion). indexed
// names the item in the errors' paths.
func validateSpecFinalizers(obj map[string]any, indexed bool) field.ErrorList {
	var errs field.ErrorList
	spec, _ := obj["spec"].(map[string]any)
	p := field.NewPath("spec", "finalizers")
	for i, f := range codec.Strings(spec["finalizers"]) {
		at := p
		if indexed {
			at = p.Index(i)
		}
		for _, msg := range validation.IsQualifiedName(f) {
			errs = append(errs, field.Invalid(at, f, msg))
		}
		if !strings.Contains(f, "/") && !slices.Contains(standardFinalizers, f) {
			errs = append(errs, field.Invalid(at, f, "name is neither a standard finalizer name nor is it fully qualified"))
		}
	}
	return errs
}

// standardFinalizers may be written without a domain: the namespace
// controller's and the garbage collector's.
var standardFinalizers = []string{FinalizerKubernetes, metav1.FinalizerOrphanDependents, metav1.FinalizerDeleteDependents}

// immortalNamespaces may not be deleted, as upstream's NamespaceLifecycle
// admission keeps them (kube-node-lease is not among them).
var immortalNamespaces = []string{"default", "kube-system", "kube-public"}

// CheckDelete refuses to delete an immortal namespace, in upstream's words.
func (namespaceHooks) CheckDelete(name string) error {
	if slices.Contains(immortalNamespaces, name) {
		return apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, name, errors.New("this namespace may not be deleted"))
	}
	return nil
}

func (namespaceHooks) Pending(obj map[string]any) bool {
	spec, _ := obj["spec"].(map[string]any)
	return len(codec.Strings(spec["finalizers"])) > 0
}

// MarkDeleting marks a namespace on its first delete, as upstream's
// namespace storage does: phase Terminating, and the garbage collector's
// finalizers as opts ask, where the legacy orphanDependents=false asks
// for foregroundDeletion (unlike other resources' deletes), else as they
// were.
func (namespaceHooks) MarkDeleting(obj map[string]any, opts *metav1.DeleteOptions) {
	st, _ := obj["status"].(map[string]any)
	if st == nil {
		st = map[string]any{}
		obj["status"] = st
	}
	st["phase"] = string(corev1.NamespaceTerminating)

	md, _ := obj["metadata"].(map[string]any)
	fins := codec.Strings(md["finalizers"])
	orphan := slices.Contains(fins, metav1.FinalizerOrphanDependents)
	foreground := slices.Contains(fins, metav1.FinalizerDeleteDependents)
	switch {
	case opts.OrphanDependents != nil: //nolint:staticcheck // the legacy option is still served
		orphan, foreground = *opts.OrphanDependents, !*opts.OrphanDependents //nolint:staticcheck
	case opts.PropagationPolicy != nil:
		orphan = *opts.PropagationPolicy == metav1.DeletePropagationOrphan
		foreground = *opts.PropagationPolicy == metav1.DeletePropagationForeground
	default:
		return
	}
	next := slices.DeleteFunc(slices.Clone(fins), func(f string) bool {
		return f == metav1.FinalizerOrphanDependents || f == metav1.FinalizerDeleteDependents
	})
	if orphan {
		next = append(next, metav1.FinalizerOrphanDependents)
	}
	if foreground {
		next = append(next, metav1.FinalizerDeleteDependents)
	}
	switch {
	case len(next) == 0:
		delete(md, "finalizers")
	case !slices.Equal(next, fins):
		md["finalizers"] = anyList(next)
	}
}

// PreconditionFailed words an unmet precondition as upstream's namespace
// storage does.
func (namespaceHooks) PreconditionFailed(name, field, want, have string) error {
	return apierrors.NewConflict(schema.GroupResource{Resource: "namespaces"}, name,
		fmt.Errorf("Precondition failed: %s in precondition: %s, %s in object meta: %s", field, want, field, have))
}

func (namespaceHooks) PatchSchema() any { return corev1.Namespace{} }

func (namespaceHooks) NewProtobuf() registry.ProtoMessage { return &corev1.Namespace{} }

// UpdateSubresource serves namespaces/finalize as upstream's finalize
// strategy prepares it, once the write's fields are recorded (less its
// reset field, the status: ResetFields): everything written is kept,
// spec.finalizers (which the main resource leaves) and the metadata
// alike, but the status, which is old's.
func (namespaceHooks) Updates(sub string) bool { return sub == "finalize" }

func (namespaceHooks) UpdateSubresource(name string, obj, old map[string]any) map[string]any {
	if name != "finalize" {
		return obj
	}
	if st, ok := old["status"].(map[string]any); ok {
		obj["status"] = codec.DeepCopy(st)
	} else {
		delete(obj, "status")
	}
	return obj
}

// ResetFields: a write through /finalize owns no status, as upstream's
// finalize strategy's reset fields say; the others' are the generic ones.
func (namespaceHooks) ResetFields(subresource string) [][]string {
	if subresource == "finalize" {
		return [][]string{{"status"}}
	}
	return nil
}

func (namespaceHooks) ReturnDeletedObject()           {}
func (namespaceHooks) AllowUnconditionalUpdate() bool { return true }
func (namespaceHooks) NoGeneration()                  {}

func (namespaceHooks) ValidateName(name string, prefix bool) []string {
	return apivalidation.ValidateNamespaceName(name, prefix)
}

func anyList(l []string) []any {
	out := make([]any, len(l))
	for i, s := range l {
		out[i] = s
	}
	return out
}

var _ registry.DeleteChecker = namespaceHooks{}

var _ registry.Defaulter = namespaceHooks{}
