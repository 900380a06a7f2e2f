package handler

import (
	"errors"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/yaml"

	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/request"
)

// applyPatchType is server-side apply's patch media type.
const applyPatchType = "application/apply-patch+yaml"

// apply serves a server-side apply: the body is the manager's whole
// intent for the fields it manages, merged into the object (created when
// missing) with the structured-merge-diff types of its schema; then the
// update (or create) path runs as for any write.
func (h *Handler) apply(c *call, sub string) {
	if err := h.doApply(c, sub); err != nil {
		codec.WriteStatus(c.w, c.r, err)
	}
}

func (h *Handler) doApply(c *call, sub string) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	if err := checkWriteOptions(c, applyPatchType); err != nil {
		return err
	}
	mode, err := fieldValidation(c)
	if err != nil {
		return err
	}
	dry, err := dryRun(c.r)
	if err != nil {
		return err
	}
	patch, problems, err := codec.Decode(body, codec.MediaYAML, codec.DecodeOptions{})
	if err != nil {
		var de *codec.DecodeError
		if errors.As(err, &de) {
			return apierrors.NewBadRequest("error decoding patch: " + upstreamYAMLError(body, yaml.Unmarshal, de.Err))
		}
		return err
	}
	q := c.r.URL.Query()
	manager, force := q.Get("fieldManager"), request.QueryBool(q, "force")
	c.applies = true
	fm := fieldManager(c, sub)
	// merge applies the patch to live (nil when the object does not
	// exist), then checks what upstream checks after the merge: that the
	// object is the URL's, and the body's duplicate keys under
	// fieldValidation.
	merge := func(live map[string]any) (map[string]any, error) {
		var liveRV string
		if live != nil {
			liveRV, _ = metadata(live)["resourceVersion"].(string)
		}
		obj, err := fm.Apply(live, codec.DeepCopy(patch), manager, force)
		if err != nil {
			return nil, unknownError(err)
		}
		if err := checkNameAndNamespace(c, obj); err != nil {
			return nil, err
		}
		if len(problems) > 0 && mode == "Strict" {
			fallback := errors.New("error converting YAML to JSON: " + strings.Join(problems, ", "))
			return nil, apierrors.NewBadRequest("error strict decoding patch: " + upstreamYAMLError(body, yaml.UnmarshalStrict, fallback))
		}
		if mode == "Warn" {
			for _, w := range codec.Warnings(problems) {
				addWarning(c, w)
			}
		}
		// A configuration that sets resourceVersion applies only to that
		// revision, as upstream's update of the merged object checks.
		if rv, _ := metadata(obj)["resourceVersion"].(string); live != nil && rv != "" && rv != liveRV {
			return nil, apierrors.NewConflict(c.gr(), c.info.Name, errors.New(optimisticLockMsg))
		}
		c.applied = true
		return obj, nil
	}
	if sub == "" {
		c.createMissing = func() error {
			if err := h.authorizeCreate(c); err != nil {
				return err
			}
			if md := metadata(patch); md["name"] == nil {
				md["name"] = c.info.Name
			}
			obj, err := merge(nil)
			if err != nil {
				return err
			}
			return h.createObject(c, obj, dry)
		}
	}
	return h.doWrite(c, sub, "", func(old map[string]any, _ []byte) (map[string]any, error) { return merge(old) }, true)
}

// unknownError is how upstream answers an error that is not a Status,
// as the field manager's are ("failed to create typed patch object
// (...): .spec.x: field not declared in schema"): a 500 with reason
// Unknown and the error as the message.
func unknownError(err error) error {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		return err
	}
	return codec.UnknownError(err.Error())
}

// upstreamYAMLError is how upstream's YAML decoder (decode: sigs.k8s.io/yaml's
// Unmarshal or UnmarshalStrict) words its failure to read body, which
// upstream quotes to the client; ours when it finds none.
func upstreamYAMLError(body []byte, decode func([]byte, any, ...yaml.JSONOpt) error, ours error) string {
	if err := decode(body, &map[string]any{}); err != nil {
		return err.Error()
	}
	return ours.Error()
}
