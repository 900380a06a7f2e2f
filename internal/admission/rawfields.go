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
// calling one reads nothing in them but labels. CEL expressions (validating
// policies, every policy's conditions and variables, webhooks'
// matchConditions) decode a Raw only if they reach it (package cel). What
// changes or converts the objects decodes them first, in place, object and
// old object alike: mutating policies (before any runs), a conversion to
// the version a webhook or policy matched, and a webhook's patch.

// decodeForMutatingPolicies decodes the encoded managedFields of at's
// objects when a mutating policy may run: its mutations apply to the
// objects as values.
func (a *Admission) decodeForMutatingPolicies(ctx context.Context, at *Attributes) error {
	if !encodedManagedFields(at.Object) && !encodedManagedFields(at.OldObject) {
		return nil
	}
	if a.mutatingPoliciesIdle(ctx) {
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
// so through admission unless a webhook or policy needs them decoded: no
// mutating policy is registered. The handler keeps managedFields encoded
// only then: a mutating policy decodes every object, and decoding them
// here costs more than their being kept encoded saved.
func (a *Admission) KeepsEncoded(ctx context.Context) bool {
	return a.mutatingPoliciesIdle(ctx)
}

// Idle reports whether nothing is registered that could run on a
// request: no webhook, and no policy or binding, validating or mutating.
// The handler then skips what it does only for admission (a delete reads
// and decodes the object it would hand a webhook). false when that cannot
// be told: the phases then report the error.
func (a *Admission) Idle(ctx context.Context) bool {
	for _, set := range []*compiledSet{&a.mutating, &a.validating} {
		if hooks, err := a.hooks(ctx, set); err != nil || len(hooks) > 0 {
			return false
		}
	}
	policies, bindings, err := a.policies(ctx)
	return err == nil && len(policies) == 0 && len(bindings) == 0 && a.mutatingPoliciesIdle(ctx)
}

// mutatingPoliciesIdle reports whether no mutating policy is registered
// (false when that cannot be told: the phase then reports the error).
func (a *Admission) mutatingPoliciesIdle(ctx context.Context) bool {
	policies, err := a.mutatingPolicies(ctx)
	return err == nil && len(policies) == 0
}
