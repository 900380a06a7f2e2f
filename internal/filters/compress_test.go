package filters

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/crdserver/crdserver/internal/compress"
	"github.com/crdserver/crdserver/internal/request"
)

// TestCompress checks which answers are gzipped, as kube-apiserver
// gzips them: over 128 KiB, to a client whose Accept-Encoding has the
// token gzip, for API requests other than watches; and that the client
// reads what the handler wrote either way.
func TestCompress(t *testing.T) {
	big := bytes.Repeat([]byte(`{"kind":"ConfigMap"},`), compress.Threshold/20+1) // just over
	exact := bytes.Repeat([]byte("x"), compress.Threshold)
	small := []byte(`{"kind":"ConfigMap"}`)
	// whole writes the body at once with its length, as objects and
	// Status errors are written; pieces writes it in 1 KiB writes without
	// one, as lists are streamed.
	whole := func(status int, body []byte) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			w.WriteHeader(status)
			w.Write(body)
		}
	}
	pieces := func(status int, body []byte) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(status)
			for b := body; len(b) > 0; {
				n := min(len(b), 1024)
				w.Write(b[:n])
				b = b[n:]
			}
		}
	}
	implicit := func(body []byte) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { w.Write(body) }
	}
	const list = "/apis/example.com/v1/namespaces/default/widgets"
	cases := []struct {
		name     string
		path     string
		encoding string
		handler  http.HandlerFunc
		status   int
		body     []byte
		gzipped  bool
	}{
		{name: "large object", path: list + "/a", encoding: "gzip", handler: whole(200, big), status: 200, body: big, gzipped: true},
		{name: "large list", path: list, encoding: "gzip", handler: pieces(200, big), status: 200, body: big, gzipped: true},
		{name: "large answer to a create", path: list, encoding: "gzip", handler: pieces(201, big), status: 201, body: big, gzipped: true},
		{name: "without a status code", path: list, encoding: "gzip", handler: implicit(big), status: 200, body: big, gzipped: true},
		{name: "gzip among encodings", path: list, encoding: "deflate, gzip ,br", handler: pieces(200, big), status: 200, body: big, gzipped: true},
		{name: "discovery", path: "/apis", encoding: "gzip", handler: whole(200, big), status: 200, body: big, gzipped: true},
		{name: "group discovery", path: "/apis/example.com/v1", encoding: "gzip", handler: pieces(200, big), status: 200, body: big, gzipped: true},
		{name: "exactly the threshold", path: list, encoding: "gzip", handler: pieces(200, exact), status: 200, body: exact},
		{name: "exactly the threshold, whole", path: list, encoding: "gzip", handler: whole(200, exact), status: 200, body: exact},
		{name: "small object", path: list + "/a", encoding: "gzip", handler: whole(200, small), status: 200, body: small},
		{name: "small list", path: list, encoding: "gzip", handler: pieces(200, small), status: 200, body: small},
		{name: "small error", path: list, encoding: "gzip", handler: whole(404, small), status: 404, body: small},
		{name: "no body", path: list + "/a", encoding: "gzip", handler: pieces(204, nil), status: 204},
		{name: "not accepted", path: list, handler: pieces(200, big), status: 200, body: big},
		{name: "with a quality", path: list, encoding: "gzip;q=0.5", handler: pieces(200, big), status: 200, body: big},
		{name: "another encoding", path: list, encoding: "br", handler: pieces(200, big), status: 200, body: big},
		{name: "watch", path: list + "?watch=1", encoding: "gzip", handler: pieces(200, big), status: 200, body: big},
		{name: "not the API", path: "/openapi/v2", encoding: "gzip", handler: pieces(200, big), status: 200, body: big},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := RequestInfo(Compress(tc.handler))
			r := httptest.NewRequest(http.MethodGet, tc.path, nil)
			if tc.encoding != "" {
				r.Header.Set("Accept-Encoding", tc.encoding)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.status {
				t.Errorf("status %d, want %d", w.Code, tc.status)
			}
			got := w.Body.Bytes()
			enc := w.Header().Get("Content-Encoding")
			switch {
			case tc.gzipped && enc != "gzip":
				t.Fatalf("Content-Encoding %q, want gzip", enc)
			case !tc.gzipped && enc != "":
				t.Fatalf("Content-Encoding %q, want none", enc)
			case tc.gzipped:
				if v := w.Header().Get("Vary"); v != "Accept-Encoding" {
					t.Errorf("Vary %q, want Accept-Encoding", v)
				}
				if cl := w.Header().Get("Content-Length"); cl != "" {
					t.Errorf("Content-Length %s on a compressed answer", cl)
				}
				zr, err := gzip.NewReader(bytes.NewReader(got))
				if err != nil {
					t.Fatal(err)
				}
				if got, err = io.ReadAll(zr); err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(got, tc.body) {
				t.Errorf("body of %d bytes, want %d", len(got), len(tc.body))
			}
		})
	}
}

