package codec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"time"
	"unsafe"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func statusOf(t *testing.T, err error) metav1.Status {
	t.Helper()
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		t.Fatalf("error %v (%T) is not an APIStatus", err, err)
	}
	return st.Status()
}

func TestDecode(t *testing.T) {
	cases := []struct {
		name     string
		body     string
		ctype    string
		want     map[string]any
		problems []string
		code     int32  // expected Status code on error
		msg      string // expected error message (substring)
	}{
		{name: "json", body: `{"a":1,"b":1.5,"c":"x","d":true,"e":null,"f":[1,"2"],"g":{}}`, ctype: "application/json",
			want: map[string]any{"a": int64(1), "b": 1.5, "c": "x", "d": true, "e": nil, "f": []any{int64(1), "2"}, "g": map[string]any{}}},
		{name: "empty content type is json", body: `{"a":-0}`, want: map[string]any{"a": int64(0)}},
		{name: "negative zero", body: `{"a":-0.0,"b":-0e5,"c":-1e-400,"d":0.0}`, want: map[string]any{"a": int64(0), "b": int64(0), "c": int64(0), "d": 0.0}},
		{name: "json charset", body: `{"a":"b"}`, ctype: "application/json; charset=utf-8", want: map[string]any{"a": "b"}},
		{name: "numbers", body: `{"i":9223372036854775807,"n":-9223372036854775808,"big":9223372036854775808,"f":1.0,"e":1e3,"E":2E-2}`,
			want: map[string]any{"i": int64(math.MaxInt64), "n": int64(math.MinInt64), "big": 9223372036854775808.0, "f": 1.0, "e": 1000.0, "E": 0.02}},
		{name: "escapes", body: `{"s":"a\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00\ud800x"}`, want: map[string]any{"s": "a\"\\/\b\f\n\r\té😀\uFFFDx"}},
		{name: "invalid utf8 replaced", body: "{\"s\":\"a\xffb\"}", want: map[string]any{"s": "a\uFFFDb"}},
		{name: "yaml", body: "a: 1\nb: [x, 2.5]\nc:\n  d: true\n", ctype: "application/yaml",
			want: map[string]any{"a": int64(1), "b": []any{"x", 2.5}, "c": map[string]any{"d": true}}},

		{name: "duplicate top", body: `{"a":1,"a":2}`, want: map[string]any{"a": int64(2)}, problems: []string{`duplicate field "a"`}},
		{name: "duplicate nested", body: `{"spec":{"replicas":1,"replicas":2}}`,
			want: map[string]any{"spec": map[string]any{"replicas": int64(2)}}, problems: []string{`duplicate field "spec.replicas"`}},
		{name: "duplicate in array", body: `{"spec":{"items":[{},{"name":"a","name":"b"}]}}`,
			want:     map[string]any{"spec": map[string]any{"items": []any{map[string]any{}, map[string]any{"name": "b"}}}},
			problems: []string{`duplicate field "spec.items[1].name"`}},
		{name: "duplicate in nested array", body: `{"a":[[{"x":1,"x":1}]]}`,
			want: map[string]any{"a": []any{[]any{map[string]any{"x": int64(1)}}}}, problems: []string{`duplicate field "a[0][0].x"`}},
		{name: "duplicate reported once", body: `{"a":1,"a":2,"a":3}`, want: map[string]any{"a": int64(3)}, problems: []string{`duplicate field "a"`}},
		{name: "yaml duplicate", body: "a: 1\nspec:\n  r: 1\n  r: 2\n", ctype: "application/yaml",
			want: map[string]any{"a": int64(1), "spec": map[string]any{"r": int64(2)}}, problems: []string{"yaml: unmarshal errors:\n  line 4: key \"r\" already set in map"}},
		// One problem for all the keys, as upstream's Strict message has
		// them; Warnings splits it.
		{name: "yaml duplicates", body: "a: 1\na: 2\nspec:\n  r: 1\n  r: 2\n", ctype: "application/yaml",
			want:     map[string]any{"a": int64(2), "spec": map[string]any{"r": int64(2)}},
			problems: []string{"yaml: unmarshal errors:\n  line 2: key \"a\" already set in map\n  line 5: key \"r\" already set in map"}},

		{name: "malformed", body: `{"a":`, code: 400, msg: "couldn't get version/kind; json parse error: unexpected end of JSON input"},
		{name: "bad char", body: `{"a":x}`, code: 400, msg: "invalid character 'x' looking for beginning of value"},
		{name: "trailing", body: `{} {}`, code: 400, msg: "invalid character '{' after top-level value"},
		{name: "missing comma", body: `{"a":1 "b":2}`, code: 400, msg: "invalid character '\"' after object key:value pair"},
		{name: "bad key", body: `{a:1}`, code: 400, msg: "invalid character 'a' looking for beginning of object key string"},
		{name: "trailing comma", body: `{"a":[1,]}`, code: 400, msg: "invalid character ']' looking for beginning of value"},
		{name: "leading zero", body: `{"a":01}`, code: 400, msg: "invalid character '1' after object key:value pair"},
		{name: "bad literal", body: `{"a":tru}`, code: 400, msg: "invalid character '}' in literal true (expecting 'e')"},
		{name: "control char", body: "{\"a\":\"\n\"}", code: 400, msg: `invalid character '\n' in string literal`},
		{name: "bad escape", body: `{"a":"\x"}`, code: 400, msg: "invalid character 'x' in string escape code"},
		{name: "float overflow", body: `{"a":1e400}`, code: 400, msg: "cannot unmarshal number 1e400"},
		{name: "array body", body: `[]`, code: 400, msg: "json: cannot unmarshal array into Go value of type struct"},
		{name: "null body", body: `null`, code: 400, msg: "Object 'Kind' is missing in 'null'"},
		{name: "empty body", body: ``, code: 400, msg: "unexpected end of JSON input"},
		{name: "malformed yaml", body: "a: [1\n", ctype: "application/yaml", code: 400, msg: "yaml: line 1: did not find expected ',' or ']'"},
		{name: "too deep", body: strings.Repeat(`{"a":`, DefaultMaxDepth+1) + "1" + strings.Repeat("}", DefaultMaxDepth+1), code: 400,
			msg: "invalid character '{' exceeded max depth"},
		{name: "too deep arrays", body: `{"a":` + strings.Repeat("[", DefaultMaxDepth) + strings.Repeat("]", DefaultMaxDepth) + "}", code: 400,
			msg: "exceeded max depth"},
		{name: "protobuf", body: "k8s\x00", ctype: "application/vnd.kubernetes.protobuf", code: 415,
			msg: "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf"},
		{name: "bad content type", body: `{}`, ctype: "application/json; =", code: 415},
		{name: "merge patch is not a body type", body: `{}`, ctype: "application/merge-patch+json", code: 415},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, problems, err := Decode([]byte(tc.body), tc.ctype, DecodeOptions{})
			if tc.code != 0 {
				if err == nil {
					t.Fatalf("want error %d, got %v", tc.code, got)
				}
				st := statusOf(t, err)
				if st.Code != tc.code || !strings.Contains(st.Message, tc.msg) {
					t.Fatalf("got %d %q, want %d containing %q", st.Code, st.Message, tc.code, tc.msg)
				}
				return
			}
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %#v\nwant %#v", got, tc.want)
			}
			if !reflect.DeepEqual(problems, tc.problems) {
				t.Errorf("problems = %q, want %q", problems, tc.problems)
			}
		})
	}
}

