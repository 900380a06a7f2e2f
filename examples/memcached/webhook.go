package memcached

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// MaxSize is the largest Spec.Size the webhook admits.
const MaxSize = 5

// Validator refuses a Memcached whose size is out of range.
type Validator struct{}

var _ admission.Validator[*Memcached] = Validator{}

// SetupWebhookWithManager serves the validating webhook at
// /validate-cache-example-com-v1-memcached.
func SetupWebhookWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &Memcached{}).WithValidator(Validator{}).Complete()
}

// ValidateCreate implements admission.Validator.
func (Validator) ValidateCreate(_ context.Context, m *Memcached) (admission.Warnings, error) {
	return nil, validate(m)
}

// ValidateUpdate implements admission.Validator.
func (Validator) ValidateUpdate(_ context.Context, _, m *Memcached) (admission.Warnings, error) {
	return nil, validate(m)
}

// ValidateDelete implements admission.Validator: deletes are always allowed.
func (Validator) ValidateDelete(context.Context, *Memcached) (admission.Warnings, error) {
	return nil, nil
}

func validate(m *Memcached) error {
	if m.Spec.Size < 1 || m.Spec.Size > MaxSize {
		return fmt.Errorf("spec.size %d: must be between 1 and %d", m.Spec.Size, MaxSize)
	}
	return nil
}
