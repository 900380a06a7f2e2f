package filters

import (
	"io"
	"net/http"

	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/request"
)

// LongRunning reports whether a request may hold its connection open
// indefinitely (watches, log follows, exec, proxy), which the fair queues
// and the request timeout leave alone, as upstream's basic long-running check.
func LongRunning(info *request.Info) bool {
	switch info.Verb {
	case "watch", "proxy":
		return true
	}
	if info.IsResourceRequest {
		switch info.Subresource {
		case "attach", "exec", "proxy", "log", "portforward":
			return true
		}
	}
	return false
}

// Connects reports whether a request is to a connect subresource (a
// proxy, exec, attach or port-forward): its body, if any, is not an
// object but the backend's bytes, and upstream's handler reads none of
// it; admission and audit record the subresource's options instead.
func Connects(info *request.Info) bool {
	if !info.IsResourceRequest {
		return false
	}
	switch info.Subresource {
	case "attach", "exec", "proxy", "portforward":
		return true
	}
	return false
}

// MaxBodySize refuses request bodies over limit bytes (<= 0: the 3 MiB
// default): a declared Content-Length over it is a 413 at once; otherwise
// the body is wrapped so that reading past the limit fails with the same 413
// Status error (apierrors.IsRequestEntityTooLargeError), which
// codec.WriteStatus answers as is. The body of a request to a proxy
// subresource is not bounded: it is the backend's, which upstream sends
// on whatever its size. It needs RequestInfo before it.
func MaxBodySize(limit int64) Filter {
	if limit <= 0 {
		limit = codec.DefaultMaxBodyBytes
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if info, ok := request.InfoFrom(r.Context()); ok && info.IsResourceRequest && info.Subresource == "proxy" {
				next.ServeHTTP(w, r)
				return
			}
			if r.ContentLength > limit {
				codec.WriteStatus(w, r, codec.TooLarge(limit))
				return
			}
			if r.Body != nil && r.Body != http.NoBody {
				r.Body = &limitedBody{rc: r.Body, limit: limit, remaining: limit}
			}
			next.ServeHTTP(w, r)
		})
	}
}

// limitedBody reads at most limit bytes of a body and fails on the byte
// after.
type limitedBody struct {
	rc        io.ReadCloser
	limit     int64
	remaining int64
	err       error
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	// Read one byte past what is allowed so that a body of exactly limit
	// bytes passes and a longer one is noticed.
	if int64(len(p)) > b.remaining+1 {
		p = p[:b.remaining+1]
	}
	n, err := b.rc.Read(p)
	if int64(n) > b.remaining {
		n = int(b.remaining)
		b.remaining = 0
		b.err = codec.TooLarge(b.limit)
		return n, b.err
	}
	b.remaining -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }
