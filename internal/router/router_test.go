package router

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdserver/crdserver/internal/version"
)

// TestVersionRoute checks /version's answers to methods and Accept
// headers against kube-apiserver 1.37's, whose REST router takes GET and
// JSON alone there.
func TestVersionRoute(t *testing.T) {
	h := New(Config{Version: version.Handler{}})
	for _, tc := range []struct {
		method, accept string
		code           int
		message        string
	}{
		{"GET", "", 200, ""},
		{"GET", "*/*;q=0.5", 200, ""},
		{"GET", "application/json;q=0", 200, ""},
		{"GET", "text/html", 406, "406: Not Acceptable\n\nAvailable representations: application/json"},
		{"GET", "application/*", 406, "406: Not Acceptable\n\nAvailable representations: application/json"},
		{"GET", "application/yaml", 406, "406: Not Acceptable\n\nAvailable representations: application/json"},
		{"HEAD", "", 405, "the server does not allow this method on the requested resource"},
		{"POST", "", 405, "the server does not allow this method on the requested resource"},
	} {
		req := httptest.NewRequest(tc.method, "/version", nil)
		if tc.accept != "" {
			req.Header.Set("Accept", tc.accept)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.code {
			t.Errorf("%s %q: code %d, want %d", tc.method, tc.accept, rec.Code, tc.code)
			continue
		}
		if tc.code == 200 {
			continue
		}
		var st metav1.Status
		if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil && tc.accept != "application/yaml" {
			t.Errorf("%s %q: %v: %s", tc.method, tc.accept, err, rec.Body)
			continue
		}
		if tc.accept != "application/yaml" && st.Message != tc.message {
			t.Errorf("%s %q: message %q, want %q", tc.method, tc.accept, st.Message, tc.message)
		}
		if ct := rec.Header().Get("Content-Type"); tc.accept == "application/yaml" && ct != "application/yaml" {
			t.Errorf("a YAML client's 406 is %q, want YAML as upstream writes it", ct)
		}
	}
}

// TestIndex checks / and /index.html against kube-apiserver 1.37's index:
// a 200 whatever the method, the paths served sorted and each once, in
// JSON indented by two spaces with no newline after it.
func TestIndex(t *testing.T) {
	h := New(Config{
		Metrics: http.NotFoundHandler(),
		Paths:   func() []string { return []string{"/healthz", "/apis", "/api", "/healthz/ping", "/apis"} },
	})
	const want = `{
  "paths": [
    "/api",
    "/apis",
    "/healthz",
    "/healthz/ping",
    "/metrics",
    "/openapi/v2",
    "/openapi/v3",
    "/openapi/v3/",
    "/version"
  ]
}`
	for _, tc := range []struct{ method, path string }{{"GET", "/"}, {"GET", "/index.html"}, {"POST", "/"}} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
		if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/json" || rec.Body.String() != want {
			t.Errorf("%s %s: %d %s\n%s", tc.method, tc.path, rec.Code, rec.Header().Get("Content-Type"), rec.Body)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/index.htm", nil))
	if rec.Code != 404 {
		t.Errorf("GET /index.htm: %d, want a 404", rec.Code)
	}
}

// TestComponentPages checks that /statusz and /flagz are served at those
// paths alone, as upstream's mux serves them, and listed in the index.
func TestComponentPages(t *testing.T) {
	page := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(name)) })
	}
	h := New(Config{Statusz: page("statusz"), Flagz: page("flagz")})
	for _, tc := range []struct {
		method, path string
		code         int
		body         string
	}{
		{"GET", "/statusz", 200, "statusz"},
		{"POST", "/statusz", 200, "statusz"},
		{"GET", "/flagz", 200, "flagz"},
		{"GET", "/statusz/", 404, "404 page not found\n"},
		{"GET", "/statusz/x", 404, "404 page not found\n"},
		{"GET", "/flagz/x", 404, "404 page not found\n"},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
		if rec.Code != tc.code || rec.Body.String() != tc.body {
			t.Errorf("%s %s: %d %q, want %d %q", tc.method, tc.path, rec.Code, rec.Body, tc.code, tc.body)
		}
	}
	want := []string{"/flagz", "/openapi/v2", "/openapi/v3", "/openapi/v3/", "/statusz", "/version"}
	if got := (Config{Statusz: page("statusz"), Flagz: page("flagz")}).ListedPaths(); !slices.Equal(got, want) {
		t.Errorf("listed %q, want %q", got, want)
	}
	rec := httptest.NewRecorder()
	New(Config{}).ServeHTTP(rec, httptest.NewRequest("GET", "/statusz", nil))
	if rec.Code != 404 {
		t.Errorf("GET /statusz without the page: %d, want 404", rec.Code)
	}
}
