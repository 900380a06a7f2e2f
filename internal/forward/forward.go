// Package forward sends a request on to a backend and the backend's
// answer back to the client, as kube-apiserver's proxy subresources do
// (services/proxy): the client's method, headers and body go to the
// path and with the query the caller gives; the backend's redirects and
// the links of its HTML pages are rewritten to lead back through the
// proxy; a backend that cannot be reached is a 503 Status.
package forward

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/crdserver/crdserver/internal/codec"
)

// NewTransport returns the transport to reach backends with, as
// kube-apiserver's proxy transport: HTTP proxies from the environment
// (NO_PROXY may list CIDRs), HTTP/2 where the backend offers it, and no
// verification of a backend's certificate, since backends are reached by
// IP address.
func NewTransport() *http.Transport {
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:               utilnet.NewProxierWithNoProxyCIDR(http.ProxyFromEnvironment),
		DialContext:         dialer.DialContext,
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // as upstream: backends are IP addresses
		TLSHandshakeTimeout: 10 * time.Second,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   true,
		HTTP2:               &http.HTTP2Config{SendPingTimeout: 30 * time.Second, PingTimeout: 15 * time.Second},
	}
}

// Handler forwards requests to Location. Its fields must not change once
// it serves.
type Handler struct {
	// Location is the backend: its scheme ("" is http), host, and the
	// path to forward to, "" for the backend's root named without its
	// slash. The request's query is sent as it came.
	Location *url.URL
	// Transport reaches the backend; nil is http.DefaultTransport.
	Transport http.RoundTripper
}

// flushInterval is how long an answer's bytes may wait to be sent on.
const flushInterval = 200 * time.Millisecond

// ServeHTTP forwards r. A GET or HEAD of the backend's root named
// without its slash is redirected (301) to the request's path with one,
// so that the page's relative links resolve under the proxy path.
// The backend sees the client's Host header, an X-Forwarded-For naming
// the client and an X-Forwarded-Uri naming the path the client asked
// for; its CORS headers are dropped, as the API server's origin is not
// the backend's.
func (h Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	target := *h.Location
	if target.Scheme == "" {
		target.Scheme = "http"
	}
	target.RawQuery = r.URL.RawQuery
	if strings.HasSuffix(r.URL.Path, "/") && !strings.HasSuffix(target.Path, "/") {
		target.Path += "/"
	}
	if target.Path == "" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		to := r.URL.Path + "/"
		if r.URL.RawQuery != "" {
			to += "?" + r.URL.RawQuery
		}
		w.Header().Set("Location", to)
		w.WriteHeader(http.StatusMovedPermanently)
		return
	}
	rw := &rewriter{prefix: proxyPrefix(r.URL.Path, h.Location.Path), backend: target.Host, host: r.Host}
	if !strings.HasPrefix(target.Path, "/") {
		target.Path = "/" + target.Path
	}
	uri := path.Join(rw.prefix, target.EscapedPath())
	if strings.HasSuffix(target.Path, "/") {
		uri += "/"
	}
	next := h.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	rp := &httputil.ReverseProxy{
		// The Host header stays the client's, as upstream's; ReverseProxy
		// sends no User-Agent of Go's own when the client sent none.
		Director: func(out *http.Request) { out.URL = &target },
		// X-Forwarded-Uri is set as the request leaves, after the
		// client's Connection header has had its say: a client naming it
		// there does not take it away.
		Transport: roundTripFunc(func(out *http.Request) (*http.Response, error) {
			out.Header.Set("X-Forwarded-Uri", uri)
			return next.RoundTrip(out)
		}),
		FlushInterval:  flushInterval,
		ModifyResponse: rw.response,
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			if _, ok := err.(apierrors.APIStatus); !ok {
				err = apierrors.NewServiceUnavailable(fmt.Sprintf("error trying to reach service: %v", err))
			}
			codec.WriteStatus(w, r, err)
		},
	}
	rp.ServeHTTP(w, r)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// proxyPrefix is the part of the client's path before the backend's:
// what the backend's own absolute links need in front to come back
// through the proxy. backendPath is the Location's path.
func proxyPrefix(clientPath, backendPath string) string {
	if strings.HasSuffix(clientPath, "/") && !strings.HasSuffix(backendPath, "/") {
		backendPath += "/"
	}
	return strings.TrimSuffix(clientPath, backendPath)
}

// corsHeaders are the backend's CORS headers, which are not sent on.
var corsHeaders = []string{
	"Access-Control-Allow-Credentials",
	"Access-Control-Allow-Headers",
	"Access-Control-Allow-Methods",
	"Access-Control-Allow-Origin",
}

// response rewrites the backend's answer for the client: its redirect,
// or else the links of an HTML page; its CORS headers go. An error is a
// Status the client is answered with instead.
func (rw *rewriter) response(resp *http.Response) error {
	if loc := resp.Header.Get("Location"); loc != "" {
		u, err := url.Parse(loc)
		if err != nil {
			return apierrors.NewInternalError(fmt.Errorf("error trying to parse Location header: %v", err))
		}
		resp.Header.Set("Location", rw.link(u))
	} else if err := rw.page(resp); err != nil {
		return codec.UnknownError(err.Error())
	}
	for _, h := range corsHeaders {
		resp.Header.Del(h)
	}
	return nil
}
