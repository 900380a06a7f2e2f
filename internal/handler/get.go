package handler

import (
	"net/http"

	"k8s.io/apimachinery/pkg/types"

	"github.com/crdserver/crdserver/internal/codec"
)

func typesUID(s string) types.UID { return types.UID(s) }

// get reads one object with a consistent read.
func (h *Handler) get(c *call) {
	obj, _, err := h.read(c)
	if err != nil {
		codec.WriteStatus(c.w, c.r, err)
		return
	}
	h.writeObject(c, http.StatusOK, obj)
}

// read loads the call's object from storage with its resourceVersion set,
// and returns its revision.
func (h *Handler) read(c *call) (map[string]any, int64, error) {
	kv, err := c.store.Storage.Get(c.r.Context(), c.store.Key(c.info.Namespace, c.info.Name))
	if err != nil {
		return nil, 0, storageError(err, c.gr(), c.info.Name, "get")
	}
	obj, err := decodeStored(kv.Value)
	if err != nil {
		return nil, 0, storageError(err, c.gr(), c.info.Name, "get")
	}
	setRV(obj, kv.ModRevision)
	return obj, kv.ModRevision, nil
}
