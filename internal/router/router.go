// Package router sends each request to what serves it: the fixed endpoints
// (health, version, OpenAPI, discovery, the component pages) or the
// generic resource handler.
// Resource paths are not mux patterns: request.Parse has already read them,
// and CRD routes change at run time.
package router

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/request"
)

// Config names the handlers of each kind of path.
type Config struct {
	Health    http.Handler // /healthz, /livez, /readyz and their sub-paths
	Version   http.Handler // /version
	OpenAPI   http.Handler // /openapi/v2, /openapi/v3...
	Discovery http.Handler // /api, /api/v1, /apis, /apis/<g>, /apis/<g>/<v>
	Resources http.Handler // every resource request
	Profiling http.Handler // /debug/pprof/...; nil when disabled
	Metrics   http.Handler // /metrics; nil when not served
	SLIs      http.Handler // /metrics/slis; nil when not served
	// Issuer serves the service account issuer's OpenID discovery
	// (/.well-known/openid-configuration, /openid/v1/jwks); nil when not
	// served.
	Issuer http.Handler
	// Statusz and Flagz serve the component pages, /statusz and /flagz,
	// at those paths alone; nil when not served.
	Statusz http.Handler
	Flagz   http.Handler
	// Paths lists the root paths served beside the router's own (health
	// checks, discovery documents), called on each request of the index;
	// nil lists the router's own alone.
	Paths func() []string
}

// New returns the router.
func New(c Config) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if info, ok := request.InfoFrom(r.Context()); ok && info.IsResourceRequest {
			c.Resources.ServeHTTP(w, r)
			return
		}
		p := r.URL.Path
		switch {
		case isUnder(p, "/healthz"), isUnder(p, "/livez"), isUnder(p, "/readyz"):
			c.Health.ServeHTTP(w, r)
		case p == "/version" || p == "/version/":
			// Upstream's REST router takes GET alone there, and JSON.
			if r.Method != http.MethodGet {
				codec.WriteStatus(w, r, codec.MethodNotAllowed())
				return
			}
			if err := codec.RouteAccepts(r.Header.Get("Accept"), versionTypes); err != nil {
				codec.WriteStatus(w, r, err)
				return
			}
			c.Version.ServeHTTP(w, r)
		case isUnder(p, "/version"):
			// Upstream's REST router serves /version and answers below it.
			codec.WriteStatus(w, r, codec.NotFound())
		case isUnder(p, "/openapi"):
			c.OpenAPI.ServeHTTP(w, r)
		case c.Metrics != nil && p == "/metrics":
			c.Metrics.ServeHTTP(w, r)
		case c.SLIs != nil && p == "/metrics/slis":
			c.SLIs.ServeHTTP(w, r)
		case c.Profiling != nil && isUnder(p, "/debug/pprof"):
			c.Profiling.ServeHTTP(w, r)
		case c.Issuer != nil && (p == "/.well-known/openid-configuration" || p == "/openid/v1/jwks"):
			c.Issuer.ServeHTTP(w, r)
		case c.Statusz != nil && p == "/statusz":
			c.Statusz.ServeHTTP(w, r)
		case c.Flagz != nil && p == "/flagz":
			c.Flagz.ServeHTTP(w, r)
		case isDiscovery(p):
			c.Discovery.ServeHTTP(w, r)
		case p == "/" || p == "/index.html":
			serveIndex(w, c.ListedPaths())
		default:
			// Upstream's handler chain ends in a plain-text 404.
			http.NotFound(w, r)
		}
	})
}

var versionTypes = []string{codec.MediaJSON}

// ListedPaths are the paths the index lists: those served at the root,
// sorted, each once.
func (c Config) ListedPaths() []string {
	paths := []string{"/openapi/v2", "/openapi/v3", "/openapi/v3/", "/version"}
	for _, h := range []struct {
		handler http.Handler
		paths   []string
	}{
		{c.Metrics, []string{"/metrics"}},
		{c.SLIs, []string{"/metrics/slis"}},
		{c.Issuer, []string{"/.well-known/openid-configuration", "/openid/v1/jwks"}},
		{c.Statusz, []string{"/statusz"}},
		{c.Flagz, []string{"/flagz"}},
	} {
		if h.handler != nil {
			paths = append(paths, h.paths...)
		}
	}
	if c.Paths != nil {
		paths = append(paths, c.Paths()...)
	}
	slices.Sort(paths)
	return slices.Compact(paths)
}

// serveIndex answers / as upstream's index does, whatever the method and
// Accept header: the paths listed, as indented JSON.
func serveIndex(w http.ResponseWriter, paths []string) {
	body, err := json.MarshalIndent(metav1.RootPaths{Paths: paths}, "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(body)
}

func isUnder(p, root string) bool {
	return p == root || strings.HasPrefix(p, root+"/")
}

// isDiscovery matches /api, /api/v1, /apis, /apis/<g>, /apis/<g>/<v>.
func isDiscovery(p string) bool {
	parts := strings.Split(strings.Trim(p, "/"), "/")
	switch parts[0] {
	case "api":
		return len(parts) <= 2
	case "apis":
		return len(parts) <= 3
	}
	return false
}
