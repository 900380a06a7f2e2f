package zpages

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// line names a table case with the line it is written on.
func line() string {
	_, _, l, _ := runtime.Caller(1)
	return fmt.Sprintf("line %d", l)
}

var (
	started = time.Date(2026, 12, 1, 4, 3, 41, 500_000_000, time.UTC)
	now     = started.Add(time.Hour + 2*time.Minute + 3*time.Second)
)

func testConfig() Config {
	return Config{
		Component: "apiserver",
		Started:   started,
		Now:       func() time.Time { return now },
		Paths: func() []string {
			return []string{"/.well-known/openid-configuration", "/api", "/api/v1", "/apis", "/apis/apps/v1",
				"/flagz", "/healthz", "/healthz/etcd", "/livez", "/metrics", "/metrics/slis", "/openapi/v2",
				"/openapi/v3/", "/openid/v1/jwks", "/readyz", "/statusz", "/version"}
		},
		Flags: func() map[string]string {
			return map[string]string{"secure-port": "6443", "data-dir": "/var/lib/crd", "v": "2"}
		},
	}
}

// fixed is p answering every text request with delimiter delim.
func fixed(p *page, delim string) *page {
	p.delimiter = func() string { return delim }
	return p
}

func serve(h http.Handler, method, target, accept, agent string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	req.Header.Set("User-Agent", agent)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

const (
	v1beta1Statusz  = "application/json;as=Statusz;g=config.k8s.io;v=v1beta1"
	v1alpha1Statusz = "application/json;as=Statusz;g=config.k8s.io;v=v1alpha1"
	deprecation     = `299 - "This version of the statusz endpoint is deprecated. Please use a newer version."`
	notAcceptableJS = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"only the following media types are accepted: application/json, application/yaml, text/plain","reason":"NotAcceptable","code":406}` + "\n"
)

// TestNegotiation checks which form each Accept header gets, as
// kube-apiserver 1.37 negotiates /statusz: JSON and YAML are tried before
// text in each clause, the object only by its kind, and a 406 Status in
// the first form of a Status the header accepts.
func TestNegotiation(t *testing.T) {
	h := fixed(statuszPage(testConfig()), ":")
	for _, tc := range []struct {
		name, accept, target, agent string
		code                        int
		ctype, warning              string
		body                        string // its start
	}{
		{name: line(), code: 200, ctype: "text/plain; charset=utf-8", body: "\napiserver statusz\n"},
		{name: line(), accept: " ", code: 200, ctype: "text/plain; charset=utf-8", body: "\napiserver statusz\n"},
		{name: line(), accept: "*/*", code: 200, ctype: "text/plain; charset=utf-8", body: "\napiserver statusz\n"},
		{name: line(), accept: "text/*", code: 200, ctype: "text/plain; charset=utf-8", body: "\napiserver statusz\n"},
		{name: line(), accept: "text/plain;pretty=1", code: 200, ctype: "text/plain; charset=utf-8", body: "\napiserver statusz\n"},
		{name: line(), accept: "application/json,text/plain", code: 200, ctype: "text/plain; charset=utf-8", body: "\n"},
		{name: line(), accept: "application/json;as=Statusz;g=config.k8s.io;v=v1,*/*", code: 200, ctype: "text/plain; charset=utf-8", body: "\n"},
		{name: line(), accept: v1beta1Statusz, code: 200, ctype: "application/json;g=config.k8s.io;v=v1beta1;as=Statusz", body: `{"kind":"Statusz","apiVersion":"config.k8s.io/v1beta1","metadata":{"name":"apiserver"},`},
		{name: line(), accept: v1alpha1Statusz, code: 200, ctype: "application/json;g=config.k8s.io;v=v1alpha1;as=Statusz", warning: deprecation, body: `{"kind":"Statusz","apiVersion":"config.k8s.io/v1alpha1",`},
		{name: line(), accept: "application/json;v=v1beta1;g=config.k8s.io;as=Statusz;q=0.5,text/plain;q=0.9", code: 200, ctype: "text/plain; charset=utf-8", body: "\n"},
		{name: line(), accept: "*/*;as=Statusz;g=config.k8s.io;v=v1beta1", code: 200, ctype: "application/json;g=config.k8s.io;v=v1beta1;as=Statusz", body: "{"},
		{name: line(), accept: "application/*;as=Statusz;g=config.k8s.io;v=v1beta1", code: 200, ctype: "application/json;g=config.k8s.io;v=v1beta1;as=Statusz", body: "{"},
		{name: line(), accept: "application/yaml;as=Statusz;g=config.k8s.io;v=v1beta1", code: 200, ctype: "application/yaml;g=config.k8s.io;v=v1beta1;as=Statusz", body: "apiVersion: config.k8s.io/v1beta1\n"},
		{name: line(), accept: v1beta1Statusz + ";pretty=1", code: 200, ctype: "application/json;g=config.k8s.io;v=v1beta1;as=Statusz", body: "{\n  \"kind\": \"Statusz\",\n"},
		{name: line(), accept: v1beta1Statusz, target: "/statusz?pretty=1", code: 200, ctype: "application/json;g=config.k8s.io;v=v1beta1;as=Statusz", body: "{\n  \"kind\""},
		{name: line(), accept: v1beta1Statusz, agent: "curl/8.5.0", code: 200, ctype: "application/json;g=config.k8s.io;v=v1beta1;as=Statusz", body: "{\n  \"kind\""},

		// Not acceptable: the Status in the client's form when it takes
		// one, indented JSON when not.
		{name: line(), accept: "application/json", code: 406, ctype: "application/json", body: notAcceptableJS},
		{name: line(), accept: "application/yaml", code: 406, ctype: "application/yaml", body: "apiVersion: v1\ncode: 406\n"},
		{name: line(), accept: "application/json", target: "/statusz?pretty=true", code: 406, ctype: "application/json", body: "{\n  \"kind\": \"Status\""},
		{name: line(), accept: "text/html", code: 406, ctype: "application/json", body: "{\n  \"kind\": \"Status\""},
		{name: line(), accept: "application/vnd.kubernetes.protobuf", code: 406, ctype: "application/json", body: "{\n  \"kind\": \"Status\""},
		{name: line(), accept: "application/json;as=Flagz;g=config.k8s.io;v=v1beta1", code: 406, ctype: "application/json", body: "{\n  \"kind\": \"Status\""},
		{name: line(), accept: "application/json;as=Statusz;g=config.k8s.io;v=v1", code: 406, ctype: "application/json", body: "{\n"},
		{name: line(), accept: "application/json;as=Statusz;g=config.k8s.io", code: 406, ctype: "application/json", body: "{\n"},
		{name: line(), accept: "text/plain;as=Statusz;g=config.k8s.io;v=v1beta1", code: 406, ctype: "application/json", body: "{\n"},
		{name: line(), accept: "text/plain;as=", code: 406, ctype: "application/json", body: "{\n"},
		{name: line(), accept: "text/plain;stream=watch", code: 406, ctype: "application/json", body: "{\n"},
		{name: line(), accept: v1beta1Statusz + ";stream=watch", code: 406, ctype: "application/json", body: "{\n"},
		{name: line(), accept: "application/json;stream=watch", code: 406, ctype: "application/json", body: notAcceptableJS},
		{name: line(), accept: "application/yaml;stream=watch", code: 406, ctype: "application/json", body: "{\n"},
		{name: line(), accept: "application/json;sv=v1", code: 406, ctype: "application/json", body: "{\n"},
		{name: line(), accept: "text/plain;sv=v1", code: 406, ctype: "application/json", body: "{\n"},
		{name: line(), accept: "application/*", code: 406, ctype: "application/json", body: notAcceptableJS},
	} {
		target := tc.target
		if target == "" {
			target = "/statusz"
		}
		rec := serve(h, "GET", target, tc.accept, tc.agent)
		if rec.Code != tc.code || rec.Header().Get("Content-Type") != tc.ctype || rec.Header().Get("Warning") != tc.warning ||
			!strings.HasPrefix(rec.Body.String(), tc.body) {
			t.Errorf("%s: Accept %q: %d %q warning %q %q\nwant %d %q warning %q, starting %q",
				tc.name, tc.accept, rec.Code, rec.Header().Get("Content-Type"), rec.Header().Get("Warning"), rec.Body,
				tc.code, tc.ctype, tc.warning, tc.body)
		}
	}
}

// TestMethods checks that a page answers whatever the method, as
// upstream's mux serves it.
func TestMethods(t *testing.T) {
	h := Statusz(testConfig())
	for _, m := range []string{"GET", "POST", "PUT", "DELETE", "PATCH"} {
		if rec := serve(h, m, "/statusz", "", ""); rec.Code != 200 {
			t.Errorf("%s /statusz: %d, want 200", m, rec.Code)
		}
	}
}

func TestStatuszText(t *testing.T) {
	for _, delim := range delimiters {
		rec := serve(fixed(statuszPage(testConfig()), delim), "GET", "/statusz", "", "")
		want := strings.ReplaceAll(`
apiserver statusz
Warning: This endpoint is not meant to be machine parseable, has no formatting compatibility guarantees and is for debugging purposes only.

Started<D> Tue Dec  1 04:03:41 UTC 2026
Up<D> 1 hr 02 min 03 sec
Go version<D> `+runtime.Version()+`
Binary version<D> 1.37.0+crdserver.dev
Emulation version<D> 1.37
Paths<D> /flagz /healthz /livez /metrics /readyz /statusz /version
`, "<D>", delim)
		if got := rec.Body.String(); got != want {
			t.Errorf("delimiter %q: got\n%q\nwant\n%q", delim, got, want)
		}
	}
}

// TestStatuszEmpty checks the page of the zero Config: no paths leave an
// empty line where they would be listed, and JSON's null.
func TestStatuszEmpty(t *testing.T) {
	p := fixed(statuszPage(Config{}), "=")
	if got := serve(p, "GET", "/statusz", "", "").Body.String(); !strings.HasSuffix(got, "Emulation version= 1.37\n\n") {
		t.Errorf("text ends %q, want an empty line for the paths", got[max(0, len(got)-40):])
	}
	if got := serve(p, "GET", "/statusz", v1beta1Statusz, "").Body.String(); !strings.Contains(got, `"metadata":{"name":""}`) || !strings.HasSuffix(got, `"paths":null}`+"\n") {
		t.Errorf("object %s, want no name and null paths", got)
	}
}

func TestStatuszObject(t *testing.T) {
	rec := serve(Statusz(testConfig()), "GET", "/statusz", v1alpha1Statusz, "")
	want := `{"kind":"Statusz","apiVersion":"config.k8s.io/v1alpha1","metadata":{"name":"apiserver"},` +
		`"startTime":"2026-12-01T04:03:41Z","uptimeSeconds":3723,"goVersion":"` + runtime.Version() + `",` +
		`"binaryVersion":"1.37.0+crdserver.dev","emulationVersion":"1.37",` +
		`"paths":["/flagz","/healthz","/livez","/metrics","/readyz","/statusz","/version"]}` + "\n"
	if got := rec.Body.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestFlagz(t *testing.T) {
	p := fixed(flagzPage(testConfig()), ": ")
	want := "\napiserver flagz\n" + warning + "\ndata-dir: /var/lib/crd\nsecure-port: 6443\nv: 2\n"
	if got := serve(p, "GET", "/flagz", "text/plain", "").Body.String(); got != want {
		t.Errorf("text\n%q\nwant\n%q", got, want)
	}
	rec := serve(p, "GET", "/flagz", "application/json;as=Flagz;g=config.k8s.io;v=v1alpha1", "")
	wantJSON := `{"kind":"Flagz","apiVersion":"config.k8s.io/v1alpha1","metadata":{"name":"apiserver"},"flags":{"data-dir":"/var/lib/crd","secure-port":"6443","v":"2"}}` + "\n"
	if got := rec.Body.String(); got != wantJSON {
		t.Errorf("object\n%s\nwant\n%s", got, wantJSON)
	}
	if got, want := rec.Header().Get("Warning"), `299 - "This version of the flagz endpoint is deprecated. Please use a newer version."`; got != want {
		t.Errorf("warning %q, want %q", got, want)
	}
	if got := serve(p, "GET", "/flagz", v1beta1Statusz, "").Code; got != 406 {
		t.Errorf("flagz as Statusz: %d, want 406", got)
	}
	// No flags: none listed, and none in the object.
	empty := fixed(flagzPage(Config{Component: "apiserver"}), "=")
	if got, want := serve(empty, "GET", "/flagz", "", "").Body.String(), "\napiserver flagz\n"+warning+"\n"; got != want {
		t.Errorf("no flags: %q, want %q", got, want)
	}
	if got, want := serve(empty, "GET", "/flagz", "application/json;as=Flagz;g=config.k8s.io;v=v1beta1", "").Body.String(),
		`{"kind":"Flagz","apiVersion":"config.k8s.io/v1beta1","metadata":{"name":"apiserver"}}`+"\n"; got != want {
		t.Errorf("no flags: %s, want %s", got, want)
	}
}

// TestDelimiters checks that /statusz picks its delimiter per request
// among upstream's, and that /flagz keeps the one it picked first, as
// upstream's cached text does.
func TestDelimiters(t *testing.T) {
	seen := map[string]bool{}
	statusz := Statusz(testConfig())
	for range 200 {
		body := serve(statusz, "GET", "/statusz", "", "").Body.String()
		i := strings.Index(body, "Started")
		d := body[i+len("Started") : strings.Index(body, " Tue")]
		if !slices.Contains(delimiters, d) {
			t.Fatalf("delimiter %q is not upstream's", d)
		}
		seen[d] = true
	}
	if len(seen) != len(delimiters) {
		t.Errorf("200 requests saw delimiters %v, want each of %q", seen, delimiters)
	}
	flagz := Flagz(testConfig())
	first := serve(flagz, "GET", "/flagz", "", "").Body.String()
	for range 50 {
		if got := serve(flagz, "GET", "/flagz", "", "").Body.String(); got != first {
			t.Fatalf("flagz changed from\n%q\nto\n%q", first, got)
		}
	}
}

func TestListedPaths(t *testing.T) {
	for _, tc := range []struct {
		name  string
		paths []string
		want  []string
	}{
		{line(), nil, nil},
		{line(), []string{"/", "/api", "/apis/apps", "/openapi/v3", "/openid/v1/jwks", "/.well-known/openid-configuration"}, nil},
		{line(), []string{"/version", "/healthz/etcd", "/healthz", "/debug/pprof/", "/metrics/slis"}, []string{"/debug", "/healthz", "/metrics", "/version"}},
		{line(), []string{"healthz", "//x"}, nil},
	} {
		if got := listedPaths(tc.paths); !slices.Equal(got, tc.want) {
			t.Errorf("%s: listedPaths(%q) = %q, want %q", tc.name, tc.paths, got, tc.want)
		}
	}
}
