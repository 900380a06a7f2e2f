package handler_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// TestPlainResponses checks the answers that splice the revision into the
// stored bytes (create, get and update as plain JSON) against encoding the
// object they carry, and the forms that still encode it (YAML, pretty).
func TestPlainResponses(t *testing.T) {
	e := newEnv(t)
	reencoded := func(body []byte) []byte {
		t.Helper()
		var obj map[string]any
		if err := utiljson.Unmarshal(body, &obj); err != nil {
			t.Fatalf("response is not JSON: %v: %s", err, body)
		}
		b, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		return append(b, '\n')
	}
	check := func(what string, r resp, code int, rv string) {
		t.Helper()
		if r.code != code {
			t.Fatalf("%s: %d %s", what, r.code, r.body)
		}
		if want := reencoded(r.body); !bytes.Equal(r.body, want) {
			t.Errorf("%s answered\n %s\nencoding its object writes\n %s", what, r.body, want)
		}
		if got := str(r.obj(t), "metadata", "resourceVersion"); rv != "" && got != rv {
			t.Errorf("%s: resourceVersion %q, want %q", what, got, rv)
		}
		if ct := r.header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: Content-Type %q", what, ct)
		}
	}

	created := e.do(req{method: "POST", path: "/api/v1/namespaces", body: `{"metadata":{"name":"plain","labels":{"a":"b"},"annotations":{"resourceVersion":"x","w":"<&>"}}}`})
	check("create", created, 201, "")
	rv := str(created.obj(t), "metadata", "resourceVersion")
	got := e.do(req{method: "GET", path: "/api/v1/namespaces/plain"})
	check("get", got, 200, rv)
	if !bytes.Equal(got.body, created.body) {
		t.Errorf("get answered\n %s\ncreate answered\n %s", got.body, created.body)
	}

	// An update that changes nothing answers with the current object.
	same := e.do(req{method: "PUT", path: "/api/v1/namespaces/plain", body: string(got.body)})
	check("no-op update", same, 200, rv)

	m := got.obj(t)
	m["metadata"].(map[string]any)["labels"] = map[string]any{"a": "c"}
	body, _ := json.Marshal(m)
	updated := e.do(req{method: "PUT", path: "/api/v1/namespaces/plain", body: string(body)})
	check("update", updated, 200, "")
	rv2 := str(updated.obj(t), "metadata", "resourceVersion")
	if rv2 == rv || str(updated.obj(t), "metadata", "labels", "a") != "c" {
		t.Errorf("update answered %s", updated.body)
	}
	check("get after update", e.do(req{method: "GET", path: "/api/v1/namespaces/plain"}), 200, rv2)

	// Pretty JSON and YAML carry the same object.
	pretty := e.do(req{method: "GET", path: "/api/v1/namespaces/plain", accept: "application/json;pretty=1"})
	if pretty.code != 200 || !bytes.Contains(pretty.body, []byte("\n  \"apiVersion\": \"v1\",\n")) || !bytes.Equal(reencoded(pretty.body), updated.body) {
		t.Errorf("pretty get: %d %s", pretty.code, pretty.body)
	}
	y := e.do(req{method: "GET", path: "/api/v1/namespaces/plain", accept: "application/yaml"})
	j, err := yaml.YAMLToJSON(y.body)
	if y.code != 200 || err != nil || !bytes.Equal(reencoded(j), updated.body) {
		t.Errorf("yaml get: %d %v %s", y.code, err, y.body)
	}
}

// TestPrettyAnswers: what a client asks to read indented (?pretty, a curl
// or browser User-Agent, pretty=1 in Accept) is the plain answer indented
// as encoding/json.Indent does, without the final newline, whatever
// writes it: an object as stored, a list streamed from the cache, a Table,
// a metadata list, a subresource, a Status. A watch's events never are.
func TestPrettyAnswers(t *testing.T) {
	e := newWidgetEnv(t)
	if r := e.do(req{method: "POST", path: "/apis/patch.example.com/v1/namespaces/default/widgets",
		body: `{"apiVersion":"patch.example.com/v1","kind":"Widget","metadata":{"name":"w2","annotations":{"a":"<b> & \"c\\\\"}},"spec":{}}`}); r.code != 201 {
		t.Fatalf("creating w2: %d %s", r.code, r.body)
	}
	const table = "application/json;as=Table;v=v1;g=meta.k8s.io"
	const metaList = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"
	widgets := "/apis/patch.example.com/v1/namespaces/default/widgets"
	for _, tc := range []struct {
		path, accept string
	}{
		{widgetPath, ""},
		{widgets, ""},
		{widgets, table},
		{widgets, metaList},
		{widgetPath, table},
		{scalePath, ""},
		{widgets + "/missing", ""},
		{"/api/v1/namespaces/default", ""},
		{"/api/v1/namespaces", ""},
		{"/api/v1/namespaces/default/configmaps/missing", ""},
	} {
		plain := e.do(req{method: "GET", path: tc.path, accept: tc.accept})
		if n := len(plain.body); n == 0 || plain.body[n-1] != '\n' || bytes.Contains(plain.body[:n-1], []byte("\n")) {
			t.Fatalf("GET %s: plain answer %q, want one line and a newline", tc.path, plain.body)
		}
		var want bytes.Buffer
		if err := json.Indent(&want, bytes.TrimSuffix(plain.body, []byte("\n")), "", "  "); err != nil {
			t.Fatal(err)
		}
		sep := "?"
		if strings.Contains(tc.path, "?") {
			sep = "&"
		}
		prettyAccept := "application/json;pretty=1"
		if tc.accept != "" {
			prettyAccept = tc.accept + ";pretty=1"
		}
		for _, r := range []req{
			{method: "GET", path: tc.path, accept: tc.accept, userAgent: "curl/8.5.0"},
			{method: "GET", path: tc.path + sep + "pretty=true", accept: tc.accept},
			{method: "GET", path: tc.path, accept: prettyAccept},
		} {
			got := e.do(r)
			if got.code != plain.code || !bytes.Equal(got.body, want.Bytes()) || got.header.Get("Content-Type") != plain.header.Get("Content-Type") {
				t.Errorf("GET %s (Accept %q, User-Agent %q): %d %s\n%s\nwant %d %s\n%s", r.path, r.accept, r.userAgent,
					got.code, got.header.Get("Content-Type"), got.body, plain.code, plain.header.Get("Content-Type"), want.Bytes())
			}
		}
		// Asked not to, a curl is answered plainly.
		if got := e.do(req{method: "GET", path: tc.path + sep + "pretty=false", accept: tc.accept, userAgent: "curl/8.5.0"}); !bytes.Equal(got.body, plain.body) {
			t.Errorf("GET %s?pretty=false by curl: %s", tc.path, got.body)
		}
	}
	w := e.do(req{method: "GET", path: widgets + "?watch=1&resourceVersion=0&timeoutSeconds=1&pretty=true", userAgent: "curl/8.5.0"})
	if lines := bytes.Split(bytes.TrimSpace(w.body), []byte("\n")); w.code != 200 || len(lines) != 2 || !bytes.HasPrefix(lines[0], []byte(`{"type":"ADDED","object":{`)) {
		t.Errorf("watch by curl: %d %s, want two events of a line each", w.code, w.body)
	}
}
