package handler

import (
	"context"
	"net/http"
	"path"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/admission"
	"github.com/crdserver/crdserver/internal/audit"
	"github.com/crdserver/crdserver/internal/authn"
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
// upstream's connect handler does: a dry run is refused; admission sees
// a CONNECT of the subresource's options, which name the path after the
// subresource; the name the request's path gives is resolved to a
// backend; the request goes there with the options' path, cleaned, and
// its query.
func (h *Handler) proxy(c *call, px registry.Proxier) {
	opts := map[string]any{}
	if p := proxyPath(c.info); p != "" {
		opts["path"] = p
	}
	opts, err := h.admitConnect(c, opts, nil)
	if err != nil {
		codec.WriteStatus(c.w, c.r, err)
		return
	}
	loc, err := px.ProxyLocation(c.r.Context(), c.info.Namespace, c.info.Name)
	if err != nil {
		codec.WriteStatus(c.w, c.r, err)
		return
	}
	p, _ := opts["path"].(string)
	loc.Path = cleanPath(p)
	// Shutdown ends the request, and with it an upgraded connection
	// (ReverseProxy closes the backend's when the request's context ends).
	ctx, cancel := context.WithCancel(c.r.Context())
	defer cancel()
	go func() {
		select {
		case <-h.stopWatches:
			cancel()
		case <-ctx.Done():
		}
	}()
	forward.Handler{Location: loc, Transport: h.proxyTransport}.ServeHTTP(c.w, c.r.WithContext(ctx))
}

// admitConnect is how upstream's connect handler starts on a request to
// a connect subresource that takes options: a dry run is refused, then
// the options' decoding error (decodeErr, a 400) is the answer; then
// mutating and validating admission run, policies and webhooks seeing
// the operation CONNECT, the subresource's options as the object (opts,
// the fields of its kind, which it fills in), oldObject null, and the
// name as the request's path gives it. It returns the options once
// admitted: a mutating webhook may change them.
func (h *Handler) admitConnect(c *call, opts map[string]any, decodeErr error) (map[string]any, error) {
	if _, dry := c.r.URL.Query()["dryRun"]; dry {
		return nil, apierrors.NewBadRequest("dryRun is not supported")
	}
	if decodeErr != nil {
		return nil, decodeErr
	}
	ctx := c.r.Context()
	if h.admit == nil || h.admit.Idle(ctx) {
		return opts, nil
	}
	var kind schema.GroupVersionKind
	for _, o := range c.version.Subresources.Other {
		if o.Name == c.info.Subresource && o.Kind != nil {
			kind = *o.Kind
		}
	}
	if kind.Version == "" {
		// Discovery names nodes/proxy's kind without its version, which
		// is the resource's.
		kind.Group, kind.Version = c.def.Group, c.version.Name
	}
	opts["kind"], opts["apiVersion"] = kind.Kind, kind.GroupVersion().String()
	at := &admission.Attributes{
		Operation:   admission.Connect,
		Kind:        kind,
		Resource:    schema.GroupVersionResource{Group: c.def.Group, Version: c.version.Name, Resource: c.def.Resource},
		Subresource: c.info.Subresource,
		Namespace:   c.info.Namespace,
		Name:        c.info.Name,
		Object:      opts,
		Warn:        func(text string) { addWarning(c, text) },
		Annotate:    func(key, value string) { audit.AddAnnotation(ctx, key, value) },
	}
	if u, ok := authn.UserFrom(ctx); ok {
		at.User = u
	}
	if err := h.admit.Mutate(ctx, at); err != nil {
		return nil, err
	}
	if err := h.admit.Validate(ctx, at); err != nil {
		return nil, err
	}
	return at.Object, nil
}

// proxyPath is the path a proxy request names after its subresource, as
// upstream reads it: the segments there, with a leading slash, and a
// trailing one when the request's path has one; "" when it names none
// and has none.
func proxyPath(info *request.Info) string {
	p := strings.Join(info.Parts[3:], "/")
	if p != "" && !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	if strings.HasSuffix(info.Path, "/") && !strings.HasSuffix(p, "/") {
		p += "/"
	}
	return p
}

// cleanPath is the backend's path for the one a proxy request names: p
// cleaned, a trailing slash kept; "" stays "".
func cleanPath(p string) string {
	if p == "" {
		return ""
	}
	clean := path.Clean(p)
	if strings.HasSuffix(p, "/") && !strings.HasSuffix(clean, "/") {
		clean += "/"
	}
	return clean
}