// TestCompressReusesWriters checks that a compressed answer after
// another gets a clean stream: the pooled writer was reset.
func TestCompressReusesWriters(t *testing.T) {
	for i := range 3 {
		body := bytes.Repeat([]byte{'a' + byte(i)}, compress.Threshold+1)
		h := RequestInfo(Compress(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) })))
		r := httptest.NewRequest(http.MethodGet, "/api/v1/configmaps", nil)
		r.Header.Set("Accept-Encoding", "gzip")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		zr, err := gzip.NewReader(w.Body)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(zr)
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("answer %d: %d bytes (%v), want %d", i, len(got), err, len(body))
		}
	}
}

// BenchmarkCompressSmallObject is what the filter adds to a get of a
// small object by a client that accepts gzip: the answer passes through.
func BenchmarkCompressSmallObject(b *testing.B) {
	body := bytes.Repeat([]byte("x"), 3500)
	h := Compress(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusOK)
		w.Write(body)
	}))
	r := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/default/configmaps/a", nil)
	r.Header.Set("Accept-Encoding", "gzip")
	info, _ := request.Parse(r.Method, r.URL.Path, r.URL.Query())
	r = r.WithContext(request.WithInfo(r.Context(), info))
	w := httptest.NewRecorder()
	b.ReportAllocs()
	for b.Loop() {
		w.Body.Reset()
		h.ServeHTTP(w, r)
	}
}

// TestCompressWhenBusy checks that a large answer is sent as it is while
// every compressor is in use, and compressed again once one is free.
func TestCompressWhenBusy(t *testing.T) {
	body := bytes.Repeat([]byte("b"), compress.Threshold+1)
	serve := func() string {
		h := RequestInfo(Compress(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) })))
		r := httptest.NewRequest(http.MethodGet, "/api/v1/configmaps", nil)
		r.Header.Set("Accept-Encoding", "gzip")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if enc := w.Header().Get("Content-Encoding"); enc == "" && !bytes.Equal(w.Body.Bytes(), body) {
			t.Fatalf("a plain answer of %d bytes, want %d", w.Body.Len(), len(body))
		}
		return w.Header().Get("Content-Encoding")
	}
	var busy []*compress.Writer
	for gw := compress.Take(); gw != nil; gw = compress.Take() {
		busy = append(busy, gw)
	}
	if enc := serve(); enc != "" {
		t.Errorf("Content-Encoding %q with every compressor busy, want none", enc)
	}
	for _, gw := range busy {
		compress.Put(gw)
	}
	if enc := serve(); enc != "gzip" {
		t.Errorf("Content-Encoding %q once free, want gzip", enc)
	}
}

// TestCompressPanic checks that a handler panicking mid-answer gives its
// compressor back.
func TestCompressPanic(t *testing.T) {
	body := bytes.Repeat([]byte("p"), compress.Threshold+1)
	h := RequestInfo(Compress(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(body)
		panic(http.ErrAbortHandler)
	})))
	all := freeCompressors()
	for range all + 1 {
		func() {
			defer func() { recover() }()
			r := httptest.NewRequest(http.MethodGet, "/api/v1/configmaps", nil)
			r.Header.Set("Accept-Encoding", "gzip")
			h.ServeHTTP(httptest.NewRecorder(), r)
		}()
	}
	if n := freeCompressors(); n != all {
		t.Errorf("%d of %d compressors free after the panics", n, all)
	}
}

// freeCompressors counts the compressors compress.Take would give.
func freeCompressors() int {
	var free []*compress.Writer
	for gw := compress.Take(); gw != nil; gw = compress.Take() {
		free = append(free, gw)
	}
	for _, gw := range free {
		compress.Put(gw)
	}
	return len(free)
}

// TestCompressByHandler checks that a handler may gzip its answer itself
// when the client takes gzip, and that the filter then sends what it
// wrote as it is.
func TestCompressByHandler(t *testing.T) {
	body := bytes.Repeat([]byte(`{"kind":"Widget"},`), compress.Threshold/10)
	var allowed bool
	h := RequestInfo(Compress(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		allowed = compress.Allowed(r.Context())
		if !allowed {
			w.Write(body)
			return
		}
		var zipped bytes.Buffer
		gw := gzip.NewWriter(&zipped)
		gw.Write(body)
		gw.Close()
		w.Header().Set("Content-Encoding", "gzip")
		w.WriteHeader(http.StatusOK)
		w.Write(zipped.Bytes())
	})))
	for _, accept := range []string{"gzip", ""} {
		r := httptest.NewRequest(http.MethodGet, "/apis/example.com/v1/widgets", nil)
		r.Header.Set("Accept-Encoding", accept)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if allowed != (accept == "gzip") {
			t.Errorf("Accept-Encoding %q: the handler allowed to compress: %v", accept, allowed)
		}
		got := w.Body.Bytes()
		if accept == "gzip" {
			if enc := w.Header().Values("Content-Encoding"); len(enc) != 1 || enc[0] != "gzip" {
				t.Fatalf("Content-Encoding %q, want gzip once", enc)
			}
			zr, err := gzip.NewReader(w.Body)
			if err != nil {
				t.Fatal(err)
			}
			if got, err = io.ReadAll(zr); err != nil {
				t.Fatalf("the answer is not gzip once: %v", err)
			}
		}
		if !bytes.Equal(got, body) {
			t.Errorf("Accept-Encoding %q: %d bytes read, want the %d written", accept, len(got), len(body))
		}
	}
}
