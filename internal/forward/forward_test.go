package forward

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// line names a case by the line it is written on.
func line() string {
	_, _, l, _ := runtime.Caller(1)
	return "line " + strconv.Itoa(l)
}

// seen is what the echo backend was sent.
type seen struct {
	Method, URI, Host, Proto string
	Header                   http.Header
	Body                     string
}

// echo answers with what it was sent, as JSON.
func echo(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(seen{r.Method, r.RequestURI, r.Host, r.Proto, r.Header, string(body)})
}

// front serves Handler at location's host and loc's path, for every
// request, as the API server does once it resolved the backend.
func front(t *testing.T, scheme, host, loc string) *httptest.Server {
	t.Helper()
	tr := NewTransport()
	t.Cleanup(tr.CloseIdleConnections)
	srv := httptest.NewServer(Handler{Location: &url.URL{Scheme: scheme, Host: host, Path: loc}, Transport: tr})
	t.Cleanup(srv.Close)
	return srv
}

// noRedirects is a client that reports redirects rather than follow them.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func TestForward(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(echo))
	defer backend.Close()
	const prefix = "/api/v1/namespaces/ns/services/web:80/proxy"
	cases := []struct {
		name, method, path, loc string
		// uri is the request's URI at the backend; forwarded its
		// X-Forwarded-Uri.
		uri, forwarded string
	}{
		{line(), "GET", prefix + "/a/b?q=1&q=2", "/a/b", "/a/b?q=1&q=2", prefix + "/a/b"},
		{line(), "GET", prefix + "/a/b/", "/a/b/", "/a/b/", prefix + "/a/b/"},
		{line(), "GET", prefix + "/", "/", "/", prefix + "/"},
		// A trailing slash the location lost is put back.
		{line(), "GET", prefix + "/a/", "/a", "/a/", prefix + "/a/"},
		// The location is what the handler made of the path: a cleaned
		// one may no longer end the client's path, and the forwarded URI
		// then repeats it (as upstream's).
		{line(), "GET", prefix + "/a/../b", "/b", "/b", prefix + "/b"},
		{line(), "GET", prefix + "/a/../b/./c", "/b/c", "/b/c", prefix + "/b/c/b/c"},
		{line(), "GET", prefix + "/a%20b?x=%2F&y", "/a b", "/a%20b?x=%2F&y", prefix + "/a%20b"},
		// Every method; one without a path goes to the root.
		{line(), "POST", prefix + "/p", "/p", "/p", prefix + "/p"},
		{line(), "PUT", prefix + "/p", "/p", "/p", prefix + "/p"},
		{line(), "PATCH", prefix + "/p", "/p", "/p", prefix + "/p"},
		{line(), "DELETE", prefix + "/p", "/p", "/p", prefix + "/p"},
		{line(), "OPTIONS", prefix + "/p", "/p", "/p", prefix + "/p"},
		{line(), "POST", prefix + "?q=1", "", "/?q=1", prefix + "/"},
		{line(), "DELETE", prefix, "", "/", prefix + "/"},
	}
	for _, tc := range cases {
		srv := front(t, "", backend.Listener.Addr().String(), tc.loc)
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader("the body"))
		req.Header.Set("X-Custom", "kept")
		// X-Forwarded-Uri is the proxy's to set: naming it here does
		// not take it away.
		req.Header.Set("Connection", "close, X-Hop, X-Forwarded-Uri")
		req.Header.Set("X-Hop", "dropped")
		resp, err := noRedirects.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var got seen
		err = json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %d, %v", tc.name, resp.StatusCode, err)
			continue
		}
		fwd := got.Header.Get("X-Forwarded-Uri")
		if got.Method != tc.method || got.URI != tc.uri || fwd != tc.forwarded {
			t.Errorf("%s: backend saw %s %s (X-Forwarded-Uri %s), want %s %s (%s)", tc.name, got.Method, got.URI, fwd, tc.method, tc.uri, tc.forwarded)
		}
		if got.Host != srv.Listener.Addr().String() {
			t.Errorf("%s: Host %s, want the client's %s", tc.name, got.Host, srv.Listener.Addr())
		}
		if got.Header.Get("X-Custom") != "kept" || got.Header.Get("X-Hop") != "" || got.Header.Get("X-Forwarded-For") != "127.0.0.1" {
			t.Errorf("%s: headers %v", tc.name, got.Header)
		}
		if want := "the body"; tc.method != "GET" && got.Body != want {
			t.Errorf("%s: body %q, want %q", tc.name, got.Body, want)
		}
	}
}

