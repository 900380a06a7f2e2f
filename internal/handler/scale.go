package handler

import (
	"encoding/json"
	"fmt"
	"mime"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/registry"
)

// The scale subresource presents an object as an autoscaling/v1 Scale:
// spec.replicas, status.replicas and status.selector read from the paths
// the version declares; writes change only the spec replicas path.

var scaleGK = schema.GroupKind{Group: "autoscaling", Kind: "Scale"}

func (h *Handler) serveScale(c *call) {
	sc := c.version.Subresources.Scale
	c.present = func(obj map[string]any) any { return toScale(obj, sc) }
	switch c.info.Verb {
	case "get":
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
	spec := map[string]any{}
	if v, ok := pathValue(obj, sc.SpecReplicasPath).(int64); ok {
		spec["replicas"] = v
	}
	status := map[string]any{"replicas": int64(0)}
	if v, ok := pathValue(obj, sc.StatusReplicasPath).(int64); ok {
		status["replicas"] = v
	}
	if sc.LabelSelectorPath != "" {
		if v, ok := pathValue(obj, sc.LabelSelectorPath).(string); ok {
			status["selector"] = v
		}
	}
	return map[string]any{"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": smd, "spec": spec, "status": status}
}

// updateScale writes a Scale's spec.replicas into the object.
func (h *Handler) updateScale(c *call, sc *registry.Scale) {
	body, err := readBody(c)
	if err != nil {
		codec.WriteStatus(c.w, c.r, err)
		return
	}
	scale, _, err := codec.Decode(body, c.r.Header.Get("Content-Type"), codec.DecodeOptions{})
	if err != nil {
		codec.WriteStatus(c.w, c.r, err)
		return
	}
	replicas, err := scaleReplicas(c, scale)
	if err != nil {
		codec.WriteStatus(c.w, c.r, err)
		return
	}
	rv, _ := metadata(scale)["resourceVersion"].(string)
	h.write(c, "scale", rv, func(old map[string]any, _ []byte) (map[string]any, error) {
		setPathValue(old, sc.SpecReplicasPath, replicas)
		return old, nil
	})
}

// patchScale applies a patch to the object's Scale, then writes its
// spec.replicas.
func (h *Handler) patchScale(c *call, sc *registry.Scale) {
	ct, _, _ := mime.ParseMediaType(c.r.Header.Get("Content-Type"))
	body, err := readBody(c)
	if err != nil {
		codec.WriteStatus(c.w, c.r, err)
		return
	}
	h.write(c, "scale", "", func(old map[string]any, _ []byte) (map[string]any, error) {
		cur, err := json.Marshal(toScale(old, sc))
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		var out []byte
		switch ct {
		case "application/json-patch+json":
			p, err := decodeJSONPatch(body)
			if err != nil {
				return nil, err
			}
			out, err = p.ApplyWithOptions(cur, jsonPatchOptions())
			if err != nil {
				return nil, apierrors.NewBadRequest(err.Error())
			}
		case "application/merge-patch+json", "application/strategic-merge-patch+json":
			// A Scale has no lists: a strategic merge patch is a merge patch.
			if out, err = jsonpatch.MergePatch(cur, body); err != nil {
				return nil, apierrors.NewBadRequest(err.Error())
			}
		default:
			return nil, unsupportedPatch(ct)
		}
		scale, _, err := codec.Decode(out, "application/json", codec.DecodeOptions{})
		if err != nil {
			return nil, err
		}
		replicas, err := scaleReplicas(c, scale)
		if err != nil {
			return nil, err
		}
		setPathValue(old, sc.SpecReplicasPath, replicas)
		return old, nil
	})
}

// scaleReplicas validates a Scale and returns its spec.replicas.
func scaleReplicas(c *call, scale map[string]any) (int64, error) {
	raw := nested(scale, "spec", "replicas")
	n, ok := raw.(int64)
	p := field.NewPath("spec", "replicas")
	switch {
	case raw == nil:
		n = 0
	case !ok:
		return 0, apierrors.NewBadRequest(fmt.Sprintf("spec.replicas: must be an integer, got %v", raw))
	case n < 0:
		return 0, apierrors.NewInvalid(scaleGK, c.info.Name, field.ErrorList{field.Invalid(p, n, "must be greater than or equal to 0")})
	}
	if name, _ := nested(scale, "metadata", "name").(string); name != "" && name != c.info.Name {
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
	parts := strings.Split(strings.TrimPrefix(path, "."), ".")
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
