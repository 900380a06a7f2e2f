package handler

import (
	"context"
	"encoding/json"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/admission"
	"github.com/crdserver/crdserver/internal/apply"
	"github.com/crdserver/crdserver/internal/audit"
	"github.com/crdserver/crdserver/internal/authn"
	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/conversion"
)

// The admission steps of the request path: mutating admission right after
// decoding (before the server fills uid, creationTimestamp or a generated
// name, as upstream's webhooks see requests), then pruning and defaulting
// again what webhooks changed; validating admission once the object passed
// validation, before it is stored.

// Admitter is the admission step (package admission's *Admission).
type Admitter interface {
	Mutate(ctx context.Context, at *admission.Attributes) error
	Validate(ctx context.Context, at *admission.Attributes) error
	// KeepsEncoded reports whether objects whose managedFields are kept
	// encoded stay so unless a webhook needs them decoded: no policy is
	// registered.
	KeepsEncoded(ctx context.Context) bool
	// Idle reports whether nothing is registered that could run on a
	// request (see admission.Admission.Idle).
	Idle(ctx context.Context) bool
}

var _ Admitter = (*admission.Admission)(nil)

// QuotaCharger is upstream's ResourceQuota admission, the last step of
// admission: a create of a namespaced object (old nil), or an update that
// counts for more (a Service's, a claim's, a pod's resize), is charged to
// the namespace's quotas, or refused when it would exceed one (the error
// says why; the handler answers 403, unless it is already a Status, as a
// failure to read or write the quotas is). sub is the subresource written
// ("" for the object), and the charger decides which it charges: a
// claim's /status is charged what it grows by but never refused for it.
// A dry run is checked, not charged.
type QuotaCharger interface {
	Charge(ctx context.Context, gr schema.GroupResource, namespace, sub string, obj, old map[string]any, dry bool) error
}

// mutate runs mutating admission on a create or update of obj (old is the
// current object on update) and returns the object to continue with, pruned
// and defaulted again when a webhook changed it. A write of the scale
// subresource is admitted as the Scale it is, and only the replicas the
// webhooks leave in its spec are kept.
//
// oldJSON, when not nil, is the encoding old was decoded from, which
// webhooks then receive as it is.
func (h *Handler) mutate(c *call, op admission.Operation, obj, old map[string]any, oldJSON []byte, sub string) (map[string]any, error) {
	if h.admit == nil {
		return obj, nil
	}
	at := h.attributes(c, op, obj, old, sub)
	if sub == "scale" {
		sc := c.version.Subresources.Scale
		at.Object, at.OldObject = toScale(obj, sc), toScale(old, sc)
		before := at.Object
		if err := h.admit.Mutate(c.r.Context(), at); err != nil {
			return nil, err
		}
		if !jsonEqual(before, at.Object) {
			spec, _ := at.Object["spec"].(map[string]any)
			replicas, _ := spec["replicas"].(int64)
			setPathValue(obj, sc.SpecReplicasPath, replicas)
		}
		return obj, nil
	}
	at.OldObjectJSON = oldJSON
	if err := h.admit.Mutate(c.r.Context(), at); err != nil {
		return nil, err
	}
	if changed := at.Object; !sameMap(changed, obj) {
		if s := versionSchema(c); s != nil {
			s.Prune(changed)
			s.Default(changed)
		}
		return changed, nil
	}
	return obj, nil
}

// validateAdmission runs validating admission on a write about to be
// stored. objJSON, when not nil, makes the encoding of obj (see
// admission.Attributes.ObjectJSON), and oldJSON, when not nil, is the
// encoding of old, which webhooks then receive as they are.
func (h *Handler) validateAdmission(c *call, op admission.Operation, obj, old map[string]any, objJSON func() []byte, oldJSON []byte, sub string) error {
	if h.admit == nil {
		return nil
	}
	at := h.attributes(c, op, obj, old, sub)
	if sub == "scale" {
		sc := c.version.Subresources.Scale
		at.Object, at.OldObject = toScale(obj, sc), toScale(old, sc)
	} else {
		at.ObjectJSON, at.OldObjectJSON = objJSON, oldJSON
	}
	return h.admit.Validate(c.r.Context(), at)
}

// deleteAdmission returns the admission of deleting namespace/name, which
// DeleteObject runs on the object it is about to delete: mutating webhooks
// (which may not change anything) then validating ones, both seeing the
// object as oldObject in the request's version.
func (h *Handler) deleteAdmission(c *call, namespace, name string, opts *metav1.DeleteOptions) func(ctx context.Context, old map[string]any) error {
	if h.admit == nil {
		return nil
	}
	return func(ctx context.Context, old map[string]any) error {
		old, err := c.conv().ToRequest(c.r.Context(), codec.DeepCopy(old))
		if err != nil {
			return err
		}
		at := h.attributes(c, admission.Delete, nil, old, "")
		at.Name, at.Namespace = name, namespace
		if isNamespaces(c) {
			at.Namespace = name
		}
		at.Options = optionsObject("DeleteOptions", opts)
		at.DryRun = len(opts.DryRun) > 0
		if err := h.admit.Mutate(ctx, at); err != nil {
			return err
		}
		return h.admit.Validate(ctx, at)
	}
}

