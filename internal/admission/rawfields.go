package admission

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/crdserver/crdserver/internal/codec"
)

// The handler may hand admission objects whose metadata.managedFields are
// kept encoded (a codec.Raw: see codec.DecodeOptions.RawManagedFields).
// Policies, webhooks and everything they run read objects as decoded
// values, so such objects are decoded before any of them sees them; when
// there is none to run, nothing reads them and they stay as they are.

// decodeManagedFields decodes the encoded managedFields of at's objects
// when a policy or webhook of the phase (mutating or validating) may
// run.
func (a *Admission) decodeManagedFields(ctx context.Context, at *Attributes, mutating bool) error {
	if !encodedManagedFields(at.Object) && !encodedManagedFields(at.OldObject) {
		return nil
	}
	if a.idle(ctx, mutating) {
		return nil
	}
	for _, obj := range []map[string]any{at.Object, at.OldObject} {
		if err := codec.MaterializeManagedFields(obj); err != nil {
			return apierrors.NewInternalError(err)
		}
	}
	return nil
}

func encodedManagedFields(obj map[string]any) bool {
	md, _ := obj["metadata"].(map[string]any)
	_, ok := md["managedFields"].(codec.Raw)
	return ok
}

// Idle reports whether no webhook or policy of either phase is
// registered, so that admission will not read the objects of a write.
// The handler keeps managedFields encoded only then: decoding them here
// for a webhook costs more than their being kept encoded saved.
func (a *Admission) Idle(ctx context.Context) bool {
	return a.idle(ctx, true) && a.idle(ctx, false)
}

// idle reports whether no policy or webhook of the phase is registered
// (false when that cannot be told: the phase then reports the error).
func (a *Admission) idle(ctx context.Context, mutating bool) bool {
	set := &a.validating
	if mutating {
		set = &a.mutating
	}
	if hooks, err := a.hooks(ctx, set); err != nil || len(hooks) > 0 {
		return false
	}
	if mutating {
		policies, err := a.mutatingPolicies(ctx)
		return err == nil && len(policies) == 0
	}
	_, bindings, err := a.policies(ctx)
	return err == nil && len(bindings) == 0
}
