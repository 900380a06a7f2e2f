package handler_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/crdserver/crdserver/crdtest"
)

// The handler is tested through a real server: real etcd, real TLS, raw
// HTTP requests, so that every status code, reason and message is what a
// client sees.

type env struct {
	t      *testing.T
	srv    *crdtest.Server
	client *http.Client
}

func newEnv(t *testing.T) *env {
	t.Helper()
	srv := crdtest.Start(t, crdtest.Options{})
	c, err := rest.HTTPClientFor(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, srv: srv, client: c}
}

type req struct {
	method, path, body string
	contentType        string
	accept             string
	userAgent          string
}

type resp struct {
	code   int
	body   []byte
	header http.Header
}

func (e *env) do(r req) resp {
	e.t.Helper()
	hr, err := http.NewRequest(r.method, e.srv.URL+r.path, strings.NewReader(r.body))
	if err != nil {
		e.t.Fatal(err)
	}
	ct := r.contentType
	if ct == "" && r.body != "" {
		ct = "application/json"
	}
	if ct != "" {
		hr.Header.Set("Content-Type", ct)
	}
	if r.accept != "" {
		hr.Header.Set("Accept", r.accept)
	}
	if r.userAgent != "" {
		hr.Header.Set("User-Agent", r.userAgent)
	}
	res, err := e.client.Do(hr)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return resp{code: res.StatusCode, body: b, header: res.Header}
}

func (r resp) obj(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("response is not JSON: %v: %s", err, r.body)
	}
	return m
}

func (r resp) status(t *testing.T) metav1.Status {
	t.Helper()
	var st metav1.Status
	if err := json.Unmarshal(r.body, &st); err != nil || st.Kind != "Status" {
		t.Fatalf("response is not a Status (%v): %s", err, r.body)
	}
	return st
}

func str(v any, path ...string) string {
	for _, p := range path {
		m, _ := v.(map[string]any)
		v = m[p]
	}
	s, _ := v.(string)
	if s == "" && v != nil {
		return fmt.Sprint(v)
	}
	return s
}

