package handler

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"

	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/registry"
)

// The scale subresource presents an object as an autoscaling/v1 Scale:
// spec.replicas, status.replicas and status.selector read from the paths
// the version declares; writes change only the spec replicas path.

func (h *Handler) serveScale(c *call) {
	sc := c.version.Subresources.Scale
	c.present = func(obj map[string]any) (map[string]any, error) { return toScale(obj, sc), nil }
	p, err := h.scalePrinter(c.version)
	if err != nil {
		codec.WriteStatus(c.w, c.r, err)
		return
	}
	c.presentPrinter = p
	switch c.info.Verb {
	case "get":
		// Reading the Scale of an object that has no spec replicas is
		// upstream's internal error; writes set them.
		c.present = func(obj map[string]any) (map[string]any, error) {
			if pathValue(obj, sc.SpecReplicasPath) == nil {
				return nil, apierrors.NewInternalError(fmt.Errorf("the spec replicas field %q does not exist", sc.SpecReplicasPath))
			}
			return toScale(obj, sc), nil
		}
		h.get(c)
	case "update":
		h.updateScale(c, sc)
	case "patch":
		h.patchScale(c, sc)
	default:
		codec.WriteStatus(c.w, c.r, methodNotSupported(c))
	}
}

// toScale reads the Scale of obj.
func toScale(obj map[string]any, sc *registry.Scale) map[string]any {
	md := metadata(obj)
	smd := map[string]any{}
	for _, k := range []string{"name", "namespace", "uid", "resourceVersion", "creationTimestamp"} {
		if v, ok := md[k]; ok {
			smd[k] = v
		}
	}
	// As autoscaling/v1 encodes a Scale: spec.replicas and status.selector
	// are omitted when empty, status.replicas never is.
	spec := map[string]any{}
	if v, ok := pathValue(obj, sc.SpecReplicasPath).(int64); ok && v != 0 {
		spec["replicas"] = v
	}
	status := map[string]any{"replicas": int64(0)}
	if v, ok := pathValue(obj, sc.StatusReplicasPath).(int64); ok {
		status["replicas"] = v
	}
	if sc.LabelSelectorPath != "" {
		v := pathValue(obj, sc.LabelSelectorPath)
		if m, ok := v.(map[string]any); ok && sc.LabelSelectorObject {
			v = selectorString(m)
		} else if ok && sc.LabelSelectorSet {
			v = setSelectorString(m)
		}
		if s, ok := v.(string); ok && s != "" {
			status["selector"] = s
		}
	}
	return map[string]any{"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": smd, "spec": spec, "status": status}
}

// selectorString is a metav1.LabelSelector in its string form; "" when it
// is not one.
func selectorString(m map[string]any) string {
	ls := &metav1.LabelSelector{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, ls); err != nil {
		return ""
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return ""
	}
	return sel.String()
}

// setSelectorString is a map of labels as the selector of exactly those
// labels, in its string form.
func setSelectorString(m map[string]any) string {
	set := make(labels.Set, len(m))
	for k, v := range m {
		s, _ := v.(string)
		set[k] = s
	}
	return labels.SelectorFromSet(set).String()
}

// updateScale writes a Scale's spec.replicas into the object.
func (h *Handler) updateScale(c *call, sc *registry.Scale) {
	if err := checkWriteOptions(c, ""); err != nil {
		codec.WriteStatus(c.w, c.r, err)
		return
	}
	mode, err := fieldValidation(c)
	if err != nil {
		codec.WriteStatus(c.w, c.r, err)
		return
	}
	body, err := readBody(c)
	if err != nil {
		codec.WriteStatus(c.w, c.r, err)
		return
	}
	raw, problems, err := codec.Decode(body, c.r.Header.Get("Content-Type"), codec.DecodeOptions{})
	if err != nil {
		var de *codec.DecodeError
		if errors.As(err, &de) {
			err = de.ForKind("Scale")
			if !goTyped(c.def) {
				err = untypedScaleError()
			}
		}
		codec.WriteStatus(c.w, c.r, err)
		return
	}
	if !goTyped(c.def) && !isScaleV1(raw) {
		// Upstream's decoder knows autoscaling/v1 Scales only.
		codec.WriteStatus(c.w, c.r, untypedScaleError())
		return
	}
	scale, strict, err := decodeScale(raw, mode)
	if err != nil {
		codec.WriteStatus(c.w, c.r, scaleDecodeError(c, raw, err))
		return
	}
	problems = append(problems, strict...)
	if mode == "Strict" && len(problems) > 0 {
		codec.WriteStatus(c.w, c.r, scaleDecodeError(c, raw, fmt.Errorf("strict decoding error: %s", strings.Join(problems, ", "))))
		return
	}
	if err := applyFieldValidation(c, mode, problems); err != nil {
		codec.WriteStatus(c.w, c.r, err)
		return
	}
	replicas, err := scaleReplicas(c, scale)
	if err != nil {
		codec.WriteStatus(c.w, c.r, err)
		return
	}
	h.write(c, "scale", scale.ResourceVersion, func(old map[string]any, _ []byte) (map[string]any, error) {
		setPathValue(old, sc.SpecReplicasPath, replicas)
		return old, nil
	})
}

