package builtin

import (
	"fmt"
	"strings"

	storagev1 "k8s.io/api/storage/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/registry"
)

// CSINodes is the storage.k8s.io/v1 csinodes resource: stored, as no
// kubelet registers drivers here.
func CSINodes() *registry.Definition {
	k := kindDef{
		group: "storage.k8s.io", version: "v1", resource: "csinodes", kind: "CSINode",
		scope: registry.Cluster, noGeneration: true, conditional: true, status: true,
	}
	return k.definition(csiNodeHooks{kindHooksNoGeneration[storagev1.CSINode, csiNodeRules]{kindHooks: newKindHooks[storagev1.CSINode](k, csiNodeRules{})}})
}

type csiNodeHooks struct {
	kindHooksNoGeneration[storagev1.CSINode, csiNodeRules]
}

// ReturnDeletedObject: as upstream's store, a delete answers with the
// CSINode.
func (csiNodeHooks) ReturnDeletedObject() {}

type csiNodeRules struct{}

// csiNodeIDMaxLength is upstream's limit on a driver's nodeID.
const csiNodeIDMaxLength = 256

func (csiNodeRules) defaults(*storagev1.CSINode) {}

// validate checks each driver's name, nodeID and topology keys, and on an
// update that a driver already registered did not change (its
// allocatable count may, as upstream's MutableCSINodeAllocatableCount,
// on by default, allows).
func (csiNodeRules) validate(n, was *storagev1.CSINode) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("spec", "drivers")
	names := sets.New[string]()
	for i, d := range n.Spec.Drivers {
		dp := p.Index(i)
		errs = append(errs, validateCSIDriverName(d.Name, dp.Child("name"))...)
		if d.NodeID == "" {
			errs = append(errs, field.Required(dp.Child("nodeID"), ""))
		}
		if len(d.NodeID) > csiNodeIDMaxLength {
			errs = append(errs, field.Invalid(dp.Child("nodeID"), d.NodeID, fmt.Sprintf("must be %d characters or less", csiNodeIDMaxLength)))
		}
		if d.Allocatable != nil && d.Allocatable.Count != nil {
			errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*d.Allocatable.Count), dp.Child("allocatable", "count"))...)
		}
		if names.Has(d.Name) {
			errs = append(errs, field.Duplicate(dp.Child("name"), d.Name))
		}
		names.Insert(d.Name)
		keys := sets.New[string]()
		for _, k := range d.TopologyKeys {
			if k == "" {
				errs = append(errs, field.Required(dp, k))
			}
			if keys.Has(k) {
				errs = append(errs, field.Duplicate(dp, k))
			}
			keys.Insert(k)
		}
	}
	if was == nil {
		return errs
	}
	for _, od := range was.Spec.Drivers {
		for _, nd := range n.Spec.Drivers {
			if od.Name == nd.Name {
				od.Allocatable, nd.Allocatable = nil, nil
				errs = append(errs, apivalidation.ValidateImmutableField(nd, od, p)...)
			}
		}
	}
	return errs
}

// validateCSIDriverName is upstream's rule for CSI driver names.
func validateCSIDriverName(name string, p *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	var errs field.ErrorList
	if len(name) > 63 {
		errs = append(errs, field.TooLong(p, "", 63))
	}
	for _, msg := range validation.IsDNS1123Subdomain(strings.ToLower(name)) {
		errs = append(errs, field.Invalid(p, name, msg))
	}
	return errs
}

func (csiNodeRules) columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{nameColumn, {Name: "Drivers", Type: "integer", Description: "Drivers indicates the number of CSI drivers registered on the node"}, ageColumn}
}

func (csiNodeRules) cells(n *storagev1.CSINode) []any {
	return []any{n.Name, int64(len(n.Spec.Drivers)), age(&n.ObjectMeta)}
}