func ns(name string) string {
	return fmt.Sprintf(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":%q}}`, name)
}

// errCase is one request expected to fail with a Status.
type errCase struct {
	name    string
	req     req
	code    int
	reason  metav1.StatusReason
	message string // substring
	line    int
}

func at(c errCase) errCase {
	_, _, c.line, _ = runtime.Caller(1)
	return c
}

// checkCases runs each case's request and checks its Status: code, reason
// and a substring of the message.
func (e *env) checkCases(t *testing.T, cases []errCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.do(c.req)
			if r.code != c.code {
				t.Fatalf("line %d: code = %d, want %d: %s", c.line, r.code, c.code, r.body)
			}
			st := r.status(t)
			if st.Reason != c.reason || st.Code != int32(c.code) || st.Status != metav1.StatusFailure {
				t.Errorf("line %d: status = %s/%d/%s, want %s/%d/Failure: %s", c.line, st.Reason, st.Code, st.Status, c.reason, c.code, r.body)
			}
			if !strings.Contains(st.Message, c.message) {
				t.Errorf("line %d: message %q does not contain %q", c.line, st.Message, c.message)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	e := newEnv(t)
	if r := e.do(req{method: "POST", path: "/api/v1/namespaces", body: ns("exists")}); r.code != 201 {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	big := `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"big","annotations":{"a":"` + strings.Repeat("x", 3<<20) + `"}}}`
	deep := strings.Repeat(`{"a":`, 20000) + "1" + strings.Repeat("}", 20000)
	cases := []errCase{
		at(errCase{name: "get missing", req: req{method: "GET", path: "/api/v1/namespaces/missing"}, code: 404, reason: metav1.StatusReasonNotFound, message: `namespaces "missing" not found`}),
		at(errCase{name: "create exists", req: req{method: "POST", path: "/api/v1/namespaces", body: ns("exists")}, code: 409, reason: metav1.StatusReasonAlreadyExists, message: `namespaces "exists" already exists`}),
		at(errCase{name: "invalid name", req: req{method: "POST", path: "/api/v1/namespaces", body: ns("Bad_Name")}, code: 422, reason: metav1.StatusReasonInvalid, message: `metadata.name: Invalid value: "Bad_Name"`}),
		at(errCase{name: "no name", req: req{method: "POST", path: "/api/v1/namespaces", body: `{"apiVersion":"v1","kind":"Namespace","metadata":{}}`}, code: 422, reason: metav1.StatusReasonInvalid, message: "name or generateName is required"}),
		at(errCase{name: "malformed json", req: req{method: "POST", path: "/api/v1/namespaces", body: `{"apiVersion":`}, code: 400, reason: metav1.StatusReasonBadRequest}),
		at(errCase{name: "wrong kind", req: req{method: "POST", path: "/api/v1/namespaces", body: `{"apiVersion":"v1","kind":"Widget","metadata":{"name":"x"}}`}, code: 400, reason: metav1.StatusReasonBadRequest, message: `Widget in version "v1" cannot be handled as a Namespace: no kind "Widget" is registered for version "v1"`}),
		// kube-apiserver 1.37's words for kinds its scheme knows.
		at(errCase{name: "wrong served kind", req: req{method: "POST", path: "/api/v1/namespaces", body: `{"apiVersion":"v1","kind":"NamespaceList","metadata":{"name":"x"}}`}, code: 400, reason: metav1.StatusReasonBadRequest, message: `NamespaceList in version "v1" cannot be handled as a Namespace: converting (v1.NamespaceList) to (core.Namespace): unknown conversion`}),
		at(errCase{name: "wrong apiVersion", req: req{method: "POST", path: "/api/v1/namespaces", body: `{"apiVersion":"v2","kind":"Namespace","metadata":{"name":"x"}}`}, code: 400, reason: metav1.StatusReasonBadRequest}),
		at(errCase{name: "malformed protobuf body", req: req{method: "POST", path: "/api/v1/namespaces", body: "x", contentType: "application/vnd.kubernetes.protobuf"}, code: 400, reason: metav1.StatusReasonBadRequest}),
		at(errCase{name: "unknown body type", req: req{method: "POST", path: "/api/v1/namespaces", body: "x", contentType: "text/csv"}, code: 415, reason: metav1.StatusReasonUnsupportedMediaType}),
		at(errCase{name: "too large", req: req{method: "POST", path: "/api/v1/namespaces", body: big}, code: 413, reason: metav1.StatusReasonRequestEntityTooLarge}),
		at(errCase{name: "too deep", req: req{method: "POST", path: "/api/v1/namespaces", body: deep}, code: 400, reason: metav1.StatusReasonBadRequest}),
		// Upstream's storage refuses it with an error that is not a Status:
		// a 500 with reason Unknown (compat/e2e's requests.txt).
		at(errCase{name: "rv on create", req: req{method: "POST", path: "/api/v1/namespaces", body: `{"metadata":{"name":"x","resourceVersion":"5"}}`}, code: 500, reason: metav1.StatusReasonUnknown, message: "resourceVersion should not be set on objects to be created"}),
		at(errCase{name: "update name mismatch", req: req{method: "PUT", path: "/api/v1/namespaces/exists", body: ns("other")}, code: 400, reason: metav1.StatusReasonBadRequest, message: "does not match the name on the URL"}),
		at(errCase{name: "update stale rv", req: req{method: "PUT", path: "/api/v1/namespaces/exists", body: `{"metadata":{"name":"exists","resourceVersion":"1"}}`}, code: 409, reason: metav1.StatusReasonConflict, message: "the object has been modified"}),
		at(errCase{name: "update missing", req: req{method: "PUT", path: "/api/v1/namespaces/missing", body: ns("missing")}, code: 404, reason: metav1.StatusReasonNotFound}),
		at(errCase{name: "patch unsupported type", req: req{method: "PATCH", path: "/api/v1/namespaces/exists", body: "{}", contentType: "text/plain"}, code: 415, reason: metav1.StatusReasonUnsupportedMediaType}),
		at(errCase{name: "bad json patch", req: req{method: "PATCH", path: "/api/v1/namespaces/exists", body: `{}`, contentType: "application/json-patch+json"}, code: 400, reason: metav1.StatusReasonBadRequest}),
		at(errCase{name: "delete uid precondition", req: req{method: "DELETE", path: "/api/v1/namespaces/exists", body: `{"preconditions":{"uid":"nope"}}`}, code: 409, reason: metav1.StatusReasonConflict, message: `Operation cannot be fulfilled on namespaces "exists": Precondition failed: UID in precondition: nope, UID in object meta: `}),
		at(errCase{name: "delete rv precondition", req: req{method: "DELETE", path: "/api/v1/namespaces/exists", body: `{"preconditions":{"resourceVersion":"1"}}`}, code: 409, reason: metav1.StatusReasonConflict,
			message: `Operation cannot be fulfilled on namespaces "exists": Precondition failed: ResourceVersion in precondition: 1, ResourceVersion in object meta: `}),
		at(errCase{name: "namespaces have no deletecollection", req: req{method: "DELETE", path: "/api/v1/namespaces"}, code: 405, reason: metav1.StatusReasonMethodNotAllowed}),
		at(errCase{name: "delete missing", req: req{method: "DELETE", path: "/api/v1/namespaces/missing"}, code: 404, reason: metav1.StatusReasonNotFound}),
		// As upstream's NamespaceLifecycle admission, dry run or not.
		at(errCase{name: "delete default", req: req{method: "DELETE", path: "/api/v1/namespaces/default"}, code: 403, reason: metav1.StatusReasonForbidden,
			message: `namespaces "default" is forbidden: this namespace may not be deleted`}),
		at(errCase{name: "delete kube-public, dry run", req: req{method: "DELETE", path: "/api/v1/namespaces/kube-public?dryRun=All"}, code: 403, reason: metav1.StatusReasonForbidden,
			message: `namespaces "kube-public" is forbidden: this namespace may not be deleted`}),
		at(errCase{name: "bad dryRun", req: req{method: "POST", path: "/api/v1/namespaces?dryRun=Some", body: ns("dry")}, code: 422, reason: metav1.StatusReasonInvalid,
			message: `CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["Some"]: supported values: "All"`}),
		at(errCase{name: "bad label selector", req: req{method: "GET", path: "/api/v1/namespaces?labelSelector=a%20in%20("}, code: 400, reason: metav1.StatusReasonBadRequest}),
		at(errCase{name: "bad field selector", req: req{method: "GET", path: "/api/v1/namespaces?fieldSelector=spec.x=1"}, code: 400, reason: metav1.StatusReasonBadRequest, message: "field label not supported: spec.x"}),
		at(errCase{name: "bad field selector, metadata alone", req: req{method: "GET", path: "/api/v1/namespaces/default/configmaps?fieldSelector=data.x=1"}, code: 400, reason: metav1.StatusReasonBadRequest,
			message: `"data.x" is not a known field selector: only "metadata.name", "metadata.namespace"`}),
		at(errCase{name: "bad field selector, a Job", req: req{method: "GET", path: "/apis/batch/v1/namespaces/default/jobs?fieldSelector=spec.x=1"}, code: 400, reason: metav1.StatusReasonBadRequest,
			message: `field label "spec.x" not supported for Job`}),
		at(errCase{name: "bad continue", req: req{method: "GET", path: "/api/v1/namespaces?limit=1&continue=garbage"}, code: 400, reason: metav1.StatusReasonBadRequest}),
		at(errCase{name: "strict duplicate field", req: req{method: "POST", path: "/api/v1/namespaces?fieldValidation=Strict", body: `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"dup","name":"dup2"}}`}, code: 400, reason: metav1.StatusReasonBadRequest, message: `duplicate field`}),
		at(errCase{name: "strict unknown field", req: req{method: "POST", path: "/api/v1/namespaces?fieldValidation=Strict", body: `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"unk"},"spec":{"foo":1}}`}, code: 400, reason: metav1.StatusReasonBadRequest, message: `strict decoding error: unknown field "spec.foo"`}),
		at(errCase{name: "field of the wrong type", req: req{method: "POST", path: "/api/v1/namespaces", body: `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"typ"},"spec":{"finalizers":"x"}}`}, code: 400, reason: metav1.StatusReasonBadRequest, message: `Namespace in version "v1" cannot be handled as a Namespace`}),
		at(errCase{name: "bad fieldValidation", req: req{method: "POST", path: "/api/v1/namespaces?fieldValidation=Loud", body: ns("fv")}, code: 422, reason: metav1.StatusReasonInvalid,
			message: `CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "Loud": supported values: "", "Ignore", "Strict", "Warn"`}),
	}
	// Paths no resource has: upstream's REST router serves the core and
	// built-in groups and answers a NotFound Status; under other groups
	// the answer is a plain-text 404 (both as kube-apiserver 1.37 answers).
	for _, path := range []string{"/api/v1/nothings", "/api/v2/namespaces", "/api/v1/namespaces/missing/namespaces"} {
		r := e.do(req{method: "GET", path: path})
		if st := r.status(t); r.code != 404 || st.Reason != metav1.StatusReasonNotFound || st.Message != "the server could not find the requested resource" {
			t.Errorf("GET %s: %d %s, want a NotFound Status", path, r.code, r.body)
		}
	}
	if r := e.do(req{method: "GET", path: "/apis/nope.example.com/v1/things"}); r.code != 404 || string(r.body) != "404 page not found\n" {
		t.Errorf("GET under an unknown group: %d %q, want a plain 404", r.code, r.body)
	}
	if r := e.do(req{method: "POST", path: "/api/v1/namespaces/missing/namespaces", body: ns("x")}); r.code != 404 {
		t.Errorf("create under a namespace path of a cluster resource: %d %s", r.code, r.body)
	}
	e.checkCases(t, cases)
	// Nothing a rejected request sent was stored.
	r := e.do(req{method: "GET", path: "/api/v1/namespaces"})
	for _, it := range r.obj(t)["items"].([]any) {
		switch n := str(it, "metadata", "name"); n {
		case "default", "kube-system", "kube-public", "kube-node-lease", "exists":
		default:
			t.Errorf("rejected request stored namespace %q", n)
		}
	}
}

func TestCRUD(t *testing.T) {
	e := newEnv(t)
	r := e.do(req{method: "POST", path: "/api/v1/namespaces", body: ns("crud")})
	if r.code != 201 {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	o := r.obj(t)
	rv1 := str(o, "metadata", "resourceVersion")
	if str(o, "metadata", "uid") == "" || rv1 == "" || str(o, "metadata", "creationTimestamp") == "" {
		t.Errorf("create did not fill system fields: %s", r.body)
	}
	if got := str(o, "status", "phase"); got != "Active" {
		t.Errorf("phase = %q, want Active", got)
	}

	// Get returns what create answered.
	g := e.do(req{method: "GET", path: "/api/v1/namespaces/crud"}).obj(t)
	if str(g, "metadata", "resourceVersion") != rv1 || str(g, "metadata", "uid") != str(o, "metadata", "uid") {
		t.Errorf("get differs from create: %v", g)
	}

	// Merge patch adds a label and moves resourceVersion.
	r = e.do(req{method: "PATCH", path: "/api/v1/namespaces/crud", body: `{"metadata":{"labels":{"a":"b"}}}`, contentType: "application/merge-patch+json"})
	if r.code != 200 || str(r.obj(t), "metadata", "labels", "a") != "b" {
		t.Fatalf("merge patch: %d %s", r.code, r.body)
	}
	rv2 := str(r.obj(t), "metadata", "resourceVersion")
	if rv2 == rv1 {
		t.Errorf("resourceVersion did not change on patch")
	}
	// JSON patch with a test on the old resourceVersion conflicts.
	r = e.do(req{method: "PATCH", path: "/api/v1/namespaces/crud", contentType: "application/json-patch+json",
		body: `[{"op":"add","path":"/metadata/annotations","value":{"x":"y"}}]`})
	if r.code != 200 || str(r.obj(t), "metadata", "annotations", "x") != "y" {
		t.Fatalf("json patch: %d %s", r.code, r.body)
	}
	// Strategic merge patch works for namespaces (they have a Go type).
	r = e.do(req{method: "PATCH", path: "/api/v1/namespaces/crud", contentType: "application/strategic-merge-patch+json",
		body: `{"metadata":{"labels":{"c":"d"}}}`})
	if r.code != 200 || str(r.obj(t), "metadata", "labels", "c") != "d" || str(r.obj(t), "metadata", "labels", "a") != "b" {
		t.Fatalf("strategic merge patch: %d %s", r.code, r.body)
	}
	// An update that changes nothing writes nothing.
	cur := e.do(req{method: "GET", path: "/api/v1/namespaces/crud"})
	r = e.do(req{method: "PUT", path: "/api/v1/namespaces/crud", body: string(cur.body)})
	if r.code != 200 || str(r.obj(t), "metadata", "resourceVersion") != str(cur.obj(t), "metadata", "resourceVersion") {
		t.Errorf("no-op update moved resourceVersion: %s", r.body)
	}
	// A replacement's uid is a precondition (upstream's store checks it
	// first: a conflict), and a patch may not change it (immutable).
	m := cur.obj(t)
	m["metadata"].(map[string]any)["uid"] = "changed"
	b, _ := json.Marshal(m)
	r = e.do(req{method: "PUT", path: "/api/v1/namespaces/crud", body: string(b)})
	if r.code != 409 || !strings.Contains(string(r.body), "Precondition failed: UID in precondition: changed, UID in object meta: "+str(cur.obj(t), "metadata", "uid")) {
		t.Errorf("uid change by PUT: %d %s", r.code, r.body)
	}
	r = e.do(req{method: "PATCH", path: "/api/v1/namespaces/crud", body: `{"metadata":{"uid":"changed"}}`, contentType: "application/merge-patch+json"})
	if r.code != 422 || !strings.Contains(string(r.body), "field is immutable") {
		t.Errorf("uid change by patch: %d %s", r.code, r.body)
	}

	// Unknown fields of a built-in are dropped, with a warning by default.
	r = e.do(req{method: "POST", path: "/api/v1/namespaces", body: `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"warned"},"spec":{"foo":1}}`})
	if r.code != 201 || !strings.Contains(r.header.Get("Warning"), `unknown field \"spec.foo\"`) {
		t.Errorf("unknown field: %d, Warning %q", r.code, r.header.Get("Warning"))
	}
	if spec, _ := r.obj(t)["spec"].(map[string]any); spec["foo"] != nil {
		t.Errorf("unknown field kept: %s", r.body)
	}

	// dryRun writes nothing.
	r = e.do(req{method: "POST", path: "/api/v1/namespaces?dryRun=All", body: ns("dry")})
	if r.code != 201 {
		t.Fatalf("dry run create: %d %s", r.code, r.body)
	}
	if r := e.do(req{method: "GET", path: "/api/v1/namespaces/dry"}); r.code != 404 {
		t.Errorf("dry run create stored the object: %d", r.code)
	}

	// generateName.
	r = e.do(req{method: "POST", path: "/api/v1/namespaces", body: `{"metadata":{"generateName":"gen-"}}`})
	if r.code != 201 || !strings.HasPrefix(str(r.obj(t), "metadata", "name"), "gen-") || len(str(r.obj(t), "metadata", "name")) != 9 {
		t.Errorf("generateName: %d %s", r.code, r.body)
	}

	// YAML in, YAML out.
	r = e.do(req{method: "POST", path: "/api/v1/namespaces", contentType: "application/yaml", accept: "application/yaml",
		body: "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: yaml\n"})
	if r.code != 201 || !bytes.Contains(r.body, []byte("name: yaml")) {
		t.Errorf("yaml: %d %s", r.code, r.body)
	}

	// Table and metadata-only forms.
	r = e.do(req{method: "GET", path: "/api/v1/namespaces", accept: "application/json;as=Table;v=v1;g=meta.k8s.io"})
	tab := r.obj(t)
	if tab["kind"] != "Table" {
		t.Fatalf("table: %s", r.body)
	}
	cols := tab["columnDefinitions"].([]any)
	if len(cols) != 3 || str(cols[0], "name") != "Name" || str(cols[1], "name") != "Status" || str(cols[2], "name") != "Age" {
		t.Errorf("table columns: %v", cols)
	}
	r = e.do(req{method: "GET", path: "/api/v1/namespaces/crud", accept: "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io"})
	if o := r.obj(t); o["kind"] != "PartialObjectMetadata" || str(o, "metadata", "name") != "crud" || o["spec"] != nil {
		t.Errorf("partial metadata: %s", r.body)
	}
	r = e.do(req{method: "GET", path: "/api/v1/namespaces", accept: "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"})
	if o := r.obj(t); o["kind"] != "PartialObjectMetadataList" {
		t.Errorf("partial metadata list: %s", r.body)
	}

	// Pagination.
	r = e.do(req{method: "GET", path: "/api/v1/namespaces?limit=2"})
	page := r.obj(t)
	if n := len(page["items"].([]any)); n != 2 || str(page, "metadata", "continue") == "" {
		t.Fatalf("page 1: %s", r.body)
	}
	seen := 2
	for cont := str(page, "metadata", "continue"); cont != ""; {
		r = e.do(req{method: "GET", path: "/api/v1/namespaces?limit=2&continue=" + cont})
		page = r.obj(t)
		seen += len(page["items"].([]any))
		cont = str(page, "metadata", "continue")
	}
	all := len(e.do(req{method: "GET", path: "/api/v1/namespaces"}).obj(t)["items"].([]any))
	if seen != all {
		t.Errorf("pages held %d items, list %d", seen, all)
	}

	// Label selector.
	r = e.do(req{method: "GET", path: "/api/v1/namespaces?labelSelector=a%3Db"})
	if items := r.obj(t)["items"].([]any); len(items) != 1 || str(items[0], "metadata", "name") != "crud" {
		t.Errorf("label selector: %s", r.body)
	}
	r = e.do(req{method: "GET", path: "/api/v1/namespaces?fieldSelector=metadata.name%3Dcrud"})
	if items := r.obj(t)["items"].([]any); len(items) != 1 {
		t.Errorf("field selector: %s", r.body)
	}
}

// A small JSON patch whose copies would grow the object without bound is
// refused, and so is one with too many operations; nothing is stored.
func TestJSONPatchLimits(t *testing.T) {
	e := newEnv(t)
	if r := e.do(req{method: "POST", path: "/api/v1/namespaces", body: `{"metadata":{"name":"bomb","annotations":{"a":"` + strings.Repeat("x", 1000) + `"}}}`}); r.code != 201 {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	var ops []string
	ops = append(ops, `{"op":"add","path":"/metadata/labels","value":{}}`)
	for i := 0; i < 30; i++ {
		ops = append(ops, fmt.Sprintf(`{"op":"copy","from":"/metadata/annotations","path":"/spec/c%d"}`, i),
			`{"op":"copy","from":"/spec","path":"/metadata/annotations/n"}`)
	}
	r := e.do(req{method: "PATCH", path: "/api/v1/namespaces/bomb", contentType: "application/json-patch+json", body: "[" + strings.Join(ops, ",") + "]"})
	if r.code < 400 || r.code >= 500 {
		t.Errorf("copy bomb: %d %.200s", r.code, r.body)
	}
	many := strings.Repeat(`{"op":"test","path":"/metadata/name","value":"bomb"},`, 10001)
	r = e.do(req{method: "PATCH", path: "/api/v1/namespaces/bomb", contentType: "application/json-patch+json", body: "[" + strings.TrimSuffix(many, ",") + "]"})
	if r.code != 413 || !strings.Contains(string(r.body), "The allowed maximum operations in a JSON patch is 10000, got 10001") {
		t.Errorf("too many operations: %d %.300s", r.code, r.body)
	}
}

func TestFinalizers(t *testing.T) {
	e := newEnv(t)
	body := `{"metadata":{"name":"fin","finalizers":["example.com/hold"]}}`
	if r := e.do(req{method: "POST", path: "/api/v1/namespaces", body: body}); r.code != 201 {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	// Delete marks it; it stays while finalizers remain.
	r := e.do(req{method: "DELETE", path: "/api/v1/namespaces/fin"})
	if r.code != 200 || str(r.obj(t), "metadata", "deletionTimestamp") == "" {
		t.Fatalf("delete: %d %s", r.code, r.body)
	}
	if str(r.obj(t), "status", "phase") != "Terminating" {
		t.Errorf("phase after delete = %q", str(r.obj(t), "status", "phase"))
	}
	// Creating content in a terminating namespace is forbidden; no new
	// finalizers may be added.
	r = e.do(req{method: "PATCH", path: "/api/v1/namespaces/fin", contentType: "application/merge-patch+json",
		body: `{"metadata":{"finalizers":["example.com/hold","example.com/more"]}}`})
	if r.code != 422 {
		t.Errorf("adding a finalizer while deleting: %d %s", r.code, r.body)
	}
	// Removing the last metadata finalizer lets the controller finish.
	r = e.do(req{method: "PATCH", path: "/api/v1/namespaces/fin", contentType: "application/merge-patch+json",
		body: `{"metadata":{"finalizers":null}}`})
	if r.code != 200 {
		t.Fatalf("removing finalizer: %d %s", r.code, r.body)
	}
	waitGone(t, e, "/api/v1/namespaces/fin")
}

func waitGone(t *testing.T, e *env, path string) {
	t.Helper()
	for i := 0; i < 300; i++ {
		if r := e.do(req{method: "GET", path: path}); r.code == 404 {
			return
		}
		sleep()
	}
	t.Fatalf("%s still exists", path)
}
