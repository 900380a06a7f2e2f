// Package openapi serves /openapi/v2 and /openapi/v3 built from the
// resource registry: one OpenAPI 3.0 document per group version (what
// kubectl explain, kubectl's field-validation check and client-side apply
// read), an index of them, and the merged, lossy Swagger 2.0 document older
// clients fall back to. Documents are built once per registry generation and
// only for the group versions whose definitions changed; inside a group
// version only the resources that changed are rendered again, and the
// others' encoded pieces are spliced in (splice.go).
package openapi

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/registry"
)

// Media types of the OpenAPI documents (kube-openapi's names).
const (
	mimeJSON            = "application/json"
	mimeV2Protobuf      = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
	mimeV2ProtobufOld   = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
	mimeV3Protobuf      = "application/com.github.proto-openapi.spec.v3.v1.0+protobuf"
	mimeV3ProtobufOld   = "application/com.github.proto-openapi.spec.v3@v1.0+protobuf"
	immutableCacheLimit = 365 * 24 * time.Hour
)

// Handler serves the OpenAPI documents of a registry. Mount it at
// /openapi/v2, /openapi/v3 and /openapi/v3/.
type Handler struct {
	reg *registry.Registry
	now func() time.Time

	// mu serializes rebuilds so that a generation is built once and each
	// build can reuse the previous one; readers of a current state never
	// take it.
	mu    sync.Mutex
	state atomic.Pointer[state]
}

var _ http.Handler = (*Handler)(nil)

// New returns a handler serving reg's current table.
func New(reg *registry.Registry) *Handler {
	return &Handler{reg: reg, now: time.Now}
}

// current returns the documents of the registry's current table, building
// the changed group versions on the first request after a swap.
func (h *Handler) current() (*state, error) {
	t := h.reg.Current()
	if s := h.state.Load(); s != nil && s.generation == t.Generation {
		return s, nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	prev := h.state.Load()
	if prev != nil && prev.generation >= t.Generation {
		return prev, nil
	}
	s, err := buildState(t, prev, h.now())
	if err != nil {
		return nil, err
	}
	h.state.Store(s)
	return s, nil
}

// ServeHTTP serves /openapi/v2, /openapi/v3 and /openapi/v3/<group version>.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeStatus(w, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed,
			"the server does not allow this method on the requested resource")
		return
	}
	s, err := h.current()
	if err != nil {
		slog.Error("building OpenAPI documents", "err", err)
		writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, "Internal error occurred: building OpenAPI documents")
		return
	}
	path := r.URL.Path
	switch {
	case path == "/openapi/v2":
		serveGzipped(w, r, func(w http.ResponseWriter) { h.serveV2(w, r, s) })
	case path == "/openapi/v3" || path == "/openapi/v3/":
		// Upstream's aggregator writes the index with no Content-Type,
		// which http.ServeContent then sniffs as text/plain.
		serveBytes(w, r, s.index.json, s.index.etag, s.index.modified, "")
	case strings.HasPrefix(path, "/openapi/v3/"):
		serveGroupVersion(w, r, s, strings.TrimPrefix(path, "/openapi/v3/"))
	default:
		// Upstream routes only the documents' paths; the rest falls
		// through to its plain-text 404.
		http.NotFound(w, r)
	}
}

func (h *Handler) serveV2(w http.ResponseWriter, r *http.Request, s *state) {
	w.Header().Add("Vary", "Accept")
	ct, ok := codec.NegotiateOffer(r.Header.Get("Accept"), []string{mimeJSON, mimeV2ProtobufOld, mimeV2Protobuf})
	if !ok {
		w.WriteHeader(http.StatusNotAcceptable)
		return
	}
	doc, err := s.openAPIV2(h.now())
	if err != nil {
		slog.Error("building OpenAPI v2", "err", err)
		writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, "Internal error occurred: building OpenAPI v2")
		return
	}
	if ct == mimeJSON {
		serveBytes(w, r, doc.json, doc.etag, doc.modified, mimeJSON)
		return
	}
	pb, err := doc.protobufV2()
	if err != nil {
		slog.Error("encoding OpenAPI v2", "err", err)
		writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, "Internal error occurred: encoding OpenAPI v2")
		return
	}
	serveBytes(w, r, pb, doc.etag, doc.modified, mimeV2Protobuf)
}

// serveGroupVersion serves one v3 document. A request carrying the current
// hash (the index's serverRelativeURL) may be cached forever; one carrying
// an old hash is redirected to the current URL, as upstream does.
func serveGroupVersion(w http.ResponseWriter, r *http.Request, s *state, rest string) {
	key, ok := keyOf(rest)
	d := s.gvs[key]
	if !ok || d == nil {
		// Upstream's v3 handler answers a group-version it lacks with
		// an empty 404.
		w.Header().Set("Cache-Control", "no-cache, private")
		w.WriteHeader(http.StatusNotFound)
		return
	}
	w.Header().Add("Vary", "Accept")
	ct, ok := codec.NegotiateOffer(r.Header.Get("Accept"), []string{mimeJSON, mimeV3Protobuf, mimeV3ProtobufOld})
	if !ok {
		w.WriteHeader(http.StatusNotAcceptable)
		return
	}
	if hash := r.URL.Query().Get("hash"); hash != "" {
		if hash != d.etag {
			u := url.URL{Path: "/openapi/v3/" + key, RawQuery: url.Values{"hash": {d.etag}}.Encode()}
			http.Redirect(w, r, u.String(), http.StatusMovedPermanently)
			return
		}
		w.Header().Set("Cache-Control", "public, immutable")
		w.Header().Set("Expires", d.modified.Add(immutableCacheLimit).UTC().Format(http.TimeFormat))
	}
	if ct == mimeJSON {
		serveBytes(w, r, d.json, d.etag, d.modified, mimeJSON)
		return
	}
	pb, err := d.protobuf()
	if err != nil {
		slog.Error("encoding OpenAPI v3", "err", err)
		writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, "Internal error occurred: encoding OpenAPI v3")
		return
	}
	serveBytes(w, r, pb, d.etag, d.modified, mimeV3Protobuf)
}

// serveBytes writes a document with its ETag; http.ServeContent answers
// If-None-Match (304), If-Modified-Since and ranges, and sniffs the
// content type when contentType is "".
func serveBytes(w http.ResponseWriter, r *http.Request, body []byte, etag string, modified time.Time, contentType string) {
	hdr := w.Header()
	hdr.Set("Etag", strconv.Quote(etag))
	if contentType != "" {
		hdr.Set("Content-Type", contentType)
	}
	if hdr.Get("Cache-Control") == "" {
		hdr.Set("Cache-Control", "no-cache, private")
	}
	http.ServeContent(w, r, "", modified, bytes.NewReader(body))
}

// writeStatus writes a Failure Status as kube-apiserver answers paths and
// methods it does not serve.
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
