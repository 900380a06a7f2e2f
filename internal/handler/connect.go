package handler

import (
	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/registry"
	"github.com/crdserver/crdserver/internal/watchcache"
)

// connects reports whether c is a request to the definition's connect
// subresource (nodes/proxy), which every verb reaches.
func connects(c *call) bool {
	cn, ok := c.def.Hooks.(registry.Connecter)
	return ok && c.info.Subresource == cn.ConnectSubresource()
}

// connect answers a connect subresource: the object its name names must
// exist (upstream's 404 otherwise), and the hook says what reaching it
// gives.
func (h *Handler) connect(c *call) {
	cn := c.def.Hooks.(registry.Connecter)
	name, err := cn.ConnectName(c.info.Name)
	if err != nil {
		codec.WriteStatus(c.w, c.r, err)
		return
	}
	it, err := c.store.Cache.Get(c.r.Context(), c.store.Key(c.info.Namespace, name), watchcache.GetOptions{})
	if err != nil {
		codec.WriteStatus(c.w, c.r, storageError(err, c.gr(), name, "get"))
		return
	}
	obj, err := decodeStored(it.JSON())
	if err != nil {
		codec.WriteStatus(c.w, c.r, err)
		return
	}
	codec.WriteStatus(c.w, c.r, cn.Connect(c.r.Context(), obj))
}