func TestDecodeDepthAtLimit(t *testing.T) {
	body := strings.Repeat(`{"a":`, DefaultMaxDepth) + "1" + strings.Repeat("}", DefaultMaxDepth)
	if _, _, err := Decode([]byte(body), "", DecodeOptions{}); err != nil {
		t.Fatalf("depth %d: %v", DefaultMaxDepth, err)
	}
	if _, _, err := Decode([]byte(`{"a":{"b":{}}}`), "", DecodeOptions{MaxDepth: 2}); err == nil {
		t.Fatal("MaxDepth 2 accepted depth 3")
	}
}

func TestDecodeTooLarge(t *testing.T) {
	body := []byte(`{"a":"` + strings.Repeat("x", 100) + `"}`)
	_, _, err := Decode(body, "", DecodeOptions{MaxBytes: 50})
	st := statusOf(t, err)
	if st.Code != http.StatusRequestEntityTooLarge || st.Reason != metav1.StatusReasonRequestEntityTooLarge || st.Message != "Request entity too large: limit is 50" {
		t.Fatalf("got %+v", st)
	}
	big := bytes.Repeat([]byte(" "), DefaultMaxBodyBytes+1)
	_, _, err = Decode(big, "", DecodeOptions{})
	if st := statusOf(t, err); st.Message != "Request entity too large: limit is 3145728" {
		t.Fatalf("got %q", st.Message)
	}
}

