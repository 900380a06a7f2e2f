// Package discovery serves the API discovery documents — /api, /api/v1,
// /apis, /apis/<group> and /apis/<group>/<version>, and the aggregated
// (apidiscovery.k8s.io) form of /api and /apis — read from the resource
// registry. Documents are built once per registry generation and cached with
// their entity tags.
package discovery

import (
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/registry"
)

// Handler serves the discovery documents of a registry. Mount it at /api,
// /api/, /apis and /apis/; it answers exactly the discovery paths and 404 for
// anything else below them (resource paths must be routed elsewhere first).
type Handler struct {
	reg *registry.Registry

	// mu serializes rebuilds so that one generation is built once; readers
	// never take it when the cache is current.
	mu    sync.Mutex
	cache atomic.Pointer[docs]
}

var _ http.Handler = (*Handler)(nil)

// New returns a handler serving reg's current table.
func New(reg *registry.Registry) *Handler {
	return &Handler{reg: reg}
}

// current returns the documents of the registry's current table, building
// them on the first request after a swap.
func (h *Handler) current() (*docs, error) {
	t := h.reg.Current()
	if d := h.cache.Load(); d != nil && d.generation == t.Generation {
		return d, nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if d := h.cache.Load(); d != nil && d.generation >= t.Generation {
		return d, nil
	}
	d, err := build(t)
	if err != nil {
		return nil, err
	}
	h.cache.Store(d)
	return d, nil
}

// Paths are the discovery documents' paths in the current table: /api and
// each core version, /apis and /apis/, each group and each of its
// versions. Nil when the documents do not build (requests for them fail).
func (h *Handler) Paths() []string {
	d, err := h.current()
	if err != nil {
		return nil
	}
	paths := []string{"/api", "/apis", "/apis/"}
	for _, v := range d.coreVersions {
		paths = append(paths, "/api/"+v)
	}
	for g := range d.groups {
		paths = append(paths, "/apis/"+g)
	}
	for gv := range d.resources {
		if gv.Group != "" {
			paths = append(paths, "/apis/"+gv.Group+"/"+gv.Version)
		}
	}
	return paths
}

// ServeHTTP serves one discovery document.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d, err := h.current()
	if err != nil {
		slog.Error("building discovery documents", "err", err)
		codec.WriteStatus(w, r, apierrors.NewInternalError(errors.New("building discovery documents")))
		return
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	t := h.reg.Current()
	find, aggregated, route := h.lookup(d, t, parts)
	if find == nil {
		// Upstream's REST router serves /api and the built-in groups,
		// and answers a version it lacks with a Status; any other group
		// falls through to a plain-text 404.
		if parts[0] == "apis" && len(parts) > 1 && !t.BuiltinGroup(parts[1]) {
			http.NotFound(w, r)
			return
		}
		codec.WriteStatus(w, r, codec.NotFound())
		return
	}
	// The REST router's routes (the core documents, a built-in group
	// version's resources) take GET alone, and check Accept against
	// their media types before their handler negotiates. Upstream's
	// other discovery handlers answer any method.
	accept := strings.Join(r.Header.Values("Accept"), ",")
	if route {
		if r.Method != http.MethodGet {
			codec.WriteStatus(w, r, codec.MethodNotAllowed())
			return
		}
		if err := codec.RouteAccepts(accept, codec.RouteTypes); err != nil {
			codec.WriteStatus(w, r, err)
			return
		}
	}
	// /api and /apis are aggregated when any clause asks for
	// apidiscovery.k8s.io/v2, whatever its quality and place, as
	// upstream's wrapper decides; other documents are negotiated plainly.
	// Either is indented when pretty=1 is in the clause that chose it or
	// the request asks as codec.PrettyRequested reads it.
	if aggregated != nil {
		if mt, err := codec.NegotiateDocument(accept, codec.AggregatedDiscoveryOnly); err == nil && codec.AggregatedDiscoveryOnly(mt) {
			mt.Pretty = mt.Pretty || codec.PrettyRequested(r)
			serveDoc(w, r, aggregated(), mt, aggregatedParams, "public")
			return
		}
	}
	mt, err := codec.NegotiateDocument(accept, codec.PlainOnly)
	if err != nil {
		codec.WriteStatus(w, r, err)
		return
	}
	mt.Pretty = mt.Pretty || codec.PrettyRequested(r)
	doc, err := find(r)
	if err != nil {
		slog.Error("encoding discovery document", "path", r.URL.Path, "err", err)
		codec.WriteStatus(w, r, apierrors.NewInternalError(errors.New("encoding discovery document")))
		return
	}
	serveDoc(w, r, doc, mt, "", "no-cache, private")
}

// aggregatedParams name the aggregated form in its Content-Type, which
// client-go checks.
const aggregatedParams = ";g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

// lookup finds the document at parts: find returns it (nil when there is
// none), aggregated its aggregated form (nil for documents without one),
// and route tells whether upstream serves it from a REST route.
func (h *Handler) lookup(d *docs, t *registry.Table, parts []string) (find func(*http.Request) (doc, error), aggregated func() doc, route bool) {
	fixed := func(d doc) func(*http.Request) (doc, error) {
		return func(*http.Request) (doc, error) { return d, nil }
	}
	switch {
	case len(parts) == 1 && parts[0] == "api":
		return func(r *http.Request) (doc, error) { return apiVersions(d, r) },
			func() doc { return d.aggregatedCore }, true
	case len(parts) == 1 && parts[0] == "apis":
		return fixed(d.groupList), func() doc { return d.aggregatedGroups }, false
	case len(parts) == 2 && parts[0] == "api":
		if doc, ok := d.resources[schema.GroupVersion{Version: parts[1]}]; ok {
			return fixed(doc), nil, true
		}
	case len(parts) == 2 && parts[0] == "apis" && parts[1] != "":
		if doc, ok := d.groups[parts[1]]; ok {
			return fixed(doc), nil, false
		}
	case len(parts) == 3 && parts[0] == "apis" && parts[1] != "":
		if doc, ok := d.resources[schema.GroupVersion{Group: parts[1], Version: parts[2]}]; ok {
			return fixed(doc), nil, t.BuiltinGroup(parts[1])
		}
	}
	return nil, nil, false
}

// apiVersions is /api, which names the address the client reached the
// server at, so it is encoded per request.
func apiVersions(d *docs, r *http.Request) (doc, error) {
	v := &metav1.APIVersions{
		TypeMeta: metav1.TypeMeta{Kind: "APIVersions"},
		Versions: d.coreVersions,
		ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{
			{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host},
		},
	}
	return newDoc(v, "", "APIVersions")
}

// serveDoc writes a document in the form mt asks for, its Content-Type
// given params, with its ETag, and answers a matching If-None-Match with
// 304. The body varies with Accept.
func serveDoc(w http.ResponseWriter, r *http.Request, doc doc, mt codec.MediaType, params, cacheControl string) {
	etag := strconv.Quote(doc.etag)
	hdr := w.Header()
	hdr.Set("ETag", etag)
	hdr.Set("Vary", "Accept")
	hdr.Set("Cache-Control", cacheControl)
	if etagMatches(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body, ctype := doc.body, codec.MediaJSON
	var err error
	switch {
	case mt.Type == codec.MediaProtobuf:
		body, ctype = nil, codec.MediaProtobuf
		body, err = doc.pb.bytes()
	case mt.Type != codec.MediaJSON || mt.Pretty:
		body, ctype, err = codec.Render(mt, doc.body)
	}
	if err != nil {
		slog.Error("encoding discovery document", "path", r.URL.Path, "err", err)
		codec.WriteStatus(w, r, apierrors.NewInternalError(errors.New("encoding discovery document")))
		return
	}
	hdr.Set("Content-Type", ctype+params)
	hdr.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// etagMatches reports whether an If-None-Match header lists etag (or "*").
// Weak validators match too: the comparison for GET is the weak one.
func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == etag || t == "*" {
			return true
		}
	}
	return false
}
