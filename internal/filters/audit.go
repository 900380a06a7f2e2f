package filters

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/crdserver/crdserver/internal/audit"
	"github.com/crdserver/crdserver/internal/authn"
	"github.com/crdserver/crdserver/internal/authz"
	"github.com/crdserver/crdserver/internal/compress"
	"github.com/crdserver/crdserver/internal/request"
)

// AuditID gives every request an audit ID, the client's Audit-ID header
// when it sent one (as upstream honours it, so a client can follow its
// request through the log), else a new UUID, and answers it in the
// Audit-Id response header. It comes first, so that refused requests (401,
// 429) carry the header too.
func AuditID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The header's name in its canonical form: looking up any other
		// spelling allocates the canonical one on every request.
		id := r.Header.Get(auditIDHeader)
		if id == "" {
			// Kept in the context alone: the request's headers stay the
			// client's, as a proxied request forwards them.
			id = string(uuid.NewUUID())
		}
		w.Header().Set(auditIDHeader, id)
		next.ServeHTTP(w, r.WithContext(audit.WithID(r.Context(), id)))
	})
}

// auditIDHeader is the Audit-ID header, as net/http spells it.
const auditIDHeader = "Audit-Id"

// maxAuditedBody bounds the response bytes kept for an event; a larger
// response (a big list at RequestResponse) is logged without its object.
const maxAuditedBody = 1 << 20

// decisionKey is upstream's annotation for the authorization decision.
const decisionKey = "authorization.k8s.io/decision"

// AuditConfig configures Audit.
type AuditConfig struct {
	// Policy decides each request's level; nil audits nothing.
	Policy *audit.Policy
	// Sink receives the events; nil audits nothing.
	Sink audit.Sink
	// Protobuf turns a protobuf body of the request's resource into JSON
	// (handler.ProtobufJSON); nil leaves protobuf bodies out of events.
	Protobuf func(info *request.Info, body []byte) ([]byte, bool)
}

// Audit writes the request's audit events to the sink at the level the
// policy decides
// (audit.Policy.Decide): RequestReceived when the request arrives,
// ResponseStarted when a watch starts streaming, ResponseComplete when it
// ends, Panic when a later handler panicked, minus the stages the policy
// omits. It needs AuditID, RequestInfo and Authenticate before it, and
// AuditAllowed right after Authorize. A nil p audits nothing.
//
// The user is the authenticated one; impersonatedUser is the user
// Impersonate, which runs after Audit as upstream's order has it, grants.
func Audit(cfg AuditConfig) Filter {
	p, sink := cfg.Policy, cfg.Sink
	return func(next http.Handler) http.Handler {
		if p == nil || sink == nil {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			info, _ := request.InfoFrom(r.Context())
			u, _ := authn.UserFrom(r.Context())
			if info == nil {
				info = &request.Info{Path: r.URL.Path, Verb: strings.ToLower(r.Method)}
			}
			d := p.Decide(authz.AttributesFrom(u, info))
			if d.Level == audit.LevelNone {
				next.ServeHTTP(w, r)
				return
			}
			ev := newEvent(r, info, u, d.Level)
			// A connect request's body is the backend's, of any size,
			// streamed: upstream's audit reads none of it.
			connects := Connects(info)
			if d.Level.AtLeast(audit.LevelRequest) && !connects {
				ev.RequestObject = readRequestObject(r, info, cfg.Protobuf, d.OmitManagedFields)
			}
			annotations := &audit.Annotations{}
			st := &auditState{}
			r = r.WithContext(audit.WithAnnotations(withAuditState(r.Context(), st), annotations))
			emit := func(stage audit.Stage) *audit.Event {
				e := *ev
				e.Stage = stage
				e.StageTimestamp = audit.NowMicro()
				e.Annotations = annotations.Snapshot()
				e.ImpersonatedUser = annotations.ImpersonatedUser()
				return &e
			}
			if !d.Omits(audit.StageRequestReceived) {
				e := emit(audit.StageRequestReceived)
				e.StageTimestamp = ev.RequestReceivedTimestamp
				sink.Process(e)
			}
			aw := &auditWriter{ResponseWriter: w, keepBody: d.Level == audit.LevelRequestResponse && info.Verb != "watch" && !connects}
			if aw.keepBody {
				// The answer's object is kept as the handler writes it.
				r = r.WithContext(compress.Forbid(r.Context()))
			}
			if info.Verb == "watch" && !d.Omits(audit.StageResponseStarted) {
				aw.started = func(code int) {
					e := emit(audit.StageResponseStarted)
					e.ResponseStatus = &metav1.Status{Code: int32(code)}
					sink.Process(e)
				}
			}
			defer func() {
				if v := recover(); v != nil {
					if !d.Omits(audit.StagePanic) {
						e := emit(audit.StagePanic)
						e.ResponseStatus = &metav1.Status{Code: http.StatusInternalServerError, Status: metav1.StatusFailure,
							Reason: metav1.StatusReasonInternalError, Message: "APIServer panic'd"}
						sink.Process(e)
					}
					panic(v)
				}
			}()
			next.ServeHTTP(aw, r)
			if d.Omits(audit.StageResponseComplete) {
				return
			}
			code := aw.status()
			switch {
			case st.allowed():
				audit.AddAnnotation(r.Context(), decisionKey, "allow")
			case code == http.StatusForbidden:
				audit.AddAnnotation(r.Context(), decisionKey, "forbid")
			}
			e := emit(audit.StageResponseComplete)
			e.ResponseStatus = responseStatus(code, aw.body.Bytes())
			if aw.keepBody && !aw.overflow && code < 300 {
				e.ResponseObject = auditedObject(aw.body.Bytes(), aw.Header().Get("Content-Type"), info, cfg.Protobuf, d.OmitManagedFields)
			}
			sink.Process(e)
		})
	}
}