func TestRootRedirects(t *testing.T) {
	var called atomic.Bool
	backend := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called.Store(true) }))
	defer backend.Close()
	srv := front(t, "http", backend.Listener.Addr().String(), "")
	for _, tc := range []struct{ method, path, want string }{
		{"GET", "/x/proxy", "/x/proxy/"},
		{"GET", "/x/proxy?a=1&b", "/x/proxy/?a=1&b"},
		{"HEAD", "/x/proxy", "/x/proxy/"},
	} {
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, nil)
		resp, err := noRedirects.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != tc.want {
			t.Errorf("%s %s: %d to %q, want 301 to %q", tc.method, tc.path, resp.StatusCode, resp.Header.Get("Location"), tc.want)
		}
	}
	if called.Load() {
		t.Error("a redirected request reached the backend")
	}
}

// statusOf reads a Status answer as "code reason message".
func statusOf(t *testing.T, resp *http.Response) string {
	t.Helper()
	var st struct {
		Kind, Reason, Message string
		Code                  int
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || st.Kind != "Status" {
		t.Fatalf("answer is no Status: %v", err)
	}
	if st.Code != resp.StatusCode {
		t.Errorf("Status code %d, answered with %d", st.Code, resp.StatusCode)
	}
	return fmt.Sprintf("%d %s %s", st.Code, st.Reason, st.Message)
}

func TestUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	srv := front(t, "", addr, "/x")
	resp, err := http.Get(srv.URL + "/proxy/x")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// The port was just let go: something else may take it on a busy
	// machine, so only the answer's form is asked for.
	want := "503 ServiceUnavailable error trying to reach service: "
	if got := statusOf(t, resp); !strings.HasPrefix(got, want) {
		t.Errorf("got %s, want %s...", got, want)
	}
}

func TestHTTPSBackend(t *testing.T) {
	backend := httptest.NewUnstartedServer(http.HandlerFunc(echo))
	backend.EnableHTTP2 = true
	backend.StartTLS() // a certificate nobody trusts
	defer backend.Close()
	srv := front(t, "https", backend.Listener.Addr().String(), "/secure")
	resp, err := http.Get(srv.URL + "/proxy/secure")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got seen
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got.URI != "/secure" || got.Proto != "HTTP/2.0" {
		t.Errorf("backend saw %s over %s, want /secure over HTTP/2.0", got.URI, got.Proto)
	}

	// Plain HTTP to it is its own answer; TLS to a plain backend is not
	// reaching it.
	plain := front(t, "http", backend.Listener.Addr().String(), "/secure")
	resp2, err := http.Get(plain.URL + "/proxy/secure")
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode != http.StatusBadRequest {
		t.Errorf("HTTP to an HTTPS backend: %d, want its 400", resp2.StatusCode)
	}
	echoBackend := httptest.NewServer(http.HandlerFunc(echo))
	defer echoBackend.Close()
	tlsToPlain := front(t, "https", echoBackend.Listener.Addr().String(), "/x")
	resp3, err := http.Get(tlsToPlain.URL + "/proxy/x")
	if err != nil {
		t.Fatal(err)
	}
	defer resp3.Body.Close()
	if got, want := statusOf(t, resp3), "503 ServiceUnavailable error trying to reach service: tls: "; !strings.HasPrefix(got, want) {
		t.Errorf("got %s, want %s...", got, want)
	}
}

