// Package filters is the HTTP middleware every request passes before it is
// routed: recover, request info, authentication, authorization, limits.
// Each filter is a func(http.Handler) http.Handler; Chain applies them in
// request order.
package filters

import (
	"errors"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/audit"
	"github.com/crdserver/crdserver/internal/authn"
	"github.com/crdserver/crdserver/internal/authz"
	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/request"
)

// Filter wraps a handler with one step of request processing.
type Filter func(http.Handler) http.Handler

// Chain returns h behind filters, in request order: filters[0] sees the
// request first, then filters[1], ..., then h. (Upstream builds its chain
// inside out; here the list reads as the request travels.)
func Chain(h http.Handler, filters ...Filter) http.Handler {
	for i := len(filters) - 1; i >= 0; i-- {
		h = filters[i](h)
	}
	return h
}

// errPanic is what a client reads when its request panicked; upstream says
// the same in plain text.
var errPanic = errors.New("This request caused apiserver to panic. Look in the logs for details.")

// Recover turns a panic in a later handler into a 500 Status and logs it with
// its stack. http.ErrAbortHandler is re-raised: it is how a handler asks
// net/http to drop the connection. When the panicking handler had already
// written its header the Status cannot replace it; the client then sees a
// truncated body.
func Recover(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			p := recover()
			if p == nil {
				return
			}
			if p == http.ErrAbortHandler {
				panic(p)
			}
			slog.Error("panic serving request", "method", r.Method, "path", r.URL.Path, "panic", p, "stack", string(debug.Stack()))
			codec.WriteStatus(w, r, apierrors.NewInternalError(errPanic))
		}()
		next.ServeHTTP(w, r)
	})
}

// RequestInfo parses the request's coordinates (request.Parse) into its
// context. A path that names a verb but no resource (/api/v1/watch) is a
// 404: it addresses nothing. (Upstream answers such paths with a plain-text
// 500.)
func RequestInfo(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, err := request.Parse(r.Method, r.URL.Path, r.URL.Query())
		if err != nil {
			codec.WriteStatus(w, r, codec.NotFound())
			return
		}
		next.ServeHTTP(w, r.WithContext(request.WithInfo(r.Context(), info)))
	})
}

// publicPaths may be read without credentials, with their sub-paths
// (/readyz/etcd).
var publicPaths = []string{"/healthz", "/livez", "/readyz", "/version"}

// PublicPath reports whether path may be read without credentials: the
// health endpoints and /version, as upstream's system:public-info-viewer
// role allows.
func PublicPath(path string) bool {
	for _, p := range publicPaths {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

// Authenticate identifies the caller with a and stores the user in the
// context. A request nobody identifies is a 401 "Unauthorized" Status unless
// public(path) (nil means PublicPath); it then proceeds as system:anonymous
// in group system:unauthenticated, and authorization decides. The
// Authorization header is removed once used so it reaches no later handler.
func Authenticate(a authn.Authenticator, public func(path string) bool) Filter {
	return AuthenticateOr(a, public, Unauthorized)
}

// Unauthorized is upstream's answer to a request nobody identifies.
var Unauthorized http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	codec.WriteStatus(w, r, apierrors.NewUnauthorized("Unauthorized"))
})

// AuthenticateOr is Authenticate with another answer to a request nobody
// identifies: unauthorized wrapped in FailedAuthenticationAudit.
func AuthenticateOr(a authn.Authenticator, public func(path string) bool, failed http.Handler) Filter {
	if public == nil {
		public = PublicPath
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			u, ok, err := a.Authenticate(r)
			if err != nil {
				slog.Debug("authentication failed", "path", r.URL.Path, "err", err)
			}
			if !ok {
				if !public(r.URL.Path) {
					failed.ServeHTTP(w, r)
					return
				}
				u = &authn.User{Name: authn.Anonymous, Groups: []string{authn.Unauthenticated}}
			}
			r.Header.Del("Authorization")
			next.ServeHTTP(w, r.WithContext(authn.WithUser(r.Context(), u)))
		})
	}
}

// sanitizer escapes what the forbidden message repeats from the request, as
// upstream does, so the message is safe to show in HTML.
var sanitizer = strings.NewReplacer(`&`, "&amp;", `<`, "&lt;", `>`, "&gt;")

// Authorize asks z whether the request's user may do what its request info
// says. Anything but Allow is a 403 Forbidden Status with upstream's
// message; an authorizer error without Allow is a 500. It needs RequestInfo
// and Authenticate before it.
func Authorize(z authz.Authorizer) Filter {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			info, ok := request.InfoFrom(r.Context())
			if !ok {
				codec.WriteStatus(w, r, errors.New("authorize: no request info in context"))
				return
			}
			u, _ := authn.UserFrom(r.Context())
			attrs := authz.AttributesFrom(u, info)
			d, reason, err := z.Authorize(r.Context(), attrs)
			if reason != "" {
				// Upstream's audit annotation of why (RBAC names its
				// reasons for denials; allows carry none here).
				audit.AddAnnotation(r.Context(), "authorization.k8s.io/reason", reason)
			}
			if d == authz.Allow {
				next.ServeHTTP(w, r)
				return
			}
			if err != nil {
				codec.WriteStatus(w, r, err)
				return
			}
			w.Header().Set("X-Content-Type-Options", "nosniff")
			codec.WriteStatus(w, r, Forbidden(attrs, reason))
		})
	}
}

// Forbidden is upstream's 403 for attrs, e.g.
//
//	namespaces "foo" is forbidden: User "bob" cannot get resource "namespaces" in API group "" in the namespace "foo"
//
// with ": <reason>" appended when the authorizer gave one.
func Forbidden(attrs authz.Attributes, reason string) error {
	msg := sanitizer.Replace(forbiddenMessage(attrs))
	if reason != "" {
		msg += ": " + reason
	}
	gr := schema.GroupResource{Group: attrs.APIGroup, Resource: attrs.Resource}
	return apierrors.NewForbidden(gr, attrs.Name, errors.New(msg))
}

func forbiddenMessage(a authz.Attributes) string {
	name := ""
	if a.User != nil {
		name = a.User.Name
	}
	if !a.ResourceRequest {
		return "User " + quote(name) + " cannot " + a.Verb + " path " + quote(a.Path)
	}
	resource := a.Resource
	if a.Subresource != "" {
		resource += "/" + a.Subresource
	}
	msg := "User " + quote(name) + " cannot " + a.Verb + " resource " + quote(resource) + " in API group " + quote(a.APIGroup)
	if a.Namespace != "" {
		return msg + " in the namespace " + quote(a.Namespace)
	}
	return msg + " at the cluster scope"
}

func quote(s string) string { return strconv.Quote(s) }
