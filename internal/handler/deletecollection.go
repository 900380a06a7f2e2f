package handler

import (
	"errors"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdserver/crdserver/internal/codec"
)

// deleteCollection deletes the objects a list with the same options would
// answer (one page when it asks for a limit, every object else) and
// answers with that list, as upstream does: the objects as listed, before
// their deletes, whether they went or were only marked.
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
	res, err := listPage(c, opts)
	if err != nil {
		codec.WriteStatus(c.w, c.r, err)
		return
	}
	// The answer is in the request's version: a conversion that fails
	// does so before anything is deleted.
	l, err := inRequestVersion(c, res.Items)
	if err != nil {
		codec.WriteStatus(c.w, c.r, err)
		return
	}
	cached := h.admissionIdle(c) && mayDeleteCached(c.def, dopts)
	for _, it := range res.Items {
		if cached {
			// The listed copy goes as it is when nothing needs it decoded.
			_, done, err := deleteItem(c.r.Context(), c.def, c.store, it, dopts)
			if err != nil {
				codec.WriteStatus(c.w, c.r, err)
				return
			}
			if done {
				continue
			}
		}
		_, _, err := h.deleteObject(c.r.Context(), c.def, c.store, it.Namespace, it.Name, dopts, h.deleteAdmission(c, it.Namespace, it.Name, dopts))
		var st apierrors.APIStatus
		if errors.As(err, &st) && apierrors.IsNotFound(err) {
			continue // deleted meanwhile
		}
		if err != nil {
			codec.WriteStatus(c.w, c.r, err)
			return
		}
	}
	lm := metav1.ListMeta{ResourceVersion: strconv.FormatInt(res.ResourceVersion, 10), Continue: res.Continue, RemainingItemCount: res.RemainingItemCount}
	h.writeListAs(c, lm, l)
}
