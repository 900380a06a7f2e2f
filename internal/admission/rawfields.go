package admission

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/crdserver/crdserver/internal/codec"
)

// The handler may hand admission objects whose metadata.managedFields are
// kept encoded (a codec.Raw: see codec.DecodeOptions.RawManagedFields).
// A webhook receives the objects encoded, and a Raw encodes as it is, so
// calling one reads nothing in them but labels. What reads them as
// values decodes them first, in place, object and old object alike:
// policies (before any runs), a webhook's matchConditions, a conversion
// to the version a webhook matched, and a webhook's patch.

// decodeManagedFields decodes the encoded managedFields of at's objects
// when a policy of the phase (mutating or validating) may run.
func (a *Admission) decodeManagedFields(ctx context.Context, at *Attributes, mutating bool) error {
	if !encodedManagedFields(at.Object) && !encodedManagedFields(at.OldObject) {
		return nil
	}
	if a.policiesIdle(ctx, mutating) {
		return nil
	}
	if err := materialize(at); err != nil {
		return apierrors.NewInternalError(err)
	}
	return nil
}

// materialize decodes the encoded managedFields of at's objects, if any.
func materialize(at *Attributes) error {
	for _, obj := range []map[string]any{at.Object, at.OldObject} {
		if err := codec.MaterializeManagedFields(obj); err != nil {
			return fmt.Errorf("decoding managedFields: %w", err)
		}
	}
	return nil
}

func encodedManagedFields(obj map[string]any) bool {
	md, _ := obj["metadata"].(map[string]any)
	_, ok := md["managedFields"].(codec.Raw)
	return ok
}

// KeepsEncoded reports whether objects with encoded managedFields stay
// so through admission unless a webhook needs them decoded: no policy of
// either phase is registered. The handler keeps managedFields encoded
// only then: a policy reads every object decoded, and decoding them here
// costs more than their being kept encoded saved.
func (a *Admission) KeepsEncoded(ctx context.Context) bool {
	return a.policiesIdle(ctx, true) && a.policiesIdle(ctx, false)
}

// policiesIdle reports whether no policy of the phase is registered
// (false when that cannot be told: the phase then reports the error).
func (a *Admission) policiesIdle(ctx context.Context, mutating bool) bool {
	if mutating {
		policies, err := a.mutatingPolicies(ctx)
		return err == nil && len(policies) == 0
	}
	_, bindings, err := a.policies(ctx)
	return err == nil && len(bindings) == 0
}
