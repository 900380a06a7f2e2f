package codec

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

func TestIndent(t *testing.T) {
	for _, tc := range []struct {
		line     int
		in, want string
	}{
		{line(), `{}`, `{}`},
		{line(), `[]`, `[]`},
		{line(), `"x"`, `"x"`},
		{line(), `-1.5e+30`, `-1.5e+30`},
		{line(), `{"a":1}`, "{\n  \"a\": 1\n}"},
		{line(), `[1,true,null,"s"]`, "[\n  1,\n  true,\n  null,\n  \"s\"\n]"},
		{line(), `{"a":{"b":[1,{"c":2}]},"d":3}`,
			"{\n  \"a\": {\n    \"b\": [\n      1,\n      {\n        \"c\": 2\n      }\n    ]\n  },\n  \"d\": 3\n}"},
		// Empty objects and arrays stay on one line, nested or not.
		{line(), `{"a":{},"b":[],"c":[{}],"d":[[]]}`,
			"{\n  \"a\": {},\n  \"b\": [],\n  \"c\": [\n    {}\n  ],\n  \"d\": [\n    []\n  ]\n}"},
		// Strings are copied as they are: quotes, backslashes, brackets,
		// commas and colons in them are not punctuation.
		{line(), `{"k\"{":"a\\","b":"{[,:]}\"\\\""}`, "{\n  \"k\\\"{\": \"a\\\\\",\n  \"b\": \"{[,:]}\\\"\\\\\\\"\"\n}"},
		{line(), `["\u003cé€😀\n\t"]`, "[\n  \"\\u003cé€😀\\n\\t\"\n]"},
		{line(), `{"sp ace":" x y "}`, "{\n  \"sp ace\": \" x y \"\n}"},
		// Whitespace outside strings goes, the end's too.
		{line(), " {\n\"a\" :\t[ 1 , 2 ] ,\"b\":{ } }\n", "{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": {}\n}"},
	} {
		if got := string(AppendIndent(nil, []byte(tc.in))); got != tc.want {
			t.Errorf("line %d: AppendIndent(%q)\n got %q\nwant %q", tc.line, tc.in, got, tc.want)
		}
		// Written a byte at a time, the output is the same.
		var buf bytes.Buffer
		ind := NewIndenter(&buf)
		for i := range len(tc.in) {
			if i%2 == 0 {
				_ = ind.WriteByte(tc.in[i])
			} else {
				_, _ = ind.WriteString(tc.in[i : i+1])
			}
		}
		if got := buf.String(); got != tc.want {
			t.Errorf("line %d: a byte at a time\n got %q\nwant %q", tc.line, got, tc.want)
		}
		// As upstream indents: encoding/json.MarshalIndent.
		var v any
		if json.Unmarshal([]byte(tc.in), &v) == nil {
			if m, _ := json.MarshalIndent(json.RawMessage(tc.in), "", "  "); string(m) != tc.want {
				t.Errorf("line %d: MarshalIndent writes %q", tc.line, m)
			}
		}
	}
}

// TestIndenterError: the underlying writer's error is returned.
func TestIndenterError(t *testing.T) {
	want := errors.New("gone")
	ind := NewIndenter(failingWriter{want})
	if n, err := ind.Write([]byte(`{}`)); n != 0 || err != want {
		t.Errorf("Write: %d, %v", n, err)
	}
	if err := ind.WriteByte('1'); err != want {
		t.Errorf("WriteByte: %v", err)
	}
}

type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }

// FuzzIndent: for valid JSON, AppendIndent writes what encoding/json.Indent
// does (but for trailing whitespace, which Indent keeps), and the input
// written in two pieces anywhere gives the same bytes; invalid input
// never panics.
func FuzzIndent(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `{"a":[1,{"b":"c\"\\"}],"d":{}}`, ` [ 1 , "\u00e9" ] `, `{"a":`, `}}]]`, `"\`, `[{]`, `{"a" "b"}`} {
		f.Add([]byte(s), uint16(1))
	}
	f.Fuzz(func(t *testing.T, in []byte, cut uint16) {
		got := AppendIndent(nil, in)
		at := int(cut) % (len(in) + 1)
		var buf bytes.Buffer
		ind := NewIndenter(&buf)
		_, _ = ind.Write(in[:at])
		_, _ = ind.Write(in[at:])
		if !bytes.Equal(buf.Bytes(), got) {
			t.Fatalf("%q cut at %d: %q, whole: %q", in, at, buf.Bytes(), got)
		}
		if !json.Valid(in) {
			return
		}
		var want bytes.Buffer
		if err := json.Indent(&want, in, "", "  "); err != nil {
			t.Fatalf("json.Indent(%q): %v", in, err)
		}
		if w := bytes.TrimRight(want.Bytes(), " \t\r\n"); !bytes.Equal(got, w) {
			t.Fatalf("AppendIndent(%q)\n got %q\nwant %q", in, got, w)
		}
	})
}
