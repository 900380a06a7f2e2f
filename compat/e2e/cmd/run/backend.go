package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// backend is what services/proxy requests reach: an HTTP and an HTTPS
// server on an address of this machine that is not loopback (both API
// servers refuse to proxy to a pod IP that is not one a pod may have),
// which answer with what they were sent. Request bodies name it with
// {{backendIP}}, {{httpPort}}, {{httpsPort}}, and {{closedPort}}, a port
// of that address nothing listens on.
type backend struct {
	http, https *httptest.Server
	vars        *strings.Replacer
}

// startBackend starts the servers on the first non-loopback unicast
// address of the machine's interfaces (IPv4 first); an error when there
// is none.
func startBackend() (*backend, error) {
	ip, err := hostIP()
	if err != nil {
		return nil, err
	}
	b := &backend{}
	for _, tls := range []bool{false, true} {
		ln, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
		if err != nil {
			b.close()
			return nil, err
		}
		srv := httptest.NewUnstartedServer(nil)
		srv.Listener.Close()
		srv.Listener = ln
		srv.Config.Handler = echoHandler(ln.Addr().String())
		if tls {
			srv.EnableHTTP2 = true
			srv.StartTLS()
			b.https = srv
		} else {
			srv.Start()
			b.http = srv
		}
	}
	closed, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	if err != nil {
		b.close()
		return nil, err
	}
	closed.Close()
	b.vars = strings.NewReplacer(
		"{{backendIP}}", ip.String(),
		"{{httpPort}}", portOf(b.http.Listener.Addr()),
		"{{httpsPort}}", portOf(b.https.Listener.Addr()),
		"{{closedPort}}", portOf(closed.Addr()),
	)
	return b, nil
}

func (b *backend) close() {
	for _, s := range []*httptest.Server{b.http, b.https} {
		if s != nil {
			s.Close()
		}
	}
}

func portOf(a net.Addr) string { return strconv.Itoa(a.(*net.TCPAddr).Port) }

// hostIP is the first IPv4, else IPv6, unicast address of the machine's
// interfaces that is neither loopback nor link-local.
func hostIP() (net.IP, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	var v6 net.IP
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok || !n.IP.IsGlobalUnicast() {
			continue
		}
		if n.IP.To4() != nil {
			return n.IP, nil
		}
		if v6 == nil {
			v6 = n.IP
		}
	}
	if v6 != nil {
		return v6, nil
	}
	return nil, errors.New("this machine has no non-loopback unicast address for the services/proxy backend")
}

// serverPort matches the port of a host:port, alone or in a URL: the two
// API servers listen on different ones, and the backend sees them in the
// Host header, and in the Referer a client that follows a redirect sends.
var serverPort = regexp.MustCompile(`^([^/]*//)?([^/:]+):[0-9]+`)

// echoHandler answers with the request's method, protocol, URI, headers
// (sorted) and body, as text. A few paths answer otherwise, to show what
// the proxy makes of it: /redirect and /redirect-self redirect (to a path,
// and to self, the backend's host:port, by URL), /html is a page of links,
// /teapot a 418.
func echoHandler(self string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/redirect":
			http.Redirect(w, r, "/landed?from=redirect", http.StatusFound)
			return
		case "/redirect-self":
			http.Redirect(w, r, "http://"+self+"/landed/?from=self", http.StatusFound)
			return
		case "/html":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprintf(w, `<html><head><link rel=stylesheet href="/style.css"></head>
<body background=/bg.png><a href="/abs/">abs</a> <a href="rel">rel</a> <a href='http://%s/self?a=1&amp;b=2'>self</a>
<a href="http://example.com/elsewhere">elsewhere</a> <img src=/img.png alt="x > y"><form action="/post"></form>
<script src="/app.js"></script><!-- <a href="/comment"> --></body></html>`, self)
			return
		case "/teapot":
			w.WriteHeader(http.StatusTeapot)
		}
		body, _ := io.ReadAll(r.Body)
		var b strings.Builder
		fmt.Fprintf(&b, "%s %s %s\nHost: %s\n", r.Method, r.RequestURI, r.Proto, serverPort.ReplaceAllString(r.Host, "$1$2:-"))
		names := make([]string, 0, len(r.Header))
		for k := range r.Header {
			names = append(names, k)
		}
		slices.Sort(names)
		for _, k := range names {
			v := strings.Join(r.Header[k], ", ")
			if k == "Referer" {
				v = serverPort.ReplaceAllString(v, "$1$2:-")
			}
			fmt.Fprintf(&b, "%s: %s\n", k, v)
		}
		fmt.Fprintf(&b, "\n%s\n", body)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, b.String())
	})
}