// patchScale applies a patch to the object's Scale, then writes its
// spec.replicas. Custom resources take JSON and merge patches only, on
// their scale subresource as on the resource.
func (h *Handler) patchScale(c *call, sc *registry.Scale) {
	// A built-in's Scale is a Go type: strategic merge patches apply to
	// it too (as merge patches, a Scale having no list to merge).
	ct := patchMediaType(c.r.Header.Get("Content-Type"))
	err := checkPatchType(c, ct)
	if err == nil && ct == applyPatchType {
		err = unsupportedPatch(c)
	}
	if err != nil {
		codec.WriteStatus(c.w, c.r, err)
		return
	}
	body, mode, err := readPatchRequest(c, ct)
	if err != nil {
		codec.WriteStatus(c.w, c.r, err)
		return
	}
	p, readErr := readPatch(ct, body, mode)
	h.write(c, "scale", "", func(old map[string]any, _ []byte) (map[string]any, error) {
		if readErr != nil {
			return nil, readErr
		}
		before := toScale(old, sc)
		if pathValue(old, sc.SpecReplicasPath) == nil {
			// As upstream marks a Scale whose object has no spec replicas,
			// so that a patch that does not set them is refused.
			before["spec"].(map[string]any)["replicas"] = int64(math.MinInt32)
		}
		cur, err := json.Marshal(before)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		out, err := p.apply(cur)
		if err != nil {
			return nil, err
		}
		// The patched Scale is decoded as an autoscaling/v1 Scale: a
		// document that is not one makes the patch invalid.
		var raw map[string]any
		if err := json.Unmarshal(out, &raw); err != nil {
			return nil, invalidPatch(string(out), err.Error())
		}
		scale, strict, err := decodeScale(raw, mode)
		if err != nil {
			return nil, invalidPatch(string(out), err.Error())
		}
		if err := patchFieldValidation(c, mode, func() string { return string(out) }, append(p.strict, strict...)); err != nil {
			return nil, err
		}
		if scale.Spec.Replicas == math.MinInt32 {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the spec replicas field %q cannot be empty", sc.SpecReplicasPath))
		}
		replicas, err := scaleReplicas(c, scale)
		if err != nil {
			return nil, err
		}
		if scale.ResourceVersion != "" && scale.ResourceVersion != nested(old, "metadata", "resourceVersion") {
			return nil, apierrors.NewConflict(c.gr(), c.info.Name, errors.New(optimisticLockMsg))
		}
		setPathValue(old, sc.SpecReplicasPath, replicas)
		return old, nil
	})
}

// decodeScale decodes a Scale as upstream's typed decoder does, so a
// replica count that is not an int32 fails with its message. Unless mode
// is Ignore, unknown fields are returned as strict decoding errors.
func decodeScale(raw map[string]any, mode string) (*autoscalingv1.Scale, []string, error) {
	data, err := json.Marshal(raw)
	if err != nil {
		return nil, nil, err
	}
	scale := &autoscalingv1.Scale{}
	if mode == "Ignore" {
		return scale, nil, kjson.UnmarshalCaseSensitivePreserveInts(data, scale)
	}
	strict, err := kjson.UnmarshalStrict(data, scale, kjson.DisallowUnknownFields)
	if err != nil {
		return nil, nil, err
	}
	return scale, errorTexts(strict), nil
}

