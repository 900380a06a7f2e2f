package handler_test

import (
	"bytes"
	"encoding/json"
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
