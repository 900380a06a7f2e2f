// Package discovery serves the API discovery documents — /api, /api/v1,
// /apis, /apis/<group> and /apis/<group>/<version>, and the aggregated
// (apidiscovery.k8s.io) form of /api and /apis — read from the resource
// registry. Documents are built once per registry generation and cached with
// their entity tags.
package discovery

import (
	"encoding/json"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

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

// ServeHTTP serves one discovery document.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeStatus(w, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed,
			"the server does not allow this method on the requested resource")
		return
	}
	d, err := h.current()
	if err != nil {
		slog.Error("building discovery documents", "err", err)
		writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, "Internal error occurred: building discovery documents")
		return
	}

	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case len(parts) == 1 && parts[0] == "api":
		if acceptsAggregated(r.Header.Values("Accept")) {
			serveAggregated(w, r, d.aggregatedCore)
			return
		}
		h.serveAPIVersions(w, r, d)
		return
	case len(parts) == 1 && parts[0] == "apis":
		if acceptsAggregated(r.Header.Values("Accept")) {
			serveAggregated(w, r, d.aggregatedGroups)
			return
		}
		serveDoc(w, r, d.groupList, "application/json", "no-cache, private")
		return
	case len(parts) == 2 && parts[0] == "api":
		if doc, ok := d.resources[schema.GroupVersion{Version: parts[1]}]; ok {
			serveDoc(w, r, doc, "application/json", "no-cache, private")
			return
		}
	case len(parts) == 2 && parts[0] == "apis" && parts[1] != "":
		if doc, ok := d.groups[parts[1]]; ok {
			serveDoc(w, r, doc, "application/json", "no-cache, private")
			return
		}
	case len(parts) == 3 && parts[0] == "apis" && parts[1] != "":
		if doc, ok := d.resources[schema.GroupVersion{Group: parts[1], Version: parts[2]}]; ok {
			serveDoc(w, r, doc, "application/json", "no-cache, private")
			return
		}
	}
	// Upstream's REST router serves /api and the built-in groups, and
	// answers a version it lacks with a Status; any other group falls
	// through to a plain-text 404.
	if parts[0] == "apis" && len(parts) > 1 && !h.reg.Current().BuiltinGroup(parts[1]) {
		http.NotFound(w, r)
		return
	}
	writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource")
}

// serveAPIVersions writes /api, which names the address the client reached
// the server at, so it is encoded per request.
func (h *Handler) serveAPIVersions(w http.ResponseWriter, r *http.Request, d *docs) {
	v := &metav1.APIVersions{
		TypeMeta: metav1.TypeMeta{Kind: "APIVersions"},
		Versions: d.coreVersions,
		ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{
			{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host},
		},
	}
	doc, err := newDoc(v)
	if err != nil {
		slog.Error("encoding /api", "err", err)
		writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, "Internal error occurred: encoding /api")
		return
	}
	serveDoc(w, r, doc, "application/json", "no-cache, private")
}

// serveAggregated writes an APIGroupDiscoveryList with the content type
// client-go checks (application/json with the g, v and as parameters).
func serveAggregated(w http.ResponseWriter, r *http.Request, doc doc) {
	serveDoc(w, r, doc, "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", "public")
}

// serveDoc writes a cached document with its ETag and answers a matching
// If-None-Match with 304. The body varies with Accept (aggregated or not).
func serveDoc(w http.ResponseWriter, r *http.Request, doc doc, contentType, cacheControl string) {
	etag := strconv.Quote(doc.etag)
	hdr := w.Header()
	hdr.Set("ETag", etag)
	hdr.Set("Vary", "Accept")
	hdr.Set("Cache-Control", cacheControl)
	if etagMatches(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	hdr.Set("Content-Type", contentType)
	hdr.Set("Content-Length", strconv.Itoa(len(doc.body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(doc.body)
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

// acceptsAggregated reports whether an Accept header asks for aggregated
// discovery: any acceptable JSON clause names apidiscovery.k8s.io/v2's
// APIGroupDiscoveryList. Like kube-apiserver from 1.35 on, v2beta1 is not
// served: a client asking only for it gets the unaggregated documents.
func acceptsAggregated(accept []string) bool {
	for _, header := range accept {
		for _, clause := range strings.Split(header, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(clause))
			if err != nil {
				continue
			}
			if mt != "application/json" && mt != "application/*" && mt != "*/*" {
				continue
			}
			if params["g"] != "apidiscovery.k8s.io" || params["as"] != "APIGroupDiscoveryList" || params["v"] != "v2" {
				continue
			}
			if q, ok := params["q"]; ok {
				if f, err := strconv.ParseFloat(q, 64); err != nil || f <= 0 {
					continue // q=0: "not acceptable"
				}
			}
			return true
		}
	}
	return false
}

// writeStatus writes a Failure Status the way kube-apiserver answers
// discovery paths it does not serve.
func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, message string) {
	st := metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Message:  message,
		Reason:   reason,
		Details:  &metav1.StatusDetails{},
		Code:     int32(code),
	}
	b, _ := json.Marshal(&st)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache, private")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}
