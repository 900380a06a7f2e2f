package builtin

import (
	"bytes"
	"encoding/json"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/registry"
)

// ControllerRevisions is the apps/v1 controllerrevisions resource: the
// snapshots of a StatefulSet's or DaemonSet's template that `kubectl
// rollout history` and `rollout undo` read. Upstream's controllers write
// them; crdserver runs none, so the revisions are those clients write.
// Their data is immutable, as upstream keeps it.
func ControllerRevisions() *registry.Definition {
	return define[appsv1.ControllerRevision](kindDef{
		group: "apps", version: "v1", resource: "controllerrevisions", kind: "ControllerRevision",
		scope: registry.Namespaced, noGeneration: true,
	}, controllerRevisionRules{})
}

type controllerRevisionRules struct{}

func (controllerRevisionRules) defaults(*appsv1.ControllerRevision) {}

// validate is upstream's: the revision is not negative, the data a JSON
// object on create and left as it was on an update.
func (controllerRevisionRules) validate(cr, was *appsv1.ControllerRevision) field.ErrorList {
	p := field.NewPath("data")
	errs := apivalidation.ValidateNonnegativeField(cr.Revision, field.NewPath("revision"))
	if was != nil {
		return append(errs, apivalidation.ValidateImmutableField(cr.Data, was.Data, p)...)
	}
	raw := bytes.TrimSpace(cr.Data.Raw)
	var v any
	switch {
	case raw == nil:
		errs = append(errs, field.Required(p, "data is mandatory"))
	case json.Unmarshal(raw, &v) != nil:
		// The body decoded, so its data is JSON.
	case v == nil:
		errs = append(errs, field.Required(p, "data is mandatory"))
	default:
		if _, ok := v.(map[string]any); !ok {
			errs = append(errs, field.Required(p, "data must be a valid JSON object"))
		}
	}
	return errs
}

func (controllerRevisionRules) columns() []metav1.TableColumnDefinition {
	return columns(
		metav1.TableColumnDefinition{Name: "Controller", Type: "string", Description: "Controller of the object"},
		metav1.TableColumnDefinition{Name: "Revision", Type: "string", Description: appsv1.ControllerRevision{}.SwaggerDoc()["revision"]},
	)
}

// cells name the controller as upstream's printer does: its owner
// reference marked controller, as kind.group/name in lower case.
func (controllerRevisionRules) cells(cr *appsv1.ControllerRevision) []any {
	controller := "<none>"
	if ref := metav1.GetControllerOfNoCopy(cr); ref != nil {
		controller = ref.Name
		if gv, err := schema.ParseGroupVersion(ref.APIVersion); err == nil {
			if gk := gv.WithKind(ref.Kind).GroupKind(); !gk.Empty() {
				controller = strings.ToLower(gk.String()) + "/" + ref.Name
			}
		}
	}
	return []any{cr.Name, controller, cr.Revision, age(&cr.ObjectMeta)}
}
