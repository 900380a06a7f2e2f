package filters

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/crdserver/crdserver/internal/audit"
	"github.com/crdserver/crdserver/internal/metrics"
	"github.com/crdserver/crdserver/internal/request"
)

// statusWriter remembers the status a handler sent. It keeps Flush (watches
// need it) and Unwrap (for http.ResponseController).
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// status is what the client got: 200 when the handler wrote nothing.
func (w *statusWriter) status() int {
	if w.code == 0 {
		return http.StatusOK
	}
	return w.code
}

var _ http.Flusher = (*statusWriter)(nil)

// Instrument counts every resource request in m, as upstream's
// apiserver_request_total and apiserver_request_duration_seconds, and keeps
// the watches open in apiserver_longrunning_requests. known(info) says
// whether the request names a served resource (and subresource); requests
// for anything else are counted without those labels, so that made-up
// paths cannot grow the series without bound. Placed after Authorize, as
// upstream counts the requests its handlers serve, not those refused before
// (401, 403); 429s of FairQueue are counted, as upstream's
// RecordDroppedRequest does. Non-resource requests are not counted. A nil
// m counts nothing.
func Instrument(m *metrics.Metrics, known func(*request.Info) bool) Filter {
	return func(next http.Handler) http.Handler {
		if m == nil {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			info, ok := request.InfoFrom(r.Context())
			if !ok || !info.IsResourceRequest {
				next.ServeHTTP(w, r)
				return
			}
			start := time.Now()
			labels := metrics.RequestOf(r, info, known(info))
			sw := &statusWriter{ResponseWriter: w}
			if labels.Verb == "WATCH" {
				g := m.LongRunning(labels)
				g.Inc()
				defer g.Dec()
			}
			next.ServeHTTP(sw, r)
			m.ObserveRequest(labels, sw.status(), time.Since(start))
		})
	}
}

// requestLogLevel is the level of the per-request log line: V(2), as
// slog levels count down from Info by verbosity (slog.Level(-v), as logr's
// slog bridge maps them). Upstream's httplog logs at V(3); crdserver's
// -v=2 is documented to show requests, a level below the rest of its
// debug output at V(4).
const requestLogLevel = slog.Level(-2)

// Log writes one line per request to log, with upstream httplog's keys:
// verb, URI, latency, userAgent, audit-ID, srcIP and resp. It does so
// only when log is enabled at V(2) (-v=2); otherwise it adds nothing to
// the request. It needs RequestInfo before it, and sits before
// Authenticate so that refused requests are logged too.
func Log(log *slog.Logger) Filter {
	return func(next http.Handler) http.Handler {
		if !log.Enabled(context.Background(), requestLogLevel) {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			userAgent := r.UserAgent()
			sw := &statusWriter{ResponseWriter: w}
			next.ServeHTTP(sw, r)
			verb := r.Method
			if info, ok := request.InfoFrom(r.Context()); ok && info.IsResourceRequest {
				verb = metrics.RequestOf(r, info, false).Verb
			}
			log.LogAttrs(r.Context(), requestLogLevel, "HTTP",
				slog.String("verb", verb),
				slog.String("URI", r.RequestURI),
				slog.Duration("latency", time.Since(start)),
				slog.String("userAgent", userAgent),
				slog.String("audit-ID", audit.IDFrom(r.Context())),
				slog.String("srcIP", r.RemoteAddr),
				slog.Int("resp", sw.status()))
		})
	}
}
