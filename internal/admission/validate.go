package admission

import (
	"context"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Validate evaluates the ValidatingAdmissionPolicies bound to at, then
// calls the validating webhooks that match at, all at once, and
// returns the refusal or failure (under failurePolicy Fail) of the first
// of them in registration order, or nil when all admit the request.
func (a *Admission) Validate(ctx context.Context, at *Attributes) error {
	if exempt(at) {
		return nil
	}
	objects := newVersions(at)
	if err := a.validatePolicies(ctx, at, objects); err != nil {
		return err
	}
	hooks, err := a.hooks(ctx, &a.validating)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if len(hooks) == 0 {
		return nil
	}
	var invs []*invocation
	var vos []*versioned
	for _, h := range hooks {
		inv, err := a.match(ctx, h, at, objects)
		if err != nil {
			return err
		}
		if inv == nil {
			continue
		}
		vo, err := objects.get(ctx, inv.kind)
		if err != nil {
			return apierrors.NewInternalError(err)
		}
		invs = append(invs, inv)
		vos = append(vos, vo)
	}
	if len(invs) == 0 {
		return nil
	}
	if ctx.Err() != nil {
		return apierrors.NewTimeoutError("request did not complete within requested timeout", 0)
	}
	w := &warner{warn: at.Warn}
	if len(invs) == 1 {
		// Nothing to overlap with: the request's goroutine makes the
		// call, which spares a goroutine and the growth of its stack.
		return a.validateRecovered(ctx, invs[0], at, vos[0], w)
	}
	errs := make([]error, len(invs))
	var wg sync.WaitGroup
	for i, inv := range invs {
		wg.Go(func() { errs[i] = a.validateRecovered(ctx, inv, at, vos[i], w) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// validateRecovered is validateOne, with a panic failing the webhook's
// call (or ignored under failurePolicy Ignore) rather than the server.
func (a *Admission) validateRecovered(ctx context.Context, inv *invocation, at *Attributes, vo *versioned, w *warner) (err error) {
	defer func() {
		if r := recover(); r != nil {
			a.log.Error("admission: validating webhook call panicked", "webhook", inv.hook.Name, "panic", r)
			err = nil
			if !inv.hook.failOpen() {
				err = apierrors.NewInternalError(fmt.Errorf("ValidatingAdmissionWebhook/%v has panicked: %v", inv.hook.Name, r))
			}
		}
	}()
	return a.validateOne(ctx, inv, at, vo, w)
}

func (a *Admission) validateOne(ctx context.Context, inv *invocation, at *Attributes, vo *versioned, w *warner) error {
	resp, err := a.call(ctx, inv, at, vo, false)
	if err != nil {
		return a.failed(inv.hook, err)
	}
	recordAnnotations(inv.hook.Name, resp, at)
	w.add(resp.warnings)
	if !resp.allowed {
		return denied(inv.hook.Name, resp.result)
	}
	return nil
}
