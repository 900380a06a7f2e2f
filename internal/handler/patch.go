package handler

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"

	jsonpatch "github.com/evanphx/json-patch/v5"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/registry"
)

// patch applies a JSON patch, merge patch or (for resources with a Go type)
// strategic merge patch to the current object, then takes the update path.
func (h *Handler) patch(c *call, sub string) {
	ct, _, _ := mime.ParseMediaType(c.r.Header.Get("Content-Type"))
	sm, hasType := c.def.Hooks.(registry.StrategicMerger)
	switch ct {
	case "application/json-patch+json", "application/merge-patch+json":
	case "application/strategic-merge-patch+json":
		if !hasType {
			codec.WriteStatus(c.w, c.r, unsupportedPatch(ct))
			return
		}
	default:
		codec.WriteStatus(c.w, c.r, unsupportedPatch(ct))
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
	var jp jsonpatch.Patch
	if ct == "application/json-patch+json" {
		if jp, err = decodeJSONPatch(body); err != nil {
			codec.WriteStatus(c.w, c.r, err)
			return
		}
	} else {
		// Merge patches must be JSON objects; duplicate fields are found here.
		_, problems, err := codec.Decode(body, "application/json", codec.DecodeOptions{})
		if err != nil {
			codec.WriteStatus(c.w, c.r, err)
			return
		}
		if err := applyFieldValidation(c, mode, problems); err != nil {
			codec.WriteStatus(c.w, c.r, err)
			return
		}
	}
	h.write(c, sub, "", func(old map[string]any, _ []byte) (map[string]any, error) {
		cur, err := json.Marshal(toRequestVersion(c, old))
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		var out []byte
		switch ct {
		case "application/json-patch+json":
			out, err = jp.ApplyWithOptions(cur, jsonPatchOptions())
		case "application/merge-patch+json":
			out, err = jsonpatch.MergePatch(cur, body)
		default:
			out, err = strategicpatch.StrategicMergePatch(cur, body, sm.PatchSchema())
		}
		if err != nil {
			return nil, apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false)
		}
		obj, _, err := codec.Decode(out, "application/json", codec.DecodeOptions{})
		if err != nil {
			return nil, err
		}
		oldRV, _ := metadata(old)["resourceVersion"].(string)
		if rv, _ := metadata(obj)["resourceVersion"].(string); rv != "" && rv != oldRV {
			return nil, apierrors.NewConflict(c.gr(), c.info.Name, fmt.Errorf("%s", optimisticLockMsg))
		}
		if err := checkTypeMeta(c, obj); err != nil {
			return nil, err
		}
		if err := checkNameAndNamespace(c, obj); err != nil {
			return nil, err
		}
		return obj, nil
	})
}

func unsupportedPatch(ct string) error {
	_ = ct
	return statusError(http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType,
		"the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json")
}

// Limits on JSON patches, as upstream's: a patch of a few hundred bytes
// could otherwise copy a document into gigabytes.
const (
	maxJSONPatchOperations = 10000
	maxJSONPatchCopyBytes  = 3 * 1024 * 1024
)

// decodeJSONPatch decodes a JSON patch and refuses one with too many
// operations.
func decodeJSONPatch(body []byte) (jsonpatch.Patch, error) {
	jp, err := jsonpatch.DecodePatch(body)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if len(jp) > maxJSONPatchOperations {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf(
			"The allowed maximum operations in a JSON patch is %d, got %d", maxJSONPatchOperations, len(jp)))
	}
	return jp, nil
}

// jsonPatchOptions bounds what copy operations may add.
func jsonPatchOptions() *jsonpatch.ApplyOptions {
	o := jsonpatch.NewApplyOptions()
	o.AccumulatedCopySizeLimit = maxJSONPatchCopyBytes
	return o
}
