package filters

import (
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/crdserver/crdserver/internal/compress"
	"github.com/crdserver/crdserver/internal/request"
)

// Compress gzips the answers to API requests that are over 128 KiB, for
// clients that accept gzip, as kube-apiserver does (its
// APIResponseCompression feature, on by default): Go clients, kubectl
// among them, ask for gzip unless told not to, and a list of thousands of
// objects shrinks several times over a network. Gets, lists, Tables and
// write answers are compressed, in any media type, and so is discovery;
// watches and smaller answers, which compression would only slow down,
// are not. An answer is sent as it is when every compressor is busy (see
// compress.Take).
//
// It comes after RequestInfo (and MaxBodySize, which needs it), before
// every filter that reads what the handler writes (audit keeps the
// answer's object, the request log and metrics its size), so that they
// read the answer uncompressed.
func Compress(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !acceptsGzip(r) || !compressible(r) {
			next.ServeHTTP(w, r)
			return
		}
		cw := &compressWriter{w: w}
		defer cw.release()
		next.ServeHTTP(cw, r.WithContext(compress.Allow(r.Context())))
		// A handler that panics leaves what it wrote unsent: Recover
		// answers for it when nothing was.
		cw.close()
	})
}

// acceptsGzip reports whether the request's Accept-Encoding names gzip,
// read as upstream reads it: one of its comma-separated tokens is
// "gzip", exactly (so "gzip;q=0.5" is not).
func acceptsGzip(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept-Encoding") {
		for token := range strings.SplitSeq(v, ",") {
			if strings.TrimSpace(token) == "gzip" {
				return true
			}
		}
	}
	return false
}

// compressible reports whether r is answered with an API object that may
// be compressed: a resource request that is not long-running (a watch
// streams events, each written as it comes), or discovery.
func compressible(r *http.Request) bool {
	info, ok := request.InfoFrom(r.Context())
	if !ok || LongRunning(info) {
		return false
	}
	if info.IsResourceRequest {
		return true
	}
	p := r.URL.Path
	return p == "/api" || p == "/apis" || strings.HasPrefix(p, "/api/") || strings.HasPrefix(p, "/apis/")
}

// compressWriter decides whether to compress once it knows the answer is
// over compress.Threshold: at WriteHeader when the handler declared the
// answer's length, else once it has held that many bytes back, or at the
// end. An answer of known length below the threshold passes through
// without being held.
type compressWriter struct {
	w       http.ResponseWriter
	status  int // the handler's status code; 0 until it gives one
	decided bool
	held    *[]byte          // while undecided, from heldBuffers
	gz      *compress.Writer // when compressing
}

// heldBuffers hold answers back until their size is known: a buffer
// grown anew for each would be 256 KB of garbage per large list, which
// made RSS rise by 25 MB during 16 paged lists at once.
var heldBuffers = sync.Pool{New: func() any {
	b := make([]byte, 0, compress.Threshold+32<<10)
	return &b
}}

func (c *compressWriter) Header() http.Header { return c.w.Header() }

func (c *compressWriter) WriteHeader(code int) {
	if c.status != 0 {
		return // as net/http ignores a second call
	}
	c.status = code
	if c.w.Header().Get("Content-Encoding") != "" {
		// The handler compressed the answer itself (compress.Allowed).
		c.decide(false)
		return
	}
	if n, err := strconv.Atoi(c.w.Header().Get("Content-Length")); err == nil {
		c.decide(n > compress.Threshold)
	}
}

func (c *compressWriter) Write(p []byte) (int, error) {
	if c.status == 0 {
		c.WriteHeader(http.StatusOK)
	}
	switch {
	case c.gz != nil:
		return c.gz.Write(p)
	case c.decided:
		return c.w.Write(p)
	}
	if c.held == nil {
		c.held = heldBuffers.Get().(*[]byte)
	}
	*c.held = append(*c.held, p...)
	if len(*c.held) <= compress.Threshold {
		return len(p), nil
	}
	c.decide(true)
	var err error
	if c.gz != nil {
		_, err = c.gz.Write(*c.held)
	} else {
		_, err = c.w.Write(*c.held)
	}
	c.putHeld()
	return len(p), err
}

// decide writes the header, for a compressed answer or a plain one.
func (c *compressWriter) decide(gzipped bool) {
	c.decided = true
	if gzipped {
		c.gz = compress.Take()
	}
	if c.gz != nil {
		h := c.w.Header()
		h.Del("Content-Length")
		h.Set("Content-Encoding", "gzip")
		h.Add("Vary", "Accept-Encoding")
		compress.Reset(c.gz, c.w)
	}
	c.w.WriteHeader(c.status)
}

// close sends what is held, or ends the compressed stream.
func (c *compressWriter) close() {
	switch {
	case c.gz != nil:
		// An error is the client gone: nothing to tell it.
		_ = c.gz.Close()
	case !c.decided && c.status != 0:
		c.decide(false)
		if c.held != nil {
			_, _ = c.w.Write(*c.held)
			c.putHeld()
		}
	}
}

// putHeld gives the held buffer back once written.
func (c *compressWriter) putHeld() {
	if cap(*c.held) <= 2*compress.Threshold { // not one a huge write grew
		*c.held = (*c.held)[:0]
		heldBuffers.Put(c.held)
	}
	c.held = nil
}

// release gives the writer back, after the answer or a panic.
func (c *compressWriter) release() {
	if c.gz != nil {
		compress.Put(c.gz)
		c.gz = nil
	}
}