// FailedAuthenticationAudit audits the 401 answers of failed (the
// handler AuthenticateOr calls for a request nobody identifies), as
// upstream's failed-authentication audit does: one ResponseStarted event
// with no user, at the level the policy gives a request without one, its
// status message naming the credentials tried.
func FailedAuthenticationAudit(cfg AuditConfig, failed http.Handler) http.Handler {
	p, sink := cfg.Policy, cfg.Sink
	if p == nil || sink == nil {
		return failed
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, _ := request.InfoFrom(r.Context())
		if info == nil {
			info = &request.Info{Path: r.URL.Path, Verb: strings.ToLower(r.Method)}
		}
		d := p.Decide(authz.AttributesFrom(nil, info))
		if d.Level == audit.LevelNone || d.Omits(audit.StageResponseStarted) {
			failed.ServeHTTP(w, r)
			return
		}
		ev := newEvent(r, info, nil, d.Level)
		aw := &auditWriter{ResponseWriter: w}
		aw.started = func(code int) {
			ev.Stage = audit.StageResponseStarted
			ev.StageTimestamp = audit.NowMicro()
			ev.ResponseStatus = &metav1.Status{Code: int32(code), Message: attemptedAuthentication(r)}
			sink.Process(ev)
		}
		failed.ServeHTTP(aw, r)
	})
}

// attemptedAuthentication says which credentials a failed request
// carried, in upstream's words.
func attemptedAuthentication(r *http.Request) string {
	var tried []string
	if _, _, ok := r.BasicAuth(); ok {
		tried = append(tried, "basic")
	}
	if scheme, _, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " "); ok && strings.EqualFold(scheme, "bearer") {
		tried = append(tried, "bearer")
	}
	if strings.TrimSpace(r.URL.Query().Get("access_token")) != "" {
		tried = append(tried, "access_token")
	}
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		tried = append(tried, "x509")
	}
	if len(tried) == 0 {
		return "Authentication failed, no credentials provided"
	}
	return "Authentication failed, attempted: " + strings.Join(tried, ", ")
}

// AuditAllowed marks the request as allowed by authorization, for the
// decision annotation of its audit events: anything that gets past
// Authorize was allowed. Place it right after Authorize.
func AuditAllowed(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if st, ok := r.Context().Value(auditStateKey{}).(*auditState); ok {
			st.mu.Lock()
			st.passed = true
			st.mu.Unlock()
		}
		next.ServeHTTP(w, r)
	})
}

type auditStateKey struct{}

// auditState is what later filters tell Audit about the request.
type auditState struct {
	mu     sync.Mutex
	passed bool // past Authorize
}

func (s *auditState) allowed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.passed
}

func withAuditState(ctx context.Context, st *auditState) context.Context {
	return context.WithValue(ctx, auditStateKey{}, st)
}

// newEvent fills what every stage's event shares.
func newEvent(r *http.Request, info *request.Info, u *authn.User, level audit.Level) *audit.Event {
	ev := &audit.Event{
		Kind:                     "Event",
		APIVersion:               "audit.k8s.io/v1",
		Level:                    level,
		AuditID:                  audit.IDFrom(r.Context()),
		RequestURI:               r.RequestURI,
		Verb:                     info.Verb,
		SourceIPs:                sourceIPs(r),
		UserAgent:                r.UserAgent(),
		RequestReceivedTimestamp: audit.NowMicro(),
	}
	if u != nil {
		ev.User = userInfo(u.Name, u.UID, u.Groups, u.Extra)
	}
	if info.IsResourceRequest {
		ev.ObjectRef = &audit.ObjectReference{
			Resource: info.Resource, Namespace: info.Namespace, Name: info.Name,
			APIGroup: info.APIGroup, APIVersion: info.APIVersion, Subresource: info.Subresource,
		}
	}
	return ev
}

