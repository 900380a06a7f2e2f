package builtin

import (
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/crdserver/crdserver/internal/builtin/podwarnings"
	"github.com/crdserver/crdserver/internal/registry"
)

// ReplicationControllers is the core/v1 replicationcontrollers resource,
// stored as the apps kinds are: no controller makes pods, and the status
// is what a client writes to /status. Its selector is a plain label map,
// which upstream defaults, with the object's labels, from the template's
// labels; unlike a ReplicaSet's it may change.
func ReplicationControllers() *registry.Definition {
	return &registry.Definition{
		Resource:   "replicationcontrollers",
		Singular:   "replicationcontroller",
		Kind:       "ReplicationController",
		ListKind:   "ReplicationControllerList",
		ShortNames: []string{"rc"},
		Categories: []string{"all"},
		Scope:      registry.Namespaced,
		Versions: []registry.Version{{
			Name: "v1", Served: true, Storage: true,
			Subresources: registry.Subresources{
				Status: true, StatusMetadata: registry.UserMetadata,
				// The Scale's selector is the label map's string form.
				Scale: &registry.Scale{
					SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas",
					LabelSelectorPath: ".spec.selector", LabelSelectorSet: true,
				},
			},
			SelectableFields: []string{"status.replicas"},
		}},
		Hooks: rcHooks{appsHooks: typedV1("ReplicationController", defaultReplicationController)},
	}
}

// rcHooks word the refusal of a field selector as core/v1's conversion
// words it.
type rcHooks struct {
	appsHooks[corev1.ReplicationController]
	coreFieldLabels
}

var (
	_ registry.CreatePreparer   = rcHooks{}
	_ registry.UpdatePreparer   = rcHooks{}
	_ registry.Defaulter        = rcHooks{}
	_ registry.Validator        = rcHooks{}
	_ registry.StatusValidator  = rcHooks{}
	_ registry.TablePrinter     = rcHooks{}
	_ registry.Warner           = rcHooks{}
	_ registry.OrphansByDefault = rcHooks{}
	_ registry.StrategicMerger  = rcHooks{}
	_ registry.Protobuf         = rcHooks{}
)

// OrphanDependentsByDefault: upstream's core/v1 ReplicationControllers
// orphan their pods unless told otherwise, without a warning.
func (rcHooks) OrphanDependentsByDefault() string { return "" }

// Default is upstream's v1 defaulting: the spec's (the template's labels
// as the selector when it has none, one replica, the pod defaults), and
// the template's labels as the object's when it has none.
func (h rcHooks) Default(obj map[string]any) {
	h.appsHooks.Default(obj)
	rc, _, err := h.Decode(obj)
	if err != nil || rc.Spec.Template == nil || len(rc.Spec.Template.Labels) == 0 || len(rc.Labels) != 0 {
		return
	}
	md, _ := obj["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		obj["metadata"] = md
	}
	ls := make(map[string]any, len(rc.Spec.Template.Labels))
	for k, v := range rc.Spec.Template.Labels {
		ls[k] = v
	}
	md["labels"] = ls
}

func (h rcHooks) PrepareForCreate(obj map[string]any) {
	delete(obj, "status")
	h.Default(obj)
	dropDisabledContainerFields(obj, "spec", "template", "spec")
}

func (h rcHooks) PrepareForUpdate(obj, _ map[string]any) {
	h.Default(obj)
	dropDisabledContainerFields(obj, "spec", "template", "spec")
}

func defaultReplicationController(rc *corev1.ReplicationController) {
	s := &rc.Spec
	if s.Template != nil {
		if len(s.Selector) == 0 && s.Template.Labels != nil {
			s.Selector = s.Template.Labels
		}
		defaultPodTemplate(s.Template)
	}
	setDefault(&s.Replicas, 1)
}

