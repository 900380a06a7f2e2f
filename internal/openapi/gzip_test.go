package openapi

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"slices"
	"testing"
)

// TestV2Gzip: /openapi/v2 is compressed as upstream's handler compresses
// it, and the v3 documents are not.
func TestV2Gzip(t *testing.T) {
	srv, _, _ := newTestServer(t, testDefinitions())
	_, plain := get(t, srv.URL+"/openapi/v2", map[string]string{"Accept-Encoding": "identity"})
	if len(plain) < gzipMinSize {
		t.Fatalf("the v2 document has %d bytes, too few to test with", len(plain))
	}
	for _, tc := range []struct {
		acceptEncoding string
		gzipped        bool
	}{
		{"gzip", true},
		{"GZIP", true},
		{"br, gzip;q=0.5", true},
		{"gzip;q=bad", true},
		{"gzip;q=0", false},
		{"deflate", false},
		{"*", false},
		{"", false},
	} {
		resp, body := get(t, srv.URL+"/openapi/v2", map[string]string{"Accept-Encoding": tc.acceptEncoding})
		if !slices.Contains(resp.Header.Values("Vary"), "Accept-Encoding") {
			t.Errorf("%q: Vary %q, want Accept-Encoding among them", tc.acceptEncoding, resp.Header.Values("Vary"))
		}
		if got := resp.Header.Get("Content-Encoding") == "gzip"; got != tc.gzipped {
			t.Errorf("%q: Content-Encoding %q, want gzip: %v", tc.acceptEncoding, resp.Header.Get("Content-Encoding"), tc.gzipped)
			continue
		}
		if tc.gzipped {
			if resp.Header.Get("Content-Length") != "" {
				t.Errorf("%q: Content-Length %q on a compressed answer", tc.acceptEncoding, resp.Header.Get("Content-Length"))
			}
			zr, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil {
				t.Fatalf("%q: %v", tc.acceptEncoding, err)
			}
			if body, err = io.ReadAll(zr); err != nil {
				t.Fatalf("%q: %v", tc.acceptEncoding, err)
			}
		}
		if !bytes.Equal(body, plain) {
			t.Errorf("%q: the document differs from the plain one (%d bytes, want %d)", tc.acceptEncoding, len(body), len(plain))
		}
	}

	// Not modified, not acceptable, a HEAD and the v3 documents: plain.
	resp, _ := get(t, srv.URL+"/openapi/v2", map[string]string{"Accept-Encoding": "gzip"})
	for _, tc := range []struct {
		method, path string
		header       map[string]string
		status       int
	}{
		{http.MethodGet, "/openapi/v2", map[string]string{"If-None-Match": resp.Header.Get("Etag")}, http.StatusNotModified},
		{http.MethodGet, "/openapi/v2", map[string]string{"Accept": "text/plain"}, http.StatusNotAcceptable},
		{http.MethodHead, "/openapi/v2", nil, http.StatusOK},
		{http.MethodGet, "/openapi/v3", nil, http.StatusOK},
		{http.MethodGet, "/openapi/v3/api/v1", nil, http.StatusOK},
	} {
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, nil)
		req.Header.Set("Accept-Encoding", "gzip")
		for k, v := range tc.header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status || resp.Header.Get("Content-Encoding") != "" {
			t.Errorf("%s %s %v: %d, Content-Encoding %q; want %d, none", tc.method, tc.path, tc.header, resp.StatusCode, resp.Header.Get("Content-Encoding"), tc.status)
		}
	}
}