func TestAnswerRewritten(t *testing.T) {
	var backendHost string
	const page = `<html><body><a href="/abs">a</a><a href="rel">r</a><img src=/i.png alt="x > y"><!-- <a href="/c"> --></body></html>`
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Header().Set("Access-Control-Allow-Methods", "GET")
		w.Header().Set("X-Other", "kept")
		switch r.URL.Path {
		case "/redirect":
			w.Header().Set("Location", "/landed?x=1")
			w.WriteHeader(http.StatusFound)
		case "/redirect-self":
			w.Header().Set("Location", "http://"+backendHost+"/landed/")
			w.WriteHeader(http.StatusSeeOther)
		case "/redirect-bad":
			w.Header().Set("Location", "http://[::1")
			w.WriteHeader(http.StatusFound)
		case "/page":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			io.WriteString(w, page)
		case "/page-gzip":
			w.Header().Set("Content-Type", "text/html")
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			io.WriteString(zw, page)
			zw.Close()
		case "/page-bad-gzip":
			w.Header().Set("Content-Type", "text/html")
			w.Header().Set("Content-Encoding", "gzip")
			io.WriteString(w, "not gzip")
		case "/page-br":
			w.Header().Set("Content-Type", "text/html")
			w.Header().Set("Content-Encoding", "br")
			io.WriteString(w, page)
		case "/text":
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, page)
		}
	}))
	defer backend.Close()
	backendHost = backend.Listener.Addr().String()
	const prefix = "/api/v1/namespaces/ns/services/web/proxy"
	rewritten := `<html><body><a href="` + prefix + `/abs">a</a><a href="rel">r</a><img src="` + prefix + `/i.png" alt="x &gt; y"><!-- <a href="/c"> --></body></html>`
	cases := []struct {
		name, path string
		code       int
		location   string // the answer's
		body       string // the answer's, ungzipped; "" is not checked
	}{
		{line(), "/redirect", http.StatusFound, prefix + "/landed?x=1", ""},
		{line(), "/redirect-self", http.StatusSeeOther, prefix + "/landed/", ""},
		{line(), "/redirect-bad", http.StatusInternalServerError, "", `Internal error occurred: error trying to parse Location header: parse "http://[::1": missing ']' in host`},
		{line(), "/page", http.StatusOK, "", rewritten},
		{line(), "/page-gzip", http.StatusOK, "", rewritten},
		{line(), "/page-bad-gzip", http.StatusInternalServerError, "", "errorf making gzip reader: unexpected EOF"},
		{line(), "/page-br", http.StatusOK, "", page},
		{line(), "/text", http.StatusOK, "", page},
	}
	for _, tc := range cases {
		srv := front(t, "", backendHost, tc.path)
		req, _ := http.NewRequest("GET", srv.URL+prefix+tc.path, nil)
		req.Header.Set("Accept-Encoding", "gzip") // the answer is read as sent
		resp, err := noRedirects.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body := string(raw)
		if resp.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(bytes.NewReader(raw))
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			b, _ := io.ReadAll(zr)
			body = string(b)
		}
		if resp.StatusCode != tc.code || resp.Header.Get("Location") != tc.location {
			t.Errorf("%s: %d to %q, want %d to %q", tc.name, resp.StatusCode, resp.Header.Get("Location"), tc.code, tc.location)
		}
		if resp.StatusCode == http.StatusInternalServerError {
			var st struct{ Message, Reason string }
			_ = json.Unmarshal(raw, &st)
			body = st.Message
		}
		if tc.body != "" && body != tc.body {
			t.Errorf("%s: body\n%s\nwant\n%s", tc.name, body, tc.body)
		}
		if resp.StatusCode < 500 && (resp.Header.Get("Access-Control-Allow-Origin") != "" || resp.Header.Get("Access-Control-Allow-Methods") != "" || resp.Header.Get("X-Other") != "kept") {
			t.Errorf("%s: headers %v: want the CORS ones dropped, others kept", tc.name, resp.Header)
		}
	}
}

