package handler

import (
	"errors"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	warnOrphaning(c, dopts)
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
		objs[i] = conversion.Object{Cached: it, Key: it.Key, Revision: it.Revision}
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
	// As upstream answers: the list it deleted from, at its revision, in
	// the form the client asked for, as a list is.
	encoded := make([]listItem, len(items))
	for i, item := range items {
		b, ok := item.(codec.Raw)
		if !ok {
			var err error
			if b, err = codec.Marshal(item); err != nil {
				codec.WriteStatus(c.w, c.r, apierrors.NewInternalError(err))
				return
			}
		}
		encoded[i] = listItem{body: b}
	}
	lm := metav1.ListMeta{ResourceVersion: strconv.FormatInt(res.ResourceVersion, 10)}
	h.writeListAs(c, lm, listed{encoded: encoded})
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
