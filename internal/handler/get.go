package handler

import (
	"net/http"

	"k8s.io/apimachinery/pkg/types"

	"github.com/crdserver/crdserver/internal/codec"
)

func typesUID(s string) types.UID { return types.UID(s) }

// get reads one object with a consistent read. When the answer is the
// object as stored (servesStored), it is the stored bytes with the revision
// spliced in; every other answer decodes it.
func (h *Handler) get(c *call) {
	kv, err := c.store.Storage.Get(c.r.Context(), c.store.Key(c.info.Namespace, c.info.Name))
	if err != nil {
		codec.WriteStatus(c.w, c.r, storageError(err, c.gr(), c.info.Name, "get"))
		return
	}
	rs := readSchema(c.def, kv.ModRevision)
	if rs == nil && servesStored(c, kv.Value) {
		if b, ok := codec.SetResourceVersion(kv.Value, rvString(kv.ModRevision)); ok {
			codec.WriteRaw(c.w, http.StatusOK, c.media, b)
			return
		}
	}
	obj, err := decodeStored(kv.Value)
	if err != nil {
		codec.WriteStatus(c.w, c.r, storageError(err, c.gr(), c.info.Name, "get"))
		return
	}
	if rs != nil {
		rs.Prune(obj)
		rs.Default(obj)
	}
	setRV(obj, kv.ModRevision)
	h.writeObject(c, http.StatusOK, obj)
}