func TestLink(t *testing.T) {
	rw := &rewriter{prefix: "/api/v1/namespaces/ns/services/web/proxy", backend: "10.0.0.1:8080", host: "api.example:6443"}
	for _, tc := range []struct{ name, link, want string }{
		{line(), "/a/b?q=1#f", "/api/v1/namespaces/ns/services/web/proxy/a/b?q=1#f"},
		{line(), "/a/", "/api/v1/namespaces/ns/services/web/proxy/a/"},
		{line(), "/", "/api/v1/namespaces/ns/services/web/proxy/"},
		// Already through the proxy.
		{line(), "/api/v1/namespaces/ns/services/web/proxy/a", "/api/v1/namespaces/ns/services/web/proxy/a"},
		// Relative links, and links elsewhere, stay.
		{line(), "rel/x", "rel/x"},
		{line(), "../up", "../up"},
		{line(), "", ""},
		{line(), "mailto:a@example.com", "mailto:a@example.com"},
		{line(), "https://example.com/x", "https://example.com/x"},
		{line(), "//example.com/x", "//example.com/x"},
		// The backend's own host is the API server's path; the API
		// server's keeps its host.
		{line(), "http://10.0.0.1:8080/x", "/api/v1/namespaces/ns/services/web/proxy/x"},
		{line(), "https://api.example:6443/x", "https://api.example:6443/api/v1/namespaces/ns/services/web/proxy/x"},
		{line(), "http://10.0.0.1:8080", "http://10.0.0.1:8080"},
		{line(), "/a/../b", "/api/v1/namespaces/ns/services/web/proxy/b"},
	} {
		u, err := url.Parse(tc.link)
		if err != nil {
			t.Fatal(err)
		}
		if got := rw.link(u); got != tc.want {
			t.Errorf("%s: %q becomes %q, want %q", tc.name, tc.link, got, tc.want)
		}
	}
}

func TestProxyPrefix(t *testing.T) {
	for _, tc := range []struct{ name, client, backend, want string }{
		{line(), "/p/proxy/a/b", "/a/b", "/p/proxy"},
		{line(), "/p/proxy/a/b/", "/a/b/", "/p/proxy"},
		{line(), "/p/proxy/a/b/", "/a/b", "/p/proxy"},
		{line(), "/p/proxy", "", "/p/proxy"},
		{line(), "/p/proxy/", "/", "/p/proxy"},
		{line(), "/p/proxy/a/../b", "/b", "/p/proxy/a/.."},
		{line(), "/p/proxy/a/../b/./c", "/b/c", "/p/proxy/a/../b/./c"},
	} {
		if got := proxyPrefix(tc.client, tc.backend); got != tc.want {
			t.Errorf("%s: proxyPrefix(%q, %q) = %q, want %q", tc.name, tc.client, tc.backend, got, tc.want)
		}
	}
}

// TestPageBomb: an HTML page whose small gzip body decompresses past
// maxPage is a 500, not a server holding all of it.
func TestPageBomb(t *testing.T) {
	defer func(m int64) { maxPage = m }(maxPage)
	maxPage = 1 << 20
	var bomb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&bomb, gzip.BestCompression)
	io.WriteString(zw, "<html><body><p>")
	chunk := bytes.Repeat([]byte(" "), 1<<20)
	for range maxPage>>20 + 1 {
		zw.Write(chunk)
	}
	zw.Close()
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(bomb.Bytes())
	}))
	defer backend.Close()
	srv := front(t, "", backend.Listener.Addr().String(), "/")
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/proxy/", nil)
	req.Header.Set("Accept-Encoding", "gzip") // the page as it comes
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if got, want := statusOf(t, resp), "500  "+errPageTooLarge().Error(); got != want {
		t.Errorf("a %d KB page of %d MiB: %s, want %s", bomb.Len()>>10, maxPage>>20+1, got, want)
	}
}
