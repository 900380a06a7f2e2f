package handler

import (
	"errors"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/conversion"
	"github.com/crdserver/crdserver/internal/watchcache"
)

// deleteCollection deletes every object matching the selectors and answers
// with the list of what it deleted (or marked for deletion).
func (h *Handler) deleteCollection(c *call) {
	opts, err := listOptions(c)
	if err != nil {
		codec.WriteStatus(c.w, c.r, err)
		return
	}
	dopts, err := deleteOptions(c)
	if err != nil {
		codec.WriteStatus(c.w, c.r, err)
		return
	}
	res, err := c.store.Cache.List(c.r.Context(), watchcache.ListOptions{
		Namespace: c.info.Namespace,
		Labels:    opts.LabelSelector,
		Fields:    opts.FieldSelector,
	})
	if err != nil {
		codec.WriteStatus(c.w, c.r, err)
		return
	}
	// The answer lists the deleted objects in the request's version: a
	// conversion that fails does so before anything is deleted.
	objs := make([]conversion.Object, len(res.Items))
	for i, it := range res.Items {
		objs[i] = conversion.Object{JSON: it.JSON(), Key: it.Key, Revision: it.Revision}
	}
	converted, err := c.conv().FromStored(c.r.Context(), objs)
	if err != nil {
		codec.WriteStatus(c.w, c.r, err)
		return
	}
	cached := h.admissionIdle(c) && mayDeleteCached(c.def, dopts)
	items := make([]any, 0, len(res.Items))
	for i, it := range res.Items {
		if cached {
			// The listed copy goes as it is when nothing needs it decoded,
			// and is answered as listed, at the delete's revision.
			_, rev, done, err := deleteItem(c.r.Context(), c.def, c.store, it, dopts)
			if err != nil {
				codec.WriteStatus(c.w, c.r, err)
				return
			}
			if done {
				item, err := atRevision(converted[i], rev)
				if err != nil {
					codec.WriteStatus(c.w, c.r, apierrors.NewInternalError(err))
					return
				}
				items = append(items, item)
				continue
			}
		}
		obj, _, err := h.deleteObject(c.r.Context(), c.def, c.store, it.Namespace, it.Name, dopts, h.deleteAdmission(c, it.Namespace, it.Name, dopts))
		var st apierrors.APIStatus
		if errors.As(err, &st) && apierrors.IsNotFound(err) {
			continue // deleted meanwhile
		}
		if err != nil {
			codec.WriteStatus(c.w, c.r, err)
			return
		}
		if obj, err = c.conv().ToRequest(c.r.Context(), obj); err != nil {
			codec.WriteStatus(c.w, c.r, err)
			return
		}
		items = append(items, obj)
	}
	// As upstream answers: the list it deleted from, at its revision.
	lm := map[string]any{"resourceVersion": strconv.FormatInt(res.ResourceVersion, 10)}
	if c.def.Custom() {
		lm["continue"] = "" // an unstructured list's metadata keeps it
	}
	codec.WriteObject(c.w, http.StatusOK, c.media, map[string]any{
		"kind": c.def.ListKind, "apiVersion": c.apiVersion(),
		"metadata": lm, "items": items,
	})
}

// atRevision is an encoded object with resourceVersion rev: spliced into
// the bytes, or set in the decoded object when they are not in Marshal's
// form.
func atRevision(encoded []byte, rev int64) (any, error) {
	if b, ok := codec.SetResourceVersion(encoded, rvString(rev)); ok {
		return codec.Raw(b), nil
	}
	obj, err := decodeStored(encoded)
	if err != nil {
		return nil, err
	}
	setRV(obj, rev)
	return obj, nil
}
