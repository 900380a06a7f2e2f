package filters

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdserver/crdserver/internal/authn"
	"github.com/crdserver/crdserver/internal/authz"
	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/request"
)

// quiet silences slog for the duration of a test and returns what was logged.
func quiet(t *testing.T) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	t.Cleanup(func() { slog.SetDefault(old) })
	return &buf
}

func status(t *testing.T, w *httptest.ResponseRecorder) metav1.Status {
	t.Helper()
	var st metav1.Status
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil {
		t.Fatalf("body %q: %v", w.Body.String(), err)
	}
	if st.Kind != "Status" || int(st.Code) != w.Code {
		t.Fatalf("not a Status for %d: %s", w.Code, w.Body.String())
	}
	return st
}

var ok = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })

func TestChainOrder(t *testing.T) {
	var order []string
	mark := func(name string) Filter {
		return func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				order = append(order, name)
				next.ServeHTTP(w, r)
			})
		}
	}
	h := Chain(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { order = append(order, "handler") }),
		mark("first"), mark("second"), mark("third"))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	if got := strings.Join(order, ","); got != "first,second,third,handler" {
		t.Fatalf("order %s", got)
	}
}

func TestRecover(t *testing.T) {
	logs := quiet(t)
	h := Recover(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/x", nil))
	st := status(t, w)
	if w.Code != 500 || st.Reason != metav1.StatusReasonInternalError || strings.Contains(w.Body.String(), "boom") {
		t.Fatalf("got %d %+v", w.Code, st)
	}
	if !strings.Contains(logs.String(), "boom") || !strings.Contains(logs.String(), "filters_test.go") {
		t.Errorf("panic and stack not logged: %s", logs)
	}

	abort := Recover(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) }))
	defer func() {
		if p := recover(); p != http.ErrAbortHandler {
			t.Fatalf("recovered %v, want ErrAbortHandler re-raised", p)
		}
	}()
	abort.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/x", nil))
}

func TestRequestInfo(t *testing.T) {
	var got *request.Info
	h := RequestInfo(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got, _ = request.InfoFrom(r.Context()) }))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/apis/example.com/v1/namespaces/ns/widgets?watch=1", nil))
	if got == nil || got.Verb != "watch" || got.Resource != "widgets" || got.Namespace != "ns" {
		t.Fatalf("info %+v", got)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/api/v1/watch", nil))
	if st := status(t, w); w.Code != 404 || st.Reason != metav1.StatusReasonNotFound || st.Message != "the server could not find the requested resource" {
		t.Fatalf("got %d %+v", w.Code, st)
	}
}

func TestAuthenticate(t *testing.T) {
	quiet(t)
	alice := &authn.User{Name: "alice", Groups: []string{authn.Authenticated}}
	a := authn.AuthenticatorFunc(func(r *http.Request) (*authn.User, bool, error) {
		switch r.Header.Get("Authorization") {
		case "Bearer good":
			return alice, true, nil
		case "Bearer bad":
			return nil, false, errors.New("token expired")
		}
		return nil, false, nil
	})
	var seen *authn.User
	var header string
	h := Authenticate(a, nil)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen, _ = authn.UserFrom(r.Context())
		header = r.Header.Get("Authorization")
		w.WriteHeader(204)
	}))
	for _, tc := range []struct {
		path, auth string
		code       int
		user       string
	}{
		{"/apis/example.com/v1/widgets", "Bearer good", 204, "alice"},
		{"/apis/example.com/v1/widgets", "", 401, ""},
		{"/apis/example.com/v1/widgets", "Bearer bad", 401, ""},
		{"/healthz", "", 204, authn.Anonymous},
		{"/readyz/etcd", "", 204, authn.Anonymous},
		{"/livez", "Bearer bad", 204, authn.Anonymous},
		{"/version", "", 204, authn.Anonymous},
		{"/versions", "", 401, ""},
		{"/version", "Bearer good", 204, "alice"},
	} {
		seen, header = nil, ""
		r := httptest.NewRequest("GET", tc.path, nil)
		if tc.auth != "" {
			r.Header.Set("Authorization", tc.auth)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tc.code {
			t.Errorf("%s %q: code %d, want %d", tc.path, tc.auth, w.Code, tc.code)
			continue
		}
		if tc.code == 401 {
			if st := status(t, w); st.Reason != metav1.StatusReasonUnauthorized || st.Message != "Unauthorized" {
				t.Errorf("%s: %+v", tc.path, st)
			}
			continue
		}
		if seen == nil || seen.Name != tc.user {
			t.Errorf("%s %q: user %+v, want %s", tc.path, tc.auth, seen, tc.user)
		}
		if header != "" {
			t.Errorf("%s: Authorization header passed on", tc.path)
		}
	}
}

