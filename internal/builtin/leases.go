package builtin

import (
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/registry"
)

// Leases is the coordination.k8s.io/v1 leases resource: leader election for
// controllers (client-go's leaderelection takes one).
func Leases() *registry.Definition {
	return &registry.Definition{
		Group:    "coordination.k8s.io",
		Resource: "leases",
		Singular: "lease",
		Kind:     "Lease",
		ListKind: "LeaseList",
		Scope:    registry.Namespaced,

		CreateOnUpdate: true,
		Versions: []registry.Version{{
			Name: "v1", Served: true, Storage: true,
			PrinterColumns: []registry.PrinterColumn{
				{Name: "Holder", Type: "string", JSONPath: ".spec.holderIdentity", Description: coordinationv1.LeaseSpec{}.SwaggerDoc()["holderIdentity"]},
				registry.BuiltinAgeColumn,
			},
		}},
		Hooks: leaseHooks{stored: newStored[coordinationv1.Lease]("Lease", "v1")},
	}
}

type leaseHooks struct {
	stored[coordinationv1.Lease]
	noGeneration
}

// AllowUnconditionalUpdate: as upstream's strategy, a PUT of a Lease names
// the revision it replaces (leader election relies on it).
func (leaseHooks) AllowUnconditionalUpdate() bool { return false }

var (
	_ registry.CreatePreparer = leaseHooks{}
	_ registry.UpdatePreparer = leaseHooks{}
	_ registry.Validator      = leaseHooks{}
	_ registry.NoGeneration   = leaseHooks{}
)

// PrepareForCreate drops spec.strategy and spec.preferredHolder, as
// upstream does while its CoordinatedLeaderElection gate is off (the
// default): no coordinated leader election runs here either.
func (h leaseHooks) PrepareForCreate(obj map[string]any) {
	h.trim(obj)
	spec, _ := obj["spec"].(map[string]any)
	delete(spec, "strategy")
	delete(spec, "preferredHolder")
}

// PrepareForUpdate keeps the two only where the stored lease has them.
func (h leaseHooks) PrepareForUpdate(obj, old map[string]any) {
	h.trim(obj)
	spec, _ := obj["spec"].(map[string]any)
	oldSpec, _ := old["spec"].(map[string]any)
	for _, f := range []string{"strategy", "preferredHolder"} {
		if oldSpec[f] == nil {
			delete(spec, f)
		}
	}
}

func (h leaseHooks) Validate(obj map[string]any) field.ErrorList {
	l, _, err := h.Decode(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	var errs field.ErrorList
	p := field.NewPath("spec")
	if d := l.Spec.LeaseDurationSeconds; d != nil && *d <= 0 {
		errs = append(errs, field.Invalid(p.Child("leaseDurationSeconds"), *d, "must be greater than 0"))
	}
	if t := l.Spec.LeaseTransitions; t != nil && *t < 0 {
		errs = append(errs, field.Invalid(p.Child("leaseTransitions"), *t, "must be greater than or equal to 0"))
	}
	return errs
}

func (h leaseHooks) ValidateUpdate(obj, old map[string]any) field.ErrorList { return h.Validate(obj) }