func TestDecodeErrorForKind(t *testing.T) {
	_, _, err := Decode([]byte(`{"apiVersion":"v1","kind":`), "", DecodeOptions{})
	var de *DecodeError
	if !errors.As(err, &de) {
		t.Fatalf("got %T", err)
	}
	var se *SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("DecodeError does not unwrap to *SyntaxError: %v", err)
	}
	got := statusOf(t, de.ForKind("Widget")).Message
	want := `the object provided is unrecognized (must be of type Widget): couldn't get version/kind; json parse error: unexpected end of JSON input ({"apiVersion":"v1","kind":)`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestReadBody(t *testing.T) {
	for _, tc := range []struct {
		name   string
		body   string
		length int64
		limit  int64
		code   int32
	}{
		{"fits", "12345", 5, 5, 0},
		{"content-length over", "123456", 6, 5, 413},
		{"chunked over", "123456", -1, 5, 413},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/", strings.NewReader(tc.body))
			r.ContentLength = tc.length
			b, err := ReadBody(r, tc.limit)
			if tc.code == 0 {
				if err != nil || string(b) != tc.body {
					t.Fatalf("got %q, %v", b, err)
				}
				return
			}
			if st := statusOf(t, err); st.Code != tc.code {
				t.Fatalf("got %+v", st)
			}
		})
	}
}

// canonical converts encoding/json's UseNumber output to Decode's number
// rules, for differential checks.
func canonical(v any) (any, bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			c, ok := canonical(e)
			if !ok {
				return nil, false
			}
			x[k] = c
		}
		return x, true
	case []any:
		for i, e := range x {
			c, ok := canonical(e)
			if !ok {
				return nil, false
			}
			x[i] = c
		}
		return x, true
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i, true
		}
		f, err := x.Float64()
		return f, err == nil
	}
	return v, true
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"a":1,"a":2}`, `{"a":[1,2,{"b":null}]}`, `{"s":"\u00e9\ud800"}`, `{"n":-1.5e-3}`,
		`{"a":`, `[1]`, `null`, "{\"s\":\"\xff\"}", `{"a":1e400}`, `{"a":01}`, `{"a":tru}`,
		strings.Repeat("[", 50), `{"a":"\uD83D\uDE00"}`, `{"a":9223372036854775808}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		start := time.Now()
		got, _, err := Decode(data, "", DecodeOptions{MaxDepth: 64})
		if d := time.Since(start); d > time.Second {
			t.Fatalf("Decode took %v on %d bytes", d, len(data))
		}
		if err != nil {
			var st apierrors.APIStatus
			if !errors.As(err, &st) {
				t.Fatalf("error is not a Status: %v", err)
			}
		}
		// Differential check against encoding/json within the depth both allow.
		if depth(data) >= 64 {
			return
		}
		var want any
		var stdErr error
		if !json.Valid(data) {
			stdErr = fmt.Errorf("invalid JSON")
		} else {
			dec := json.NewDecoder(bytes.NewReader(data))
			dec.UseNumber()
			stdErr = dec.Decode(&want)
		}
		wantObj, isObj := want.(map[string]any)
		if stdErr != nil || !isObj {
			if err == nil {
				t.Fatalf("Decode accepted %q; encoding/json: %v (%T)", data, stdErr, want)
			}
			return
		}
		c, ok := canonical(wantObj)
		if !ok { // a number out of float64 range: we refuse it too
			if err == nil {
				t.Fatalf("Decode accepted out-of-range number in %q", data)
			}
			return
		}
		if err != nil {
			t.Fatalf("Decode(%q): %v; encoding/json accepted it", data, err)
		}
		if !reflect.DeepEqual(got, c) {
			t.Fatalf("Decode(%q)\n got  %#v\n want %#v", data, got, c)
		}
	})
}

// depth is a rough upper bound of the nesting of data.
func depth(data []byte) int {
	n, max := 0, 0
	for _, c := range data {
		switch c {
		case '{', '[':
			n++
			if n > max {
				max = n
			}
		case '}', ']':
			n--
		}
	}
	return max
}

// sample2K is a ~2 KB custom resource with the usual shape: metadata with
// labels, annotations and managedFields, a spec and a status.
var sample2K = []byte(`{
  "apiVersion": "example.com/v1",
  "kind": "Widget",
  "metadata": {
    "name": "widget-sample-0001",
    "namespace": "default",
    "uid": "6f1c7e0a-3c0b-4f5e-9a77-0d7b4a5f2c11",
    "resourceVersion": "123456",
    "generation": 3,
    "creationTimestamp": "2026-01-02T03:04:05Z",
    "labels": {"app": "widget", "tier": "backend", "team": "platform", "env": "prod"},
    "annotations": {"example.com/owner": "someone@example.com", "example.com/note": "a longer annotation value with some words in it"},
    "finalizers": ["example.com/cleanup"],
    "managedFields": [
      {"manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": "example.com/v1", "time": "2026-01-02T03:04:05Z",
       "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}, "f:tier": {}}}, "f:spec": {".": {}, "f:replicas": {}, "f:image": {}}}}
    ]
  },
  "spec": {
    "replicas": 3,
    "image": "registry.example.com/widget:v1.2.3",
    "ratio": 0.75,
    "enabled": true,
    "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}, {"name": "metrics", "port": 9090, "protocol": "TCP"}],
    "env": [{"name": "LOG_LEVEL", "value": "info"}, {"name": "FEATURE_X", "value": "true"}, {"name": "ESCAPED", "value": "line\nbreak \"quoted\" \u00e9"}],
    "resources": {"limits": {"cpu": "500m", "memory": "256Mi"}, "requests": {"cpu": "100m", "memory": "128Mi"}},
    "selector": {"matchLabels": {"app": "widget"}},
    "tolerations": [{"key": "example.com/dedicated", "operator": "Equal", "value": "widgets", "effect": "NoSchedule"}]
  },
  "status": {
    "observedGeneration": 3,
    "readyReplicas": 3,
    "conditions": [
      {"type": "Ready", "status": "True", "reason": "AllReplicasReady", "message": "3 of 3 replicas are ready", "lastTransitionTime": "2026-01-02T03:05:00Z"},
      {"type": "Progressing", "status": "False", "reason": "Complete", "message": "rollout complete", "lastTransitionTime": "2026-01-02T03:05:00Z"}
    ]
  }
}`)

