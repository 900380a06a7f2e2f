package handler

import (
	"net/http"
	"path"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/forward"
	"github.com/crdserver/crdserver/internal/registry"
	"github.com/crdserver/crdserver/internal/request"
)

// proxyMethods are the methods upstream's proxy subresources serve; an
// OPTIONS has no verb (authorizers see "").
var proxyMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions}

// proxier returns the hook that forwards c's subresource, when one does
// for c's method.
func proxier(c *call) (registry.Proxier, bool) {
	px, ok := c.def.Hooks.(registry.Proxier)
	if !ok || !px.Proxies(c.info.Subresource) || !slices.Contains(proxyMethods, c.r.Method) {
		return nil, false
	}
	return px, true
}

// proxy forwards a request to a proxy subresource (services/proxy), as
// upstream's connect handler does: a dry run is refused, the name the
// path gives is resolved to a backend, and the request goes there with
// the path after the subresource and its query.
func (h *Handler) proxy(c *call, px registry.Proxier) {
	if _, dry := c.r.URL.Query()["dryRun"]; dry {
		codec.WriteStatus(c.w, c.r, apierrors.NewBadRequest("dryRun is not supported"))
		return
	}
	loc, err := px.ProxyLocation(c.r.Context(), c.info.Namespace, c.info.Name)
	if err != nil {
		codec.WriteStatus(c.w, c.r, err)
		return
	}
	loc.Path = proxyPath(c.info)
	forward.Handler{Location: loc, Transport: h.proxyTransport}.ServeHTTP(c.w, c.r)
}

// proxyPath is the backend path a proxy request names: the segments
// after its subresource, cleaned, with a trailing slash when the
// request's path has one; "" when it names none and has none.
func proxyPath(info *request.Info) string {
	p := strings.Join(info.Parts[3:], "/")
	if p != "" && !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	if strings.HasSuffix(info.Path, "/") && !strings.HasSuffix(p, "/") {
		p += "/"
	}
	if p == "" {
		return ""
	}
	clean := path.Clean(p)
	if strings.HasSuffix(p, "/") && !strings.HasSuffix(clean, "/") {
		clean += "/"
	}
	return clean
}
