package builtin

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/registry"
)

// PodTemplates is the core v1 podtemplates resource. No pods are made from
// them here; validation covers the template's metadata and the pod rules
// validatePodSpec checks, and the pod spec gets the core/v1 defaults.
func PodTemplates() *registry.Definition {
	return &registry.Definition{
		Resource: "podtemplates",
		Singular: "podtemplate",
		Kind:     "PodTemplate",
		ListKind: "PodTemplateList",
		Scope:    registry.Namespaced,
		Versions: []registry.Version{{Name: "v1", Served: true, Storage: true}},
		Hooks:    podTemplateHooks{newStored[corev1.PodTemplate]("PodTemplate", "v1")},
	}
}

// podTemplateHooks keeps metadata.generation (upstream counts changes of
// the template).
type podTemplateHooks struct {
	stored[corev1.PodTemplate]
}

// ReturnDeletedObject: as upstream's store, a delete answers with the
// PodTemplate.
func (podTemplateHooks) ReturnDeletedObject() {}

// Default implements registry.Defaulter: the core/v1 pod defaults of the
// template, as the workloads' templates get them, before the writer's
// fields are recorded.
func (h podTemplateHooks) Default(obj map[string]any) {
	h.rewrite(obj, func(pt *corev1.PodTemplate) { defaultPodTemplate(&pt.Template) })
}

// PrepareForCreate and PrepareForUpdate default again, after mutating
// admission.
func (h podTemplateHooks) PrepareForCreate(obj map[string]any) {
	h.Default(obj)
	dropDisabledContainerFields(obj, "template", "spec")
}

func (h podTemplateHooks) PrepareForUpdate(obj, _ map[string]any) {
	h.Default(obj)
	dropDisabledContainerFields(obj, "template", "spec")
}

var (
	_ registry.Validator    = podTemplateHooks{}
	_ registry.TablePrinter = podTemplateHooks{}
)

func (h podTemplateHooks) Validate(obj map[string]any) field.ErrorList {
	pt, _, err := h.Decode(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return validatePodTemplateSpec(&pt.Template, field.NewPath("template"))
}

func (h podTemplateHooks) ValidateUpdate(obj, old map[string]any) field.ErrorList {
	return h.Validate(obj)
}

// validatePodTemplateSpec checks, with upstream's messages, a pod
// template: its labels and annotations (selectors match them), its spec
// as a pod's (validatePodSpec), and that it has no ephemeral containers.
// Workload resources embedding a template use it too.
func validatePodTemplateSpec(t *corev1.PodTemplateSpec, p *field.Path) field.ErrorList {
	errs := metav1validation.ValidateLabels(t.Labels, p.Child("labels"))
	errs = append(errs, apivalidation.ValidateAnnotations(t.Annotations, p.Child("annotations"))...)
	sp := p.Child("spec")
	errs = append(errs, validatePodSpec(&t.Spec, sp)...)
	if len(t.Spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(sp.Child("ephemeralContainers"), "ephemeral containers not allowed in pod template"))
	}
	return errs
}

func (podTemplateHooks) TableColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: objectMetaDocs["name"]},
		{Name: "Containers", Type: "string", Description: "Names of each container in the template."},
		{Name: "Images", Type: "string", Description: "Images referenced by each container in the template."},
		{Name: "Pod Labels", Type: "string", Description: "The labels for the pod template."},
	}
}

func (h podTemplateHooks) TableRow(obj map[string]any) []any {
	pt, _, err := h.Decode(obj)
	if err != nil {
		return []any{objectName(obj), nil, nil, nil}
	}
	var names, images []string
	for _, c := range pt.Template.Spec.Containers {
		names, images = append(names, c.Name), append(images, c.Image)
	}
	return []any{pt.Name, strings.Join(names, ","), strings.Join(images, ","), labels.FormatLabels(pt.Template.Labels)}
}
