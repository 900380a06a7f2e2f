package filters

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/request"
)

// DefaultRequestTimeout is upstream's --request-timeout.
const DefaultRequestTimeout = time.Minute

// timedOut is upstream's message for a request cut off by the timeout; the
// Status reads "Timeout: request did not complete within the allotted
// timeout".
const timedOut = "request did not complete within the allotted timeout"

// invalidTimeout is upstream's message for a bad ?timeout= parameter.
const invalidTimeout = "invalid timeout specified in the request URL"

// Timeout bounds every non-long-running request (LongRunning) to d, or to
// its ?timeout= parameter when that is shorter, as upstream's
// --request-timeout: the handler's context ends at the deadline, and if the
// handler has not started its answer by then the client gets a 504 Timeout
// Status ("Timeout: request did not complete within the allotted
// timeout"). A handler that had started answering is cut off: its
// connection (HTTP/1) or stream (HTTP/2) is reset, since the rest of the
// answer will not come. A ?timeout= that does not parse is a 400. d <= 0:
// no timeout. It needs RequestInfo before it.
//
// The handler runs on a goroutine of its own so that the 504 leaves on
// time even when the handler ignores its context; whatever it writes after
// the deadline is dropped, and it is logged if it panics then.
func Timeout(d time.Duration) Filter {
	return func(next http.Handler) http.Handler {
		if d <= 0 {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if info, ok := request.InfoFrom(r.Context()); !ok || LongRunning(info) {
				next.ServeHTTP(w, r)
				return
			}
			timeout := d
			if v := r.URL.Query().Get("timeout"); v != "" {
				t, err := time.ParseDuration(v)
				if err != nil {
					codec.WriteStatus(w, r, apierrors.NewBadRequest(fmt.Sprintf("%s - %v", invalidTimeout, err)))
					return
				}
				if t > 0 && t < timeout {
					timeout = t
				}
			}
			ctx, cancel := context.WithTimeout(r.Context(), timeout)
			defer cancel()
			// The 504 is negotiated from what the request asked for now:
			// the handler goes on with r (later filters change its
			// headers) while the 504 is written.
			accept := r.Header.Values("Accept")
			method, url := r.Method, r.URL
			r = r.WithContext(ctx)

			tw := &timeoutWriter{w: w, header: w.Header().Clone(), ctx: ctx}
			done := make(chan any, 1)
			go func() {
				defer func() {
					p := recover()
					if p != nil && p != http.ErrAbortHandler {
						p = fmt.Sprintf("%v\n%s", p, debug.Stack())
					}
					done <- p
				}()
				growStack(0) // a new goroutine: see GrowStack
				next.ServeHTTP(tw, r)
			}()
			var p any
			finished := false
			select {
			case p = <-done:
				finished = true
			case <-ctx.Done():
				select {
				case p = <-done: // finished as the deadline came
					finished = true
				default:
				}
			}
			if finished && ctx.Err() == nil {
				if p != nil {
					panic(p) // for Recover, on the request's goroutine
				}
				return
			}
			if p != nil {
				logLatePanic(r, p)
			}
			// The deadline has passed (or the client has gone).
			if !tw.timeout() {
				if finished {
					return // its answer is complete
				}
				// Half an answer is worse than none: reset it.
				panic(http.ErrAbortHandler)
			}
			codec.WriteStatus(w, &http.Request{Method: method, URL: url, Header: http.Header{"Accept": accept}},
				apierrors.NewTimeoutError(timedOut, 0))
			if !finished {
				go func() {
					if p := <-done; p != nil {
						logLatePanic(r, p)
					}
				}()
			}
		})
	}
}

// logLatePanic logs a panic of a handler that ran past its deadline: its
// client has had a 504, and the request's goroutine is gone.
func logLatePanic(r *http.Request, p any) {
	if p != http.ErrAbortHandler {
		slog.Error("panic serving request after its timeout", "method", r.Method, "path", r.URL.Path, "panic", p)
	}
}

// timeoutWriter is the handler's ResponseWriter under Timeout. The handler
// sets headers on a copy of its own, copied out when it starts its answer,
// so that the 504 written from the request's goroutine never races with
// it. Once the deadline has passed, everything the handler writes is
// dropped: a handler that notices its context ended and answers with an
// error must not beat the 504 to the client.
type timeoutWriter struct {
	w      http.ResponseWriter
	header http.Header     // the handler's; only the handler touches it
	ctx    context.Context // the handler's: past its end, writes are dropped

	mu       sync.Mutex // guards the fields below, and writes to w
	started  bool       // the handler has written its header
	timedOut bool
}

func (tw *timeoutWriter) Header() http.Header { return tw.header }

func (tw *timeoutWriter) WriteHeader(code int) {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.timedOut || tw.started {
		return
	}
	tw.startLocked(code)
}

// startLocked starts the answer with code, unless the deadline has passed:
// it then reports false and the writer is timed out.
func (tw *timeoutWriter) startLocked(code int) bool {
	if tw.ctx.Err() != nil {
		tw.timedOut = true
		return false
	}
	dst := tw.w.Header()
	for k, v := range tw.header {
		dst[k] = v
	}
	tw.started = true
	tw.w.WriteHeader(code)
	return true
}

func (tw *timeoutWriter) Write(b []byte) (int, error) {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.timedOut {
		return 0, http.ErrHandlerTimeout
	}
	if !tw.started && !tw.startLocked(http.StatusOK) {
		return 0, http.ErrHandlerTimeout
	}
	return tw.w.Write(b)
}

// Flush sends what the handler wrote so far (streamed lists use it).
func (tw *timeoutWriter) Flush() {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.timedOut {
		return
	}
	if !tw.started && !tw.startLocked(http.StatusOK) {
		return
	}
	if f, ok := tw.w.(http.Flusher); ok {
		f.Flush()
	}
}

// timeout marks the writer timed out and reports whether the handler had
// not yet started its answer, so that the 504 may be written.
func (tw *timeoutWriter) timeout() bool {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	tw.timedOut = true
	return !tw.started
}

var _ http.Flusher = (*timeoutWriter)(nil)
