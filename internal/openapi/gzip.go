package openapi

import (
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/klauspost/compress/gzip"

	"github.com/crdserver/crdserver/internal/compress"
)

// Upstream serves /openapi/v2 (and only it) through a gzip handler of
// its own, with rules other than the API's response compression: every
// answer varies on Accept-Encoding, any Accept-Encoding token "gzip" with
// a quality above zero counts, and a body of at least gzipMinSize bytes
// is compressed at the default level. kubectl and client-go ask for gzip,
// and the document is megabytes of JSON.

// gzipMinSize is the smallest body compressed: about one packet.
const gzipMinSize = 1400

// gzipWriters are reused: each holds over a megabyte of state.
var gzipWriters = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}

// serveGzipped serves r through serve, compressed as upstream's
// /openapi/v2 handler compresses.
func serveGzipped(w http.ResponseWriter, r *http.Request, serve func(http.ResponseWriter)) {
	w.Header().Add("Vary", "Accept-Encoding")
	if !gzipAccepted(r.Header.Get("Accept-Encoding")) {
		serve(w)
		return
	}
	gw := &gzipWriter{w: w}
	serve(gw)
	gw.close()
}

// gzipAccepted reports whether an Accept-Encoding value gives gzip a
// quality above zero: tokens compared without case, a missing or
// malformed quality counting as 1, as upstream's handler reads them.
func gzipAccepted(header string) bool {
	q := 0.0
	for coding := range strings.SplitSeq(header, ",") {
		name, params, _ := strings.Cut(coding, ";")
		if !strings.EqualFold(strings.TrimSpace(name), "gzip") {
			continue
		}
		q = 1
		for p := range strings.SplitSeq(params, ";") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(p), "q="); ok {
				f, err := strconv.ParseFloat(v, 64)
				if err == nil {
					q = min(max(f, 0), 1)
				}
			}
		}
	}
	return q > 0
}

// gzipWriter holds the status and the first bytes of an answer back
// until it knows whether the body reaches gzipMinSize: from the declared
// Content-Length, which http.ServeContent always sets, or from what was
// written.
type gzipWriter struct {
	w       http.ResponseWriter
	status  int
	held    []byte
	decided bool
	gz      *gzip.Writer
}

func (g *gzipWriter) Header() http.Header { return g.w.Header() }

func (g *gzipWriter) WriteHeader(code int) {
	if g.status == 0 {
		g.status = code
	}
}

func (g *gzipWriter) Write(p []byte) (int, error) {
	switch {
	case g.gz != nil:
		return g.gz.Write(p)
	case g.decided:
		return g.w.Write(p)
	}
	g.held = append(g.held, p...)
	h := g.w.Header()
	declared, _ := strconv.Atoi(h.Get("Content-Length"))
	if declared == 0 && len(g.held) < gzipMinSize {
		return len(p), nil
	}
	g.decide(h.Get("Content-Encoding") == "" && (declared >= gzipMinSize || declared == 0))
	return len(p), g.flushHeld()
}

// decide writes the header of a compressed or a plain answer.
func (g *gzipWriter) decide(gzipped bool) {
	g.decided = true
	if gzipped {
		g.gz = gzipWriters.Get().(*gzip.Writer)
		compress.Reset(g.gz, g.w)
		g.w.Header().Set("Content-Encoding", "gzip")
		g.w.Header().Del("Content-Length")
	}
	if g.status != 0 {
		g.w.WriteHeader(g.status)
	}
}

func (g *gzipWriter) flushHeld() error {
	var err error
	if g.gz != nil {
		_, err = g.gz.Write(g.held)
	} else if len(g.held) > 0 {
		_, err = g.w.Write(g.held)
	}
	g.held = nil
	return err
}

// close sends a short answer as it is, or ends the compressed one.
func (g *gzipWriter) close() {
	if !g.decided {
		g.decide(false)
		_ = g.flushHeld()
	}
	if g.gz != nil {
		_ = g.gz.Close() // an error is the client gone
		g.gz.Reset(nil)
		gzipWriters.Put(g.gz)
		g.gz = nil
	}
}
