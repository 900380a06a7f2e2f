package filters

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/audit"
	"github.com/crdserver/crdserver/internal/authn"
	"github.com/crdserver/crdserver/internal/authz"
	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/compress"
)

func auditLine() string {
	_, _, l, _ := runtime.Caller(1)
	return fmt.Sprintf("line %d", l)
}

// recorded collects events.
type recorded struct {
	mu  sync.Mutex
	evs []*audit.Event
}

func (r *recorded) Process(ev *audit.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, ev)
}

func (r *recorded) stages() string {
	var s []string
	for _, ev := range r.evs {
		s = append(s, string(ev.Stage))
	}
	return strings.Join(s, ",")
}

const filterPolicy = `
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: None
  resources: [{group: "", resources: [events]}]
- level: RequestResponse
  resources: [{group: "", resources: [configmaps]}]
- level: Request
  resources: [{group: "", resources: [pods]}]
  omitStages: [RequestReceived]
  omitManagedFields: true
- level: RequestResponse
`

func TestAudit(t *testing.T) {
	quiet(t)
	p, err := audit.ParsePolicy([]byte(filterPolicy))
	if err != nil {
		t.Fatal(err)
	}
	cmBody := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"ns"},"data":{"k":"v"}}`
	reply := func(code int, body string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(code)
			w.Write([]byte(body))
		})
	}
	for _, tc := range []struct {
		name, method, path, body string
		handler                  http.Handler
		stages                   string
		check                    func(t *testing.T, last *audit.Event)
	}{
		{name: auditLine(), method: "GET", path: "/api/v1/namespaces/ns/events/e", handler: reply(200, "{}"), stages: ""},
		{name: auditLine(), method: "POST", path: "/api/v1/namespaces/ns/configmaps", body: cmBody, handler: reply(201, cmBody),
			stages: "RequestReceived,ResponseComplete", check: func(t *testing.T, ev *audit.Event) {
				if ev.Verb != "create" || ev.ObjectRef.Resource != "configmaps" || ev.ObjectRef.Namespace != "ns" || ev.ObjectRef.APIVersion != "v1" {
					t.Errorf("verb %q objectRef %+v", ev.Verb, ev.ObjectRef)
				}
				if string(ev.RequestObject) != cmBody || string(ev.ResponseObject) != cmBody {
					t.Errorf("requestObject %s responseObject %s, want the bodies", ev.RequestObject, ev.ResponseObject)
				}
				if ev.ResponseStatus.Code != 201 || ev.Annotations["authorization.k8s.io/decision"] != "allow" {
					t.Errorf("responseStatus %+v annotations %v", ev.ResponseStatus, ev.Annotations)
				}
			}},
		// Request level: the request body without managedFields, no response.
		{name: auditLine(), method: "PUT", path: "/api/v1/namespaces/ns/pods/p",
			body:    `{"kind":"Pod","metadata":{"name":"p","managedFields":[{"manager":"x"}]}}`,
			handler: reply(200, `{"kind":"Pod"}`), stages: "ResponseComplete", check: func(t *testing.T, ev *audit.Event) {
				if string(ev.RequestObject) != `{"kind":"Pod","metadata":{"name":"p"}}` || ev.ResponseObject != nil {
					t.Errorf("requestObject %s responseObject %s", ev.RequestObject, ev.ResponseObject)
				}
			}},
		// Secrets stay at Metadata under a catch-all RequestResponse rule.
		{name: auditLine(), method: "POST", path: "/api/v1/namespaces/ns/secrets", body: `{"data":{"x":"c2VjcmV0"}}`, handler: reply(201, `{"data":{"x":"c2VjcmV0"}}`),
			stages: "RequestReceived,ResponseComplete", check: func(t *testing.T, ev *audit.Event) {
				if ev.Level != audit.LevelMetadata || ev.RequestObject != nil || ev.ResponseObject != nil {
					t.Errorf("secret audited at %s with objects %s %s", ev.Level, ev.RequestObject, ev.ResponseObject)
				}
			}},
		// Errors: the Status, without the response object.
		{name: auditLine(), method: "GET", path: "/api/v1/namespaces/ns/configmaps/missing", handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			codec.WriteStatus(w, r, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "missing"))
		}), stages: "RequestReceived,ResponseComplete", check: func(t *testing.T, ev *audit.Event) {
			st := ev.ResponseStatus
			if st.Code != 404 || st.Reason != "NotFound" || st.Message != `configmaps "missing" not found` || st.Status != "Failure" || ev.ResponseObject != nil {
				t.Errorf("responseStatus %+v responseObject %s", st, ev.ResponseObject)
			}
		}},
		// Watches: ResponseStarted when the stream starts.
		{name: auditLine(), method: "GET", path: "/api/v1/namespaces/ns/configmaps?watch=true", handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(200)
			w.(http.Flusher).Flush()
			w.Write([]byte(`{"type":"ADDED","object":{}}`))
		}), stages: "RequestReceived,ResponseStarted,ResponseComplete", check: func(t *testing.T, ev *audit.Event) {
			if ev.Verb != "watch" || ev.ResponseObject != nil {
				t.Errorf("verb %q responseObject %s", ev.Verb, ev.ResponseObject)
			}
		}},
		{name: auditLine(), method: "GET", path: "/healthz", handler: reply(200, "ok"), stages: "RequestReceived,ResponseComplete", check: func(t *testing.T, ev *audit.Event) {
			if ev.ObjectRef != nil || ev.Verb != "get" || ev.RequestURI != "/healthz" {
				t.Errorf("non-resource event %+v", ev)
			}
		}},
		{name: auditLine(), method: "GET", path: "/api/v1/namespaces/ns/configmaps/c", handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }),
			stages: "RequestReceived,Panic", check: func(t *testing.T, ev *audit.Event) {
				if ev.ResponseStatus.Code != 500 {
					t.Errorf("panic event status %+v", ev.ResponseStatus)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := &recorded{}
			h := Chain(tc.handler, AuditID, Recover, RequestInfo,
				Authenticate(authn.AuthenticatorFunc(func(*http.Request) (*authn.User, bool, error) {
					return &authn.User{Name: "alice", Groups: []string{"devs"}}, true, nil
				}), nil),
				Audit(AuditConfig{Policy: p, Sink: sink}), Authorize(authz.AllowAll), AuditAllowed)
			r := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
			r.Header.Set("User-Agent", "kubectl/v1.37")
			r.Header.Set("X-Forwarded-For", "10.1.2.3")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if got := sink.stages(); got != tc.stages {
				t.Fatalf("stages %q, want %q", got, tc.stages)
			}
			id := w.Header().Get("Audit-Id")
			if id == "" {
				t.Error("no Audit-Id response header")
			}
			for _, ev := range sink.evs {
				if ev.AuditID != id || ev.Kind != "Event" || ev.APIVersion != "audit.k8s.io/v1" || ev.User.Username != "alice" ||
					ev.UserAgent != "kubectl/v1.37" || strings.Join(ev.SourceIPs, ",") != "10.1.2.3,192.0.2.1" || ev.RequestReceivedTimestamp.IsZero() {
					t.Errorf("event %+v: want auditID %s, user alice, the user agent and source IPs", ev, id)
				}
			}
			if tc.check != nil {
				tc.check(t, sink.evs[len(sink.evs)-1])
			}
		})
	}
}

func TestAuditIDHonoursClient(t *testing.T) {
	var seen string
	h := AuditID(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen = audit.IDFrom(r.Context()) }))
	r := httptest.NewRequest("GET", "/version", nil)
	r.Header.Set("Audit-ID", "my-trace-1")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Header().Get("Audit-Id") != "my-trace-1" || seen != "my-trace-1" {
		t.Errorf("Audit-Id %q, in context %q; want the client's my-trace-1", w.Header().Get("Audit-Id"), seen)
	}
	// Two requests without one get two IDs.
	w1, w2 := httptest.NewRecorder(), httptest.NewRecorder()
	h.ServeHTTP(w1, httptest.NewRequest("GET", "/version", nil))
	h.ServeHTTP(w2, httptest.NewRequest("GET", "/version", nil))
	if a, b := w1.Header().Get("Audit-Id"), w2.Header().Get("Audit-Id"); a == "" || a == b {
		t.Errorf("generated IDs %q and %q, want two distinct", a, b)
	}
}

// impersonatedUser is the user impersonation grants (with the groups it
// adds), and none when it is refused.
func TestAuditImpersonatedUser(t *testing.T) {
	p, _ := audit.ParsePolicy([]byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Metadata}]"))
	for _, tc := range []struct {
		name string
		z    authz.Authorizer
		want string
	}{
		{name: "allowed", z: authz.AllowAll,
			want: `{"username":"bob","groups":["g1","system:authenticated"],"extra":{"scopes":["view"]}}`},
		{name: "refused", z: authz.AuthorizerFunc(func(context.Context, authz.Attributes) (authz.Decision, string, error) {
			return authz.NoOpinion, "", nil
		}), want: "null"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := &recorded{}
			h := Chain(ok, AuditID, RequestInfo, Authenticate(authn.AuthenticatorFunc(func(*http.Request) (*authn.User, bool, error) {
				return &authn.User{Name: "admin"}, true, nil
			}), nil), Audit(AuditConfig{Policy: p, Sink: sink}), Impersonate(tc.z))
			r := httptest.NewRequest("GET", "/api/v1/namespaces", nil)
			r.Header.Set("Impersonate-User", "bob")
			r.Header.Add("Impersonate-Group", "g1")
			r.Header.Set("Impersonate-Extra-Scopes", "view")
			h.ServeHTTP(httptest.NewRecorder(), r)
			ev := sink.evs[len(sink.evs)-1]
			b, _ := json.Marshal(ev.ImpersonatedUser)
			if ev.Stage != audit.StageResponseComplete || ev.User.Username != "admin" || string(b) != tc.want {
				t.Errorf("%s event of %q: impersonatedUser %s, want %s", ev.Stage, ev.User.Username, b, tc.want)
			}
		})
	}
}

// A request nobody identifies is audited as upstream audits it: one
// ResponseStarted event without a user, its status naming what was tried.
func TestAuditFailedAuthentication(t *testing.T) {
	quiet(t)
	p, err := audit.ParsePolicy([]byte(filterPolicy))
	if err != nil {
		t.Fatal(err)
	}
	nobody := authn.AuthenticatorFunc(func(*http.Request) (*authn.User, bool, error) { return nil, false, nil })
	for _, tc := range []struct {
		name, path, authorization, stages, message string
	}{
		{name: "bearer", path: "/api/v1/namespaces/ns/configmaps", authorization: "Bearer nope", stages: "ResponseStarted",
			message: "Authentication failed, attempted: bearer"},
		{name: "nothing", path: "/apis", stages: "ResponseStarted", message: "Authentication failed, no credentials provided"},
		{name: "level None", path: "/api/v1/namespaces/ns/events", stages: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := &recorded{}
			cfg := AuditConfig{Policy: p, Sink: sink}
			h := Chain(http.NotFoundHandler(), AuditID, RequestInfo,
				AuthenticateOr(nobody, func(string) bool { return false }, FailedAuthenticationAudit(cfg, Unauthorized)),
				Audit(cfg))
			r := httptest.NewRequest("GET", tc.path, nil)
			if tc.authorization != "" {
				r.Header.Set("Authorization", tc.authorization)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != http.StatusUnauthorized {
				t.Fatalf("code %d, want 401", w.Code)
			}
			if got := sink.stages(); got != tc.stages {
				t.Fatalf("stages %q, want %q", got, tc.stages)
			}
			if tc.stages == "" {
				return
			}
			ev := sink.evs[0]
			if ev.User.Username != "" || ev.ResponseStatus.Code != 401 || ev.ResponseStatus.Message != tc.message ||
				ev.AuditID != w.Header().Get("Audit-Id") || ev.Level != audit.LevelRequestResponse {
				t.Errorf("event %+v status %+v", ev, ev.ResponseStatus)
			}
		})
	}
}

// A denial's reason is annotated beside the decision, as upstream's.
func TestAuditAuthorizationReason(t *testing.T) {
	quiet(t)
	p, err := audit.ParsePolicy([]byte(filterPolicy))
	if err != nil {
		t.Fatal(err)
	}
	const reason = `RBAC: role.rbac.authorization.k8s.io "gone" not found`
	sink := &recorded{}
	h := Chain(http.NotFoundHandler(), AuditID, RequestInfo,
		Authenticate(authn.AuthenticatorFunc(func(*http.Request) (*authn.User, bool, error) {
			return &authn.User{Name: "bob"}, true, nil
		}), nil),
		Audit(AuditConfig{Policy: p, Sink: sink}),
		Authorize(authz.AuthorizerFunc(func(context.Context, authz.Attributes) (authz.Decision, string, error) {
			return authz.NoOpinion, reason, nil
		})), AuditAllowed)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/api/v1/namespaces/ns/pods", nil))
	if w.Code != http.StatusForbidden || len(sink.evs) == 0 {
		t.Fatalf("code %d, %d events", w.Code, len(sink.evs))
	}
	got := sink.evs[len(sink.evs)-1].Annotations
	if got["authorization.k8s.io/decision"] != "forbid" || got["authorization.k8s.io/reason"] != reason {
		t.Errorf("annotations %v", got)
	}
}

// TestAuditCompressed checks that an answer compressed for the client is
// audited as the handler wrote it, and that a handler is not let compress
// an answer whose object audit keeps.
func TestAuditCompressed(t *testing.T) {
	quiet(t)
	p, err := audit.ParsePolicy([]byte(filterPolicy))
	if err != nil {
		t.Fatal(err)
	}
	list := `{"kind":"ConfigMapList","items":[` + strings.Repeat(`{"kind":"ConfigMap"},`, compress.Threshold/20) + `{}]}`
	sink := &recorded{}
	h := Chain(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if compress.Allowed(r.Context()) {
			t.Error("the handler may compress an answer audited at RequestResponse")
		}
		w.WriteHeader(http.StatusOK)
		w.Write([]byte(list))
	}), AuditID, Recover, RequestInfo, Compress,
		Authenticate(authn.AuthenticatorFunc(func(*http.Request) (*authn.User, bool, error) {
			return &authn.User{Name: "alice"}, true, nil
		}), nil),
		Audit(AuditConfig{Policy: p, Sink: sink}), Authorize(authz.AllowAll), AuditAllowed)
	r := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/ns/configmaps", nil)
	r.Header.Set("Accept-Encoding", "gzip")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if enc := w.Header().Get("Content-Encoding"); enc != "gzip" {
		t.Fatalf("Content-Encoding %q, want gzip", enc)
	}
	if len(sink.evs) == 0 {
		t.Fatal("no event")
	}
	if got := string(sink.evs[len(sink.evs)-1].ResponseObject); got != list {
		t.Errorf("audited response object of %d bytes, want the %d the handler wrote", len(got), len(list))
	}
}

// TestAuditConnectBody: a request to a proxy subresource, audited at
// RequestResponse, is forwarded with its body unread by audit (it may be
// of any size, and is the backend's, not an object), and neither its body
// nor the backend's answer is recorded.
func TestAuditConnectBody(t *testing.T) {
	quiet(t)
	p, err := audit.ParsePolicy([]byte(filterPolicy))
	if err != nil {
		t.Fatal(err)
	}
	body := &countingReader{left: 64 << 20}
	sink := &recorded{}
	h := Chain(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if body.read != 0 {
			t.Errorf("%d bytes of the body read before the handler", body.read)
		}
		w.WriteHeader(http.StatusOK)
		w.Write([]byte(`{"from":"the backend"}`))
	}), AuditID, Recover, RequestInfo, MaxBodySize(0),
		Authenticate(authn.AuthenticatorFunc(func(*http.Request) (*authn.User, bool, error) {
			return &authn.User{Name: "alice"}, true, nil
		}), nil),
		Audit(AuditConfig{Policy: p, Sink: sink}), Authorize(authz.AllowAll), AuditAllowed)
	r := httptest.NewRequest(http.MethodPost, "/api/v1/namespaces/ns/services/web:80/proxy/upload", body)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		t.Fatalf("answered %d %s", w.Code, w.Body)
	}
	if len(sink.evs) == 0 {
		t.Fatal("no event")
	}
	for _, ev := range sink.evs {
		if ev.RequestObject != nil || ev.ResponseObject != nil {
			t.Errorf("%s event records request %q, response %q; want neither", ev.Stage, ev.RequestObject, ev.ResponseObject)
		}
	}
}

// countingReader is an endless-looking body that counts what is read.
type countingReader struct{ left, read int }

func (c *countingReader) Read(p []byte) (int, error) {
	if c.left == 0 {
		return 0, io.EOF
	}
	n := min(len(p), c.left)
	c.left -= n
	c.read += n
	return n, nil
}