func userInfo(name, uid string, groups []string, extra map[string][]string) authenticationv1.UserInfo {
	ui := authenticationv1.UserInfo{Username: name, UID: uid, Groups: groups}
	if len(extra) > 0 {
		ui.Extra = make(map[string]authenticationv1.ExtraValue, len(extra))
		for k, v := range extra {
			ui.Extra[k] = v
		}
	}
	return ui
}

// sourceIPs are the X-Forwarded-For addresses, then X-Real-Ip, then the
// peer's, without repeats, as upstream lists them.
func sourceIPs(r *http.Request) []string {
	var ips []string
	add := func(s string) {
		s = strings.TrimSpace(s)
		if net.ParseIP(s) != nil && !slices.Contains(ips, s) {
			ips = append(ips, s)
		}
	}
	for _, f := range strings.Split(r.Header.Get("X-Forwarded-For"), ",") {
		add(f)
	}
	add(r.Header.Get("X-Real-Ip"))
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		add(host)
	}
	return ips
}

// readRequestObject reads the body for the event and puts it back for
// the handler. JSON and protobuf bodies are logged (as JSON); YAML ones
// are not.
func readRequestObject(r *http.Request, info *request.Info, protobuf func(*request.Info, []byte) ([]byte, bool), omitManagedFields bool) json.RawMessage {
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	data, err := io.ReadAll(r.Body)
	r.Body.Close()
	// The handler sees the same bytes, and the same error (a body over
	// the size limit) after them.
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(data), errReader{err}))
	if err != nil {
		return nil
	}
	return auditedObject(data, r.Header.Get("Content-Type"), info, protobuf, omitManagedFields)
}

// auditedObject is a body as an event records it: JSON, from protobuf
// when need be; nil for anything else.
func auditedObject(body []byte, contentType string, info *request.Info, protobuf func(*request.Info, []byte) ([]byte, bool), omitManagedFields bool) json.RawMessage {
	if strings.HasPrefix(contentType, "application/vnd.kubernetes.protobuf") {
		if protobuf == nil {
			return nil
		}
		data, ok := protobuf(info, body)
		if !ok {
			return nil
		}
		return stripManagedFields(data, omitManagedFields)
	}
	if !json.Valid(body) {
		return nil
	}
	return stripManagedFields(body, omitManagedFields)
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) {
	if e.err == nil {
		return 0, io.EOF
	}
	return 0, e.err
}

// stripManagedFields removes metadata.managedFields from an object, or
// from each item of a list, when omit is set.
func stripManagedFields(data []byte, omit bool) json.RawMessage {
	if !omit || !bytes.Contains(data, []byte(`"managedFields"`)) {
		return bytes.Clone(data)
	}
	var obj map[string]any
	if json.Unmarshal(data, &obj) != nil {
		return bytes.Clone(data)
	}
	strip := func(o any) {
		if m, ok := o.(map[string]any); ok {
			if md, ok := m["metadata"].(map[string]any); ok {
				delete(md, "managedFields")
			}
		}
	}
	strip(obj)
	if items, ok := obj["items"].([]any); ok {
		for _, it := range items {
			strip(it)
		}
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return bytes.Clone(data)
	}
	return out
}

// responseStatus is the event's responseStatus: the Status the handler
// answered with, without its details, or just the code.
func responseStatus(code int, body []byte) *metav1.Status {
	if code >= 300 && len(body) > 0 {
		var s metav1.Status
		if json.Unmarshal(body, &s) == nil && s.Kind == "Status" {
			s.TypeMeta = metav1.TypeMeta{}
			s.Details = nil
			s.Code = int32(code)
			return &s
		}
	}
	return &metav1.Status{Code: int32(code)}
}

// auditWriter remembers the status and, when asked or when the answer is
// an error (to read its Status), the body. It calls started once, when
// the response starts (a watch's first flush). It keeps Flush and Unwrap.
type auditWriter struct {
	http.ResponseWriter
	code     int
	keepBody bool
	body     bytes.Buffer
	overflow bool
	started  func(code int)
}

func (w *auditWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
		if w.started != nil {
			w.started(code)
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *auditWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if (w.keepBody || w.code >= 300) && !w.overflow {
		if w.body.Len()+len(b) > maxAuditedBody {
			w.overflow = true
			w.body = bytes.Buffer{}
		} else {
			w.body.Write(b)
		}
	}
	return w.ResponseWriter.Write(b)
}

func (w *auditWriter) Flush() {
	if w.code == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *auditWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *auditWriter) status() int {
	if w.code == 0 {
		return http.StatusOK
	}
	return w.code
}

var _ http.Flusher = (*auditWriter)(nil)
