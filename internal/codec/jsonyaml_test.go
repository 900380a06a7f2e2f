package codec

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// yamlWay decodes body as a YAML body is decoded without the JSON fast
// path: converted by the YAML parser, then decoded as JSON.
func yamlWay(body []byte) (map[string]any, []string, error) {
	data, problems, err := yamlToJSON(body)
	if err != nil {
		return nil, nil, err
	}
	v, dups, err := decodeJSON(data, DefaultMaxDepth)
	if err != nil {
		return nil, nil, err
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, nil, fmt.Errorf("not an object: %T", v)
	}
	return obj, append(problems, dups...), nil
}

// TestJSONAsYAML: a YAML body that is JSON reads as the YAML parser reads
// it, whether the fast path takes it (fast) or leaves it to the parser.
func TestJSONAsYAML(t *testing.T) {
	cases := []struct {
		where int
		body  string
		fast  bool
	}{
		{line(), `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labels":{"x":"y"}},"data":{"k":"v"}}`, true},
		{line(), "{\n  \"a\": [1, -2, 0, true, false, null, {}, []],\n  \"b\": {\"c\": \"d e\"}\r\n}\n", true},
		{line(), `  {"s":"q\"b\\s\n\r\t\b\f\u00e9\u0000\u2028"}`, true},
		{line(), `{"k:{\"name\":\"ep-0\"}":{".":{}},"v:\"x\"":{}}`, true},
		{line(), `{"n":123456789012345678}`, true},
		{line(), `{"a":"<>&#: - ? | > !x *y &z %"}`, true},
		{line(), `{}`, true},

		// What the YAML parser reads otherwise, or refuses.
		{line(), `{"f":1.0}`, false},                                      // becomes the integer 1
		{line(), `{"f":1e3}`, false},                                      // becomes the integer 1000
		{line(), `{"f":-2E-2,"g":1.5,"h":1e-7,"i":1e300,"j":1e19}`, true}, // floats either way
		{line(), `{"f":-0.0}`, false},                                     // becomes the integer 0
		{line(), `{"f":1e400}`, false},                                    // out of range
		{line(), `{"n":1234567890123456789}`, false},
		{line(), `{"s":"a\/b"}`, false},                            // unknown escape to the parser
		{line(), `{"s":"\ud83d\ude00"}`, false},                    // surrogates refused by the parser
		{line(), "{\"s\":\"\u00e9\"}", false},                      // non-ASCII
		{line(), "{\"s\":\"a\x7fb\"}", false},                      // DEL
		{line(), "{\t\"a\":1}", false},                             // tab
		{line(), "{\"a\"\n:1}", false},                             // key and colon on two lines
		{line(), `{"<<":{"a":1}}`, false},                          // merge key
		{line(), `{"a":1,"a":2}`, false},                           // duplicate: problems differ
		{line(), `[{"a":1}]`, false},                               // not an object
		{line(), `{"a":1} {"b":2}`, false},                         // not one value
		{line(), `{"a":`, false},                                   // malformed
		{line(), `{"` + strings.Repeat("k", 1100) + `":1}`, false}, // a long key
		{line(), strings.Repeat(`{"a":`, 1001) + "1" + strings.Repeat("}", 1001), false},
	}
	for _, tc := range cases {
		body := []byte(tc.body)
		fast, ok := jsonAsYAML(body, DefaultMaxDepth)
		if ok != tc.fast {
			t.Errorf("line %d: fast path taken %v, want %v", tc.where, ok, tc.fast)
		}
		want, wantProblems, wantErr := yamlWay(body)
		got, problems, err := Decode(body, MediaYAML, DecodeOptions{})
		if (err == nil) != (wantErr == nil) {
			t.Errorf("line %d: Decode error %v, the YAML way's %v", tc.where, err, wantErr)
			continue
		}
		if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(problems, wantProblems) {
			t.Errorf("line %d: Decode = %#v, %q; the YAML way %#v, %q", tc.where, got, problems, want, wantProblems)
		}
		if ok && !reflect.DeepEqual(fast, want) {
			t.Errorf("line %d: fast path %#v, the YAML way %#v", tc.where, fast, want)
		}
	}
}

// FuzzJSONAsYAML: whenever the fast path takes a body, the YAML way reads
// it too, to the same object and without problems.
func FuzzJSONAsYAML(f *testing.F) {
	for _, s := range []string{
		`{"apiVersion":"bench.crdserver.io/v1","kind":"Widget","metadata":{"name":"w","annotations":{"a":"1"}},"spec":{"replicas":3,"tags":["a","b"],"paused":false,"x":null}}`,
		"{\n  \"a\": {\n    \"b\": [\n      1,\n      \"c\"\n    ]\n  }\n}\n",
		`{"s":"\"\\\b\f\n\r\t\u0041\u00ff\uffff"}`,
		`{"k:{\"name\":\"x\"}":{".":{}}}`,
		`{"a":-0,"b":0,"c":-12}`,
		`{"":""}`,
		"{\"a\":\"b\"\r\n,\"c\":{}}",
		`{"a":[[],{},[{}]]}`,
		`{"f":1.5,"g":-2E-2,"h":1e19,"i":0.1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fast, ok := jsonAsYAML(body, DefaultMaxDepth)
		if !ok {
			return
		}
		want, problems, err := yamlWay(body)
		if err != nil {
			t.Fatalf("fast path took %q, the YAML way fails: %v", body, err)
		}
		if len(problems) > 0 {
			t.Fatalf("fast path took %q, the YAML way finds %q", body, problems)
		}
		if !reflect.DeepEqual(fast, want) {
			fj, _ := json.Marshal(fast)
			wj, _ := json.Marshal(want)
			t.Fatalf("body %q: fast path %s, the YAML way %s", body, fj, wj)
		}
	})
}

func BenchmarkDecodeApplyBody(b *testing.B) {
	body := []byte(`{"apiVersion":"bench.crdserver.io/v1","kind":"Widget","metadata":{"name":"bench-1","labels":{"app.kubernetes.io/name":"bench","tier":"x"},"annotations":{"bench.crdserver.io/seq":"17"}},"spec":{"replicas":17,"image":"registry.example.com/widget:v1","tags":["a","b","c"],"config":{"retries":3,"timeout":"30s"},"endpoints":[{"name":"ep-0","port":8080,"url":"https://ep-0.example.com"},{"name":"ep-1","port":8081,"url":"https://ep-1.example.com"}]}}`)
	for _, way := range []struct {
		name   string
		decode func() error
	}{
		{"fast", func() error { _, _, err := Decode(body, MediaYAML, DecodeOptions{}); return err }},
		{"yaml", func() error { _, _, err := yamlWay(body); return err }},
	} {
		b.Run(way.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := way.decode(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