// admissionIdle reports whether admission would do nothing with c's
// request, so that it needs no object prepared for it.
func (h *Handler) admissionIdle(c *call) bool {
	return h.admit == nil || h.admit.Idle(c.r.Context())
}

// admissionKeepsEncoded reports whether admission reads the objects of
// c's write as values only where it must (see admission.KeepsEncoded).
func (h *Handler) admissionKeepsEncoded(c *call) bool {
	return h.admit == nil || h.admit.KeepsEncoded(c.r.Context())
}

func isNamespaces(c *call) bool { return c.def.Group == "" && c.def.Resource == "namespaces" }

// attributes describe a write for admission.
func (h *Handler) attributes(c *call, op admission.Operation, obj, old map[string]any, sub string) *admission.Attributes {
	at := &admission.Attributes{
		Operation:   op,
		Kind:        schema.GroupVersionKind{Group: c.def.Group, Version: c.version.Name, Kind: c.def.Kind},
		Resource:    schema.GroupVersionResource{Group: c.def.Group, Version: c.version.Name, Resource: c.def.Resource},
		Subresource: sub,
		Namespace:   c.info.Namespace,
		Name:        c.info.Name,
		Object:      obj,
		OldObject:   old,
		Warn:        func(text string) { addWarning(c, text) },
		Annotate:    func(key, value string) { audit.AddAnnotation(c.r.Context(), key, value) },
	}
	if sub == "scale" {
		at.Kind = schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}
	} else {
		at.MergeApplyConfiguration = mergeApplyConfiguration(apply.Of(c.def))
	}
	if op == admission.Create {
		at.Name, _ = metadata(obj)["name"].(string)
	}
	if isNamespaces(c) {
		at.Namespace = at.Name
	}
	if u, ok := authn.UserFrom(c.r.Context()); ok {
		at.User = u
	}
	at.DryRun, _ = dryRun(c.r)
	at.Options = writeOptions(c, op)
	if len(c.def.Versions) > 1 {
		for _, v := range c.def.Versions {
			if v.Served {
				at.Versions = append(at.Versions, v.Name)
			}
		}
		def := c.def
		at.Convert = func(ctx context.Context, obj map[string]any, apiVersion string) (map[string]any, error) {
			if sub == "scale" {
				return obj, nil // a Scale is autoscaling/v1 in every version
			}
			return conversion.ConvertObject(ctx, conversion.For(def), obj, apiVersion)
		}
	}
	return at
}

// mergeApplyConfiguration merges a MutatingAdmissionPolicy's
// ApplyConfiguration into an object with the types of the object's version.
func mergeApplyConfiguration(types *apply.Types) func(obj, patch map[string]any) (map[string]any, error) {
	return func(obj, patch map[string]any) (map[string]any, error) {
		apiVersion, _ := obj["apiVersion"].(string)
		gv, err := schema.ParseGroupVersion(apiVersion)
		if err != nil {
			return nil, err
		}
		pt, err := types.Version(gv.Version)
		if err != nil {
			return nil, err
		}
		return apply.MergeApplyConfiguration(pt, obj, patch)
	}
}

// writeOptions is the options object of a create or update (a patch is an
// update whose options upstream sends as UpdateOptions).
func writeOptions(c *call, op admission.Operation) map[string]any {
	q := c.r.URL.Query()
	kind := "UpdateOptions"
	if op == admission.Create {
		kind = "CreateOptions"
	}
	opts := map[string]any{"kind": kind, "apiVersion": "meta.k8s.io/v1"}
	if v := q["dryRun"]; len(v) > 0 {
		dry := make([]any, len(v))
		for i, s := range v {
			dry[i] = s
		}
		opts["dryRun"] = dry
	}
	if v := q.Get("fieldManager"); v != "" {
		opts["fieldManager"] = v
	}
	if v := q.Get("fieldValidation"); v != "" {
		opts["fieldValidation"] = v
	}
	return opts
}

func optionsObject(kind string, opts any) map[string]any {
	b, err := json.Marshal(opts)
	if err != nil {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil || m == nil {
		m = map[string]any{}
	}
	m["kind"], m["apiVersion"] = kind, "meta.k8s.io/v1"
	return m
}

// sameMap reports whether a and b are the same map (not merely equal).
func sameMap(a, b map[string]any) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}
