package builtin

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/crdserver/crdserver/internal/registry"
)

// PriorityClasses is the scheduling.k8s.io/v1 priorityclasses resource.
// Nothing schedules pods here; the classes are stored with upstream's
// rules for names, values and preemption policies. Upstream's two system
// classes (SystemPriorityClasses) are created at start.
func PriorityClasses() *registry.Definition {
	return define[schedulingv1.PriorityClass](kindDef{
		group: "scheduling.k8s.io", version: "v1", resource: "priorityclasses", kind: "PriorityClass",
		shortNames: []string{"pc"}, scope: registry.Cluster,
	}, priorityClassRules{})
}

type priorityClassRules struct{}

// Upstream's bounds on priorities.
const (
	highestUserDefinablePriority = 1000000000
	systemPriorityClassPrefix    = "system-"
)

// systemPriorityClasses are the classes upstream reserves, with their
// values (neither is the global default).
var systemPriorityClasses = map[string]int32{
	"system-node-critical":    2*highestUserDefinablePriority + 1000,
	"system-cluster-critical": 2 * highestUserDefinablePriority,
}

// SystemPriorityClasses are the reserved classes as upstream's
// kube-apiserver creates them at start, when they are missing (one that
// exists is left as it is), defaulted: system-node-critical for what must
// stay on its node, system-cluster-critical for what must run somewhere.
func SystemPriorityClasses() []schedulingv1.PriorityClass {
	class := func(name, description string) schedulingv1.PriorityClass {
		pc := schedulingv1.PriorityClass{
			TypeMeta:    metav1.TypeMeta{APIVersion: schedulingv1.SchemeGroupVersion.String(), Kind: "PriorityClass"},
			ObjectMeta:  metav1.ObjectMeta{Name: name},
			Value:       systemPriorityClasses[name],
			Description: description,
		}
		priorityClassRules{}.defaults(&pc)
		return pc
	}
	return []schedulingv1.PriorityClass{
		class("system-node-critical", "Used for system critical pods that must not be moved from their current node."),
		class("system-cluster-critical", "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary."),
	}
}

func (priorityClassRules) defaults(pc *schedulingv1.PriorityClass) {
	if pc.PreemptionPolicy == nil {
		pc.PreemptionPolicy = ptr.To(corev1.PreemptLowerPriority)
	}
}

func (priorityClassRules) validate(pc, was *schedulingv1.PriorityClass) field.ErrorList {
	if was != nil {
		var errs field.ErrorList
		if pc.Value != was.Value {
			errs = append(errs, field.Forbidden(field.NewPath("value"), "may not be changed in an update."))
		}
		return append(errs, apivalidation.ValidateImmutableField(pc.PreemptionPolicy, was.PreemptionPolicy, field.NewPath("preemptionPolicy"))...)
	}
	var errs field.ErrorList
	if strings.HasPrefix(pc.Name, systemPriorityClassPrefix) {
		if msg := systemPriorityClassError(pc); msg != "" {
			errs = append(errs, field.Forbidden(field.NewPath("metadata", "name"),
				"priority class names with '"+systemPriorityClassPrefix+"' prefix are reserved for system use only. error: "+msg))
		}
	} else if pc.Value > highestUserDefinablePriority {
		errs = append(errs, field.Forbidden(field.NewPath("value"), fmt.Sprintf("maximum allowed value of a user defined priority is %v", highestUserDefinablePriority)))
	}
	if pc.PreemptionPolicy != nil {
		errs = append(errs, validatePreemptionPolicy(*pc.PreemptionPolicy, field.NewPath("preemptionPolicy"))...)
	}
	return errs
}

// systemPriorityClassError is why pc may not use its system- name, or "".
func systemPriorityClassError(pc *schedulingv1.PriorityClass) string {
	v, ok := systemPriorityClasses[pc.Name]
	switch {
	case !ok:
		return pc.Name + " is not a known system priority class"
	case v != pc.Value:
		return fmt.Sprintf("value of %v PriorityClass must be %v", pc.Name, v)
	case pc.GlobalDefault:
		return fmt.Sprintf("globalDefault of %v PriorityClass must be false", pc.Name)
	}
	return ""
}

func validatePreemptionPolicy(p corev1.PreemptionPolicy, path *field.Path) field.ErrorList {
	switch p {
	case corev1.PreemptLowerPriority, corev1.PreemptNever:
		return nil
	case "":
		return field.ErrorList{field.Required(path, "")}
	}
	return field.ErrorList{field.NotSupported(path, p, []corev1.PreemptionPolicy{corev1.PreemptLowerPriority, corev1.PreemptNever})}
}

func (priorityClassRules) columns() []metav1.TableColumnDefinition {
	doc := schedulingv1.PriorityClass{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Value", Type: "integer", Description: doc["value"]},
		{Name: "Global-Default", Type: "boolean", Description: doc["globalDefault"]},
		ageColumn,
		{Name: "PreemptionPolicy", Type: "string", Description: doc["preemptionPolicy"]},
	}
}

func (priorityClassRules) cells(pc *schedulingv1.PriorityClass) []any {
	return []any{pc.Name, int64(pc.Value), pc.GlobalDefault, age(&pc.ObjectMeta), string(ptr.Deref(pc.PreemptionPolicy, ""))}
}

// RuntimeClasses is the node.k8s.io/v1 runtimeclasses resource: stored,
// as no kubelet reads them here.
func RuntimeClasses() *registry.Definition {
	return define[nodev1.RuntimeClass](kindDef{
		group: "node.k8s.io", version: "v1", resource: "runtimeclasses", kind: "RuntimeClass",
		scope: registry.Cluster, noGeneration: true, conditional: true, createOnUpdate: true,
	}, runtimeClassRules{})
}

type runtimeClassRules struct{}

func (runtimeClassRules) defaults(*nodev1.RuntimeClass) {}

// validate checks the handler (a DNS label, immutable) and the
// scheduling node selector; the overhead's quantities and the
// tolerations are not checked.
func (runtimeClassRules) validate(rc, was *nodev1.RuntimeClass) field.ErrorList {
	p := field.NewPath("handler")
	if was != nil {
		return apivalidation.ValidateImmutableField(rc.Handler, was.Handler, p)
	}
	var errs field.ErrorList
	if rc.Handler == "" {
		errs = append(errs, field.Required(p, ""))
	} else {
		for _, msg := range apivalidation.NameIsDNSLabel(rc.Handler, false) {
			errs = append(errs, field.Invalid(p, rc.Handler, msg))
		}
	}
	if s := rc.Scheduling; s != nil && s.NodeSelector != nil {
		errs = append(errs, metav1validation.ValidateLabels(s.NodeSelector, field.NewPath("scheduling", "nodeSelector"))...)
	}
	return errs
}

func (runtimeClassRules) columns() []metav1.TableColumnDefinition {
	// Upstream describes Handler with ObjectMeta's (missing) "handler" doc.
	return []metav1.TableColumnDefinition{nameColumn, {Name: "Handler", Type: "string", Description: objectMetaDocs["handler"]}, ageColumn}
}

func (runtimeClassRules) cells(rc *nodev1.RuntimeClass) []any {
	return []any{rc.Name, rc.Handler, age(&rc.ObjectMeta)}
}