func (h rcHooks) Validate(obj map[string]any) field.ErrorList {
	rc, _, err := h.Decode(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return validateRCSpec(&rc.Spec, field.NewPath("spec"))
}

// ValidateUpdate: a ReplicationController's selector may change.
func (h rcHooks) ValidateUpdate(obj, _ map[string]any) field.ErrorList { return h.Validate(obj) }

// validateRCSpec is upstream's check of a ReplicationController's spec, in
// its order.
func validateRCSpec(s *corev1.ReplicationControllerSpec, p *field.Path) field.ErrorList {
	errs := apivalidation.ValidateNonnegativeField(int64(s.MinReadySeconds), p.Child("minReadySeconds"))
	selector := labels.Set(s.Selector).AsSelector()
	if selector.Empty() {
		errs = append(errs, field.Required(p.Child("selector"), ""))
	}
	if s.Replicas == nil {
		errs = append(errs, field.Required(p.Child("replicas"), ""))
	} else {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*s.Replicas), p.Child("replicas"))...)
	}
	tp := p.Child("template")
	t := s.Template
	if t == nil {
		return append(errs, field.Required(tp, ""))
	}
	if !selector.Empty() && !selector.Matches(labels.Set(t.Labels)) {
		errs = append(errs, field.Invalid(tp.Child("metadata", "labels"), t.Labels, "`selector` does not match template `labels`"))
	}
	errs = append(errs, validatePodTemplateSpec(t, tp)...)
	if t.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(tp.Child("spec", "restartPolicy"), t.Spec.RestartPolicy, []string{string(corev1.RestartPolicyAlways)}))
	}
	if t.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Forbidden(tp.Child("spec", "activeDeadlineSeconds"), "activeDeadlineSeconds in ReplicationController is not Supported"))
	}
	return errs
}

func (h rcHooks) ValidateStatusUpdate(obj, _ map[string]any) field.ErrorList {
	rc, _, err := h.Decode(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	s, p := rc.Status, field.NewPath("status")
	errs := nonNegatives(p, []string{"replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas"},
		s.Replicas, s.FullyLabeledReplicas, s.ReadyReplicas, s.AvailableReplicas)
	errs = append(errs, apivalidation.ValidateNonnegativeField(s.ObservedGeneration, p.Child("observedGeneration"))...)
	if s.FullyLabeledReplicas > s.Replicas {
		errs = append(errs, field.Invalid(p.Child("fullyLabeledReplicas"), s.FullyLabeledReplicas, "cannot be greater than status.replicas"))
	}
	return append(errs, replicaBounds(s.Replicas, s.ReadyReplicas, s.AvailableReplicas, p)...)
}

// Warnings: as a ReplicaSet's, of the name on create and of the template
// when the spec changed.
func (h rcHooks) Warnings(obj, old map[string]any, sub string) []string {
	rc, was, ok := h.decodeWrite(obj, old)
	if !ok || sub == "status" {
		return nil
	}
	return specWarnings(metaOf(rc), metaOf(was), true, func() []string { return podwarnings.Template(specTemplate, rc.Spec.Template) })
}

func (rcHooks) TableColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn,
		intColumn("Desired", corev1.ReplicationControllerSpec{}.SwaggerDoc()["replicas"]),
		intColumn("Current", corev1.ReplicationControllerStatus{}.SwaggerDoc()["replicas"]),
		intColumn("Ready", corev1.ReplicationControllerStatus{}.SwaggerDoc()["readyReplicas"]),
		ageColumn, containersColumn, imagesColumn,
		{Name: "Selector", Type: "string", Priority: 1, Description: corev1.ReplicationControllerSpec{}.SwaggerDoc()["selector"]},
	}
}

func (h rcHooks) TableRow(obj map[string]any) []any {
	rc, _, _ := h.Decode(obj)
	if rc == nil {
		rc = &corev1.ReplicationController{}
	}
	t := rc.Spec.Template
	if t == nil {
		t = &corev1.PodTemplateSpec{}
	}
	names, images := containerCells(t)
	return []any{rc.Name, int64(ptr.Deref(rc.Spec.Replicas, 0)), int64(rc.Status.Replicas), int64(rc.Status.ReadyReplicas),
		age(&rc.ObjectMeta), names, images, labels.FormatLabels(rc.Spec.Selector)}
}
