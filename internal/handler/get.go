package handler

import (
	"net/http"

	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/conversion"
	"github.com/crdserver/crdserver/internal/watchcache"
)

// get reads one object from the watch cache with the resourceVersion
// semantics of a get ("" consistent, "0" any, N not older than N). Cached
// items carry their resourceVersion and were pruned and defaulted by
// ItemDecoder with the schema of the time they were decoded; the cache is
// not rebuilt when a schema changes, so an object stored before the
// current schema (readSchema) is pruned and defaulted again (both are
// idempotent). Otherwise, when the answer is the object as stored
// (servesStored), it is the item's bytes; every other answer decodes them.
func (h *Handler) get(c *call) {
	rv := c.r.URL.Query().Get("resourceVersion")
	if err := cacheResourceVersionError(rv); err != nil {
		codec.WriteStatus(c.w, c.r, err)
		return
	}
	it, err := c.store.Cache.Get(c.r.Context(), c.store.Key(c.info.Namespace, c.info.Name), watchcache.GetOptions{ResourceVersion: rv})
	if err != nil {
		codec.WriteStatus(c.w, c.r, storageError(err, c.gr(), c.info.Name, "get"))
		return
	}
	rs := readSchema(c.def, it.Revision)
	if rs == nil && servesStored(c, it.Head()) {
		writeItem(c, http.StatusOK, it)
		return
	}
	encoded := it.JSON()
	if rs == nil && !inVersion(c, encoded) {
		// Converted by key and revision: a conversion a list or a watch
		// made is reused.
		conv, err := c.conv().FromStored(c.r.Context(), []conversion.Object{{JSON: encoded, Key: it.Key, Revision: it.Revision}})
		if err != nil {
			codec.WriteStatus(c.w, c.r, err)
			return
		}
		if encoded = conv[0]; c.media.As == "" && c.present == nil {
			writeRaw(c, http.StatusOK, encoded)
			return
		}
	}
	obj, err := decodeStored(encoded)
	if err != nil {
		codec.WriteStatus(c.w, c.r, storageError(err, c.gr(), c.info.Name, "get"))
		return
	}
	if rs != nil {
		rs.Prune(obj)
		rs.Default(obj)
	}
	h.writeObject(c, http.StatusOK, obj)
}