// untypedScaleError is how upstream refuses a custom resource's Scale
// body that does not decode: its handler asks a scheme that has no Scale
// what kind the body is, and answers with that failure.
func untypedScaleError() error {
	return apierrors.NewBadRequest(`no kind is registered for the type v1.Scale in scheme "pkg/runtime/scheme.go:111"`)
}

// isScaleV1 reports whether a Scale body is an autoscaling/v1 Scale, or
// leaves its apiVersion or kind to be one.
func isScaleV1(raw map[string]any) bool {
	av, _ := raw["apiVersion"].(string)
	kind, _ := raw["kind"].(string)
	return (av == "" || av == "autoscaling/v1") && (kind == "" || kind == "Scale")
}

// scaleDecodeError is upstream's 400 for a PUT body that does not decode
// (strictly, under fieldValidation=Strict) as the Scale it names (by
// default autoscaling/v1); for a custom resource, untypedScaleError.
func scaleDecodeError(c *call, raw map[string]any, err error) error {
	if !goTyped(c.def) {
		return untypedScaleError()
	}
	kind, _ := raw["kind"].(string)
	if kind == "" {
		kind = "Scale"
	}
	version := "v1"
	if av, _ := raw["apiVersion"].(string); av != "" {
		version = av[strings.LastIndex(av, "/")+1:]
	}
	return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a Scale: %v", kind, version, err))
}

// scaleReplicas validates a Scale and returns its spec.replicas.
func scaleReplicas(c *call, scale *autoscalingv1.Scale) (int64, error) {
	// A negative count is refused by the write's validation of the
	// custom resource (validateScale), in the resource's words, as
	// upstream's scale subresource leaves it to the resource's validator.
	n := int64(scale.Spec.Replicas)
	if n < 0 && goTyped(c.def) {
		// A built-in's scale subresource validates the Scale itself.
		errs := apivalidation.ValidateNonnegativeField(n, field.NewPath("spec", "replicas"))
		return 0, apierrors.NewInvalid(schema.GroupKind{Group: "autoscaling", Kind: "Scale"}, scale.Name, errs)
	}
	if name := scale.Name; name != "" && name != c.info.Name {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", name, c.info.Name))
	}
	return n, nil
}

// pathValue reads a simple JSON path like ".spec.replicas".
func pathValue(obj map[string]any, path string) any {
	if path == "" {
		return nil
	}
	return nested(obj, strings.Split(strings.TrimPrefix(path, "."), ".")...)
}

// setPathValue sets a simple JSON path, creating objects on the way.
func setPathValue(obj map[string]any, path string, v any) {
	setMember(obj, strings.Split(strings.TrimPrefix(path, "."), "."), v)
}

// setMember sets the member at parts (names from the top), creating
// objects on the way.
func setMember(obj map[string]any, parts []string, v any) {
	cur := obj
	for _, p := range parts[:len(parts)-1] {
		next, ok := cur[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			cur[p] = next
		}
		cur = next
	}
	cur[parts[len(parts)-1]] = v
}

// scaleColumns keys the compiled Table columns of a version's Scale.
type scaleColumns struct{ v *registry.Version }

// scalePrinter returns the Table columns of a version's Scale, as
// upstream's: the desired and available replicas the version maps, and
// the age.
func (h *Handler) scalePrinter(v *registry.Version) (*printer, error) {
	if p, ok := h.printers.Load(scaleColumns{v}); ok {
		return p.(*printer), nil
	}
	sc := v.Subresources.Scale
	var cols []registry.PrinterColumn
	if sc.SpecReplicasPath != "" {
		cols = append(cols, registry.PrinterColumn{Name: "Desired", Type: "integer", Description: "Number of desired replicas", JSONPath: ".spec.replicas"})
	}
	if sc.StatusReplicasPath != "" {
		cols = append(cols, registry.PrinterColumn{Name: "Available", Type: "integer", Description: "Number of actual replicas", JSONPath: ".status.replicas"})
	}
	cols = append(cols, registry.AgeColumn)
	p, err := compilePrinter(cols, true)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	h.printers.Store(scaleColumns{v}, p)
	return p, nil
}
