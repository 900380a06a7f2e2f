package admission

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/crdserver/crdserver/internal/codec"
)

// Mutate runs the mutating admission policies, then calls the mutating
// webhooks that match at, one after another, and replaces at.Object with
// each one's result. When a policy or webhook changed the object, the
// policies and webhooks with reinvocationPolicy IfNeeded that ran before
// the change run once more, policies first, after the first round. It
// returns the first refusal or failure (under failurePolicy Fail).
func (a *Admission) Mutate(ctx context.Context, at *Attributes) error {
	if exempt(at) {
		return nil
	}
	if err := a.decodeForMutatingPolicies(ctx, at); err != nil {
		return err
	}
	hooks, err := a.hooks(ctx, &a.mutating)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	pr := &reinvocation{reinvoke: map[string]bool{}}
	if err := a.mutatePolicies(ctx, at, pr, false); err != nil {
		return err
	}
	w := &warner{warn: at.Warn}
	r := &reinvocation{reinvoke: map[string]bool{}}
	if err := a.mutateRound(ctx, at, hooks, w, r, false); err != nil {
		return err
	}
	if r.again {
		// Webhooks changed the object after the policies saw it.
		for _, k := range pr.invoked {
			pr.reinvoke[k] = true
		}
	}
	if len(pr.reinvoke) > 0 {
		before := at.Object
		if err := a.mutatePolicies(ctx, at, pr, true); err != nil {
			return err
		}
		if !sameObject(before, at.Object) {
			r.again = true
			for _, uid := range r.invoked {
				r.reinvoke[uid] = true
			}
		}
	}
	if r.again && len(r.reinvoke) > 0 {
		return a.mutateRound(ctx, at, hooks, w, r, true)
	}
	return nil
}

// sameObject reports whether a and b are the same map: mutations replace
// at.Object only when they change it.
func sameObject(a, b map[string]any) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// reinvocation tracks, across the rounds of one request, which webhooks
// run again: those of reinvocationPolicy IfNeeded invoked before a webhook
// that changed the object.
type reinvocation struct {
	// invoked are the reinvocable webhooks called since the object last
	// changed.
	invoked []string
	// reinvoke are the webhooks the second round calls.
	reinvoke map[string]bool
	// again is set once any webhook changed the object.
	again bool
}

func (a *Admission) mutateRound(ctx context.Context, at *Attributes, hooks []*hook, w *warner, r *reinvocation, second bool) error {
	// Webhooks that leave the object as it is share its conversions and
	// encodings.
	objects := newVersions(at)
	for _, h := range hooks {
		inv, err := a.match(ctx, h, at, objects)
		if err != nil {
			return err
		}
		if inv == nil {
			continue
		}
		// A webhook skipped in the first round is not called in the
		// second, even if it matches now.
		if second && !r.reinvoke[h.uid] {
			continue
		}
		changed, err := a.mutateOne(ctx, inv, at, objects, w)
		if changed {
			for _, uid := range r.invoked {
				r.reinvoke[uid] = true
			}
			r.invoked = r.invoked[:0]
			r.again = true
		}
		if h.reinvocable() {
			r.invoked = append(r.invoked, h.uid)
		}
		if err != nil {
			if err = a.failed(h, err); err != nil {
				return err
			}
			if ctx.Err() != nil {
				return apierrors.NewTimeoutError("request did not complete within requested timeout", 0)
			}
		}
	}
	return nil
}

// mutateOne calls one webhook and applies its patch to the object in the
// version the webhook matched, then sets at.Object to the result in the
// request's version. changed says whether the patch changed anything.
func (a *Admission) mutateOne(ctx context.Context, inv *invocation, at *Attributes, objects *versions, w *warner) (bool, error) {
	h := inv.hook
	vo, err := objects.get(ctx, inv.kind)
	if err != nil {
		return false, apierrors.NewInternalError(err)
	}
	resp, err := a.call(ctx, inv, at, vo, true)
	if err != nil {
		return false, err
	}
	recordAnnotations(h.Name, resp, at)
	w.add(resp.warnings)
	if !resp.allowed {
		return false, denied(h.Name, resp.result)
	}
	if len(resp.patch) == 0 {
		return false, nil
	}
	ops, err := jsonpatch.DecodePatch(resp.patch)
	if err != nil {
		return false, &callError{name: h.Name, reason: fmt.Errorf("received undecodable patch in webhook response: %w", err)}
	}
	if len(ops) == 0 {
		return false, nil
	}
	if vo.object == nil {
		return false, apierrors.NewInternalError(fmt.Errorf("admission webhook %q attempted to modify the object, which is not supported for this operation", h.Name))
	}
	if resp.patchType != admissionv1.PatchTypeJSONPatch {
		return false, &callError{name: h.Name, reason: fmt.Errorf("unsupported patch type %q", resp.patchType)}
	}
	// The patch applies to the object as values, and what it changed is
	// told by comparing values.
	if err := materialize(at); err != nil {
		return false, apierrors.NewInternalError(err)
	}
	patched, err := applyPatch(vo.object, ops)
	if err != nil {
		return false, apierrors.NewInternalError(err)
	}
	changed := !reflect.DeepEqual(vo.object, patched)
	if !changed {
		return false, nil
	}
	if inv.kind != at.Kind {
		if patched, err = at.Convert(ctx, patched, at.Kind.GroupVersion().String()); err != nil {
			return false, apierrors.NewInternalError(err)
		}
	}
	at.setObject(patched)
	return true, nil
}

// applyPatch applies a JSON patch to obj and decodes the result as request
// bodies are (integers as int64).
func applyPatch(obj map[string]any, ops jsonpatch.Patch) (map[string]any, error) {
	doc, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	out, err := ops.Apply(doc)
	if err != nil {
		return nil, err
	}
	patched, _, err := codec.Decode(out, codec.MediaJSON, codec.DecodeOptions{})
	if err != nil {
		return nil, err
	}
	if patched == nil {
		return nil, fmt.Errorf("the patched object is not an object")
	}
	return patched, nil
}