func TestAuthorize(t *testing.T) {
	quiet(t)
	bob := &authn.User{Name: "bob"}
	denyAll := authz.AuthorizerFunc(func(context.Context, authz.Attributes) (authz.Decision, string, error) {
		return authz.NoOpinion, "", nil
	})
	for _, tc := range []struct {
		name   string
		z      authz.Authorizer
		method string
		path   string
		code   int
		msg    string
	}{
		{"allowed", authz.AllowAll, "GET", "/api/v1/namespaces/foo", 204, ""},
		{"namespace object", denyAll, "GET", "/api/v1/namespaces/foo", 403,
			`namespaces "foo" is forbidden: User "bob" cannot get resource "namespaces" in API group "" in the namespace "foo"`},
		{"cluster list", denyAll, "GET", "/apis/example.com/v1/widgets", 403,
			`widgets.example.com is forbidden: User "bob" cannot list resource "widgets" in API group "example.com" at the cluster scope`},
		{"subresource", denyAll, "PUT", "/apis/example.com/v1/namespaces/ns/widgets/w/status", 403,
			`widgets.example.com "w" is forbidden: User "bob" cannot update resource "widgets/status" in API group "example.com" in the namespace "ns"`},
		{"non-resource", denyAll, "GET", "/metrics", 403, `forbidden: User "bob" cannot get path "/metrics"`},
		{"sanitized", denyAll, "GET", "/<script>", 403, `forbidden: User "bob" cannot get path "/&lt;script&gt;"`},
		{"reason", authz.AuthorizerFunc(func(context.Context, authz.Attributes) (authz.Decision, string, error) {
			return authz.Deny, "no RBAC policy matched", nil
		}), "DELETE", "/apis/example.com/v1/namespaces/ns/widgets", 403,
			`widgets.example.com is forbidden: User "bob" cannot deletecollection resource "widgets" in API group "example.com" in the namespace "ns": no RBAC policy matched`},
		{"error", authz.AuthorizerFunc(func(context.Context, authz.Attributes) (authz.Decision, string, error) {
			return authz.NoOpinion, "", errors.New("rbac cache not synced")
		}), "GET", "/api/v1/namespaces", 500, ""},
		{"allow despite error", authz.AuthorizerFunc(func(context.Context, authz.Attributes) (authz.Decision, string, error) {
			return authz.Allow, "", errors.New("partial evaluation error")
		}), "GET", "/api/v1/namespaces", 204, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := Chain(ok, RequestInfo, func(next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					next.ServeHTTP(w, r.WithContext(authn.WithUser(r.Context(), bob)))
				})
			}, Authorize(tc.z))
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(tc.method, tc.path, nil))
			if w.Code != tc.code {
				t.Fatalf("code %d, want %d: %s", w.Code, tc.code, w.Body.String())
			}
			if tc.code == 403 {
				st := status(t, w)
				if st.Reason != metav1.StatusReasonForbidden || st.Message != tc.msg {
					t.Fatalf("got  %s\nwant %s", st.Message, tc.msg)
				}
			}
			if tc.code == 500 && strings.Contains(w.Body.String(), "rbac cache") {
				t.Fatalf("internal cause leaked: %s", w.Body.String())
			}
		})
	}
}

func TestMaxBodySize(t *testing.T) {
	var readErr error
	var n int
	h := MaxBodySize(10)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		n, readErr = len(b), err
		if err != nil {
			codec.WriteStatus(w, r, err)
			return
		}
		w.WriteHeader(204)
	}))
	for _, tc := range []struct {
		name    string
		body    string
		chunked bool
		code    int
		read    bool
	}{
		{"under", "12345", false, 204, true},
		{"exact", "1234567890", false, 204, true},
		{"exact chunked", "1234567890", true, 204, true},
		{"declared over", "12345678901", false, 413, false},
		{"chunked over", "12345678901", true, 413, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			readErr, n = nil, -1
			r := httptest.NewRequest("POST", "/apis/example.com/v1/widgets", strings.NewReader(tc.body))
			if tc.chunked {
				r.ContentLength = -1
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.code {
				t.Fatalf("code %d, want %d", w.Code, tc.code)
			}
			if (n >= 0) != tc.read {
				t.Fatalf("handler ran = %v, want %v", n >= 0, tc.read)
			}
			if tc.code == 413 {
				st := status(t, w)
				if st.Reason != metav1.StatusReasonRequestEntityTooLarge || st.Message != "Request entity too large: limit is 10" {
					t.Fatalf("got %+v", st)
				}
				if tc.read && !apierrors.IsRequestEntityTooLargeError(readErr) {
					t.Fatalf("read error %v is not a 413", readErr)
				}
			}
		})
	}
	// A proxy subresource's body is the backend's, whatever its size.
	proxied := Chain(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil || len(b) != 11 {
			t.Errorf("proxied body: %d bytes, %v", len(b), err)
		}
	}), RequestInfo, MaxBodySize(10))
	for _, chunked := range []bool{false, true} {
		r := httptest.NewRequest("POST", "/api/v1/namespaces/ns/services/web/proxy/upload", strings.NewReader("12345678901"))
		if chunked {
			r.ContentLength = -1
		}
		w := httptest.NewRecorder()
		proxied.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			t.Errorf("proxied body (chunked %v): %d", chunked, w.Code)
		}
	}
	// The default is 3 MiB.
	w := httptest.NewRecorder()
	r := httptest.NewRequest("POST", "/", strings.NewReader(""))
	r.ContentLength = codec.DefaultMaxBodyBytes + 1
	MaxBodySize(0)(ok).ServeHTTP(w, r)
	if st := status(t, w); st.Message != "Request entity too large: limit is 3145728" {
		t.Fatalf("default limit: %+v", st)
	}
}

func TestPublicPath(t *testing.T) {
	for path, want := range map[string]bool{
		"/healthz": true, "/healthz/ping": true, "/livez": true, "/readyz": true, "/readyz/etcd": true,
		"/version": true, "/version/": true, "/versions": false, "/healthzz": false, "/api": false, "/": false,
		"/openapi/v3": false,
	} {
		if PublicPath(path) != want {
			t.Errorf("PublicPath(%q) = %v", path, !want)
		}
	}
}