func BenchmarkDecode2K(b *testing.B) {
	b.SetBytes(int64(len(sample2K)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Decode(sample2K, "application/json", DecodeOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStdlibUnmarshal2K is the reference point: encoding/json into any,
// without int64 conversion or duplicate detection.
func BenchmarkStdlibUnmarshal2K(b *testing.B) {
	b.SetBytes(int64(len(sample2K)))
	b.ReportAllocs()
	for b.Loop() {
		var v map[string]any
		if err := json.Unmarshal(sample2K, &v); err != nil {
			b.Fatal(err)
		}
	}
}

func TestReadAll(t *testing.T) {
	body := strings.Repeat("abcdefgh", 1000)
	for _, size := range []int64{-1, 0, 10, 7999, 8000, 8001, 1 << 20, 1 << 40} {
		got, err := ReadAll(iotest.OneByteReader(strings.NewReader(body)), size)
		if err != nil || string(got) != body {
			t.Errorf("declared %d: read %d bytes, %v; want the %d-byte body", size, len(got), err, len(body))
		}
	}
	if _, err := ReadAll(iotest.ErrReader(io.ErrUnexpectedEOF), 100); err != io.ErrUnexpectedEOF {
		t.Errorf("a failing reader gave %v", err)
	}
}

// TestDecodeUnchanging: a body its caller never changes is decoded as any
// other, its strings slices of the body; otherwise of a copy of it.
func TestDecodeUnchanging(t *testing.T) {
	body := []byte(`{"metadata":{"name":"a","labels":{"k":"v\n"}},"spec":{"s":"plain"}}`)
	in := func(s string) bool {
		p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
		start := uintptr(unsafe.Pointer(&body[0]))
		return p >= start && p < start+uintptr(len(body))
	}
	want, _, err := Decode(body, "", DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := Decode(body, "", DecodeOptions{Unchanging: true})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded %v, want %v", got, want)
	}
	if s := got["spec"].(map[string]any)["s"].(string); !in(s) {
		t.Error("a string of an unchanging body was copied")
	}
	if s := want["spec"].(map[string]any)["s"].(string); in(s) {
		t.Error("a string of a body its caller may change is a slice of it")
	}
	// Escaped strings are rebuilt either way, and YAML converted.
	if s := got["metadata"].(map[string]any)["labels"].(map[string]any)["k"].(string); s != "v\n" || in(s) {
		t.Errorf("escaped string %q", s)
	}
	y, _, err := Decode([]byte("spec:\n  s: plain\n"), MediaYAML, DecodeOptions{Unchanging: true})
	if err != nil || y["spec"].(map[string]any)["s"] != "plain" {
		t.Errorf("YAML decoded to %v, %v", y, err)
	}
}

func TestWarnings(t *testing.T) {
	for _, tc := range []struct {
		name     string
		problems []string
		want     []string
	}{
		{name: "none"},
		{name: "json", problems: []string{`duplicate field "a"`, `unknown field "b"`}, want: []string{`duplicate field "a"`, `unknown field "b"`}},
		{
			name:     "a yaml problem's lines",
			problems: []string{"yaml: unmarshal errors:\n  line 2: key \"a\" already set in map\n  line 5: key \"r\" already set in map", `unknown field "b"`},
			want:     []string{`line 2: key "a" already set in map`, `line 5: key "r" already set in map`, `unknown field "b"`},
		},
		{
			name:     "the converter's wording",
			problems: []string{"error converting YAML to JSON: yaml: unmarshal errors:\n  line 2: key \"a\" already set in map"},
			want:     []string{`line 2: key "a" already set in map`},
		},
	} {
		if got := Warnings(tc.problems); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
