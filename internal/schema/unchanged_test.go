package schema

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/crdserver/crdserver/internal/codec"
)

const unchangedSchema = `
type: object
properties:
  spec:
    type: object
    properties:
      size: {type: string, default: m}
      num: {type: integer}
      f: {type: number}
      ok: {type: boolean, nullable: true}
      list:
        type: array
        items:
          type: object
          properties:
            name: {type: string}
            port: {type: integer, default: 80}
      labels:
        type: object
        additionalProperties: {type: string}
      free:
        type: object
        x-kubernetes-preserve-unknown-fields: true
        properties:
          known:
            type: object
            properties:
              a: {type: string, default: x}
      any:
        type: object
        additionalProperties: true
      embedded:
        type: object
        x-kubernetes-embedded-resource: true
        x-kubernetes-preserve-unknown-fields: true
  status:
    type: object
    properties:
      phase: {type: string}
`

// pipeline is what Unchanged stands for: decode, drop metadata, prune,
// default, put metadata back as it was, encode.
func pipeline(t *testing.T, s *Schema, encoded []byte) []byte {
	t.Helper()
	obj, _, err := codec.Decode(encoded, "", codec.DecodeOptions{MaxBytes: math.MaxInt64})
	if err != nil || obj == nil {
		return nil
	}
	// Metadata goes back as it was, whatever its value.
	md, hasMeta, _ := codec.FindPath(encoded, []string{"metadata"})
	delete(obj, "metadata")
	s.Prune(obj)
	s.Default(obj)
	if hasMeta {
		obj["metadata"] = codec.Raw(md)
	}
	out, err := codec.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestUnchanged(t *testing.T) {
	s := mustCompile(t, unchangedSchema)
	for _, tc := range []struct {
		name, in string
		want     bool
	}{
		{caseName("as stored"), `{"apiVersion":"g/v1","kind":"K","metadata":{"z":1,"a":null},"spec":{"list":[{"name":"a","port":1}],"num":-3,"size":"s"}}`, true},
		{caseName("no spec"), `{"apiVersion":"g/v1","kind":"K","status":{"phase":"Up"}}`, true},
		{caseName("default missing"), `{"apiVersion":"g/v1","kind":"K","spec":{"num":1}}`, false},
		{caseName("default missing in an item"), `{"spec":{"list":[{"name":"a"}],"size":"s"}}`, false},
		{caseName("unknown field"), `{"spec":{"size":"s","zzz":1}}`, false},
		{caseName("unknown at the root"), `{"extra":1,"spec":{"size":"s"}}`, false},
		{caseName("additionalProperties"), `{"spec":{"labels":{"a":"b","c":"d"},"size":"s"}}`, true},
		{caseName("preserved unknown"), `{"spec":{"free":{"known":{"a":"y"},"x":{"deep":[1,{"y":true}]}},"size":"s"}}`, true},
		{caseName("default below preserved"), `{"spec":{"free":{"known":{}},"size":"s"}}`, false},
		{caseName("additionalProperties true"), `{"spec":{"any":{"k":{"deep":1}},"size":"s"}}`, false},
		{caseName("additionalProperties true, empty"), `{"spec":{"any":{"k":{}},"size":"s"}}`, true},
		{caseName("embedded"), `{"spec":{"embedded":{"apiVersion":"v1"},"size":"s"}}`, false},
		{caseName("unsorted"), `{"spec":{"size":"s","num":1}}`, false},
		{caseName("repeated"), `{"spec":{"num":1,"num":2,"size":"s"}}`, false},
		{caseName("null"), `{"spec":{"ok":null,"size":"s"}}`, false},
		{caseName("float"), `{"spec":{"f":1.5,"size":"s"}}`, true},
		{caseName("float not as Marshal writes it"), `{"spec":{"f":1.50,"size":"s"}}`, false},
		{caseName("integral float"), `{"spec":{"f":1.0,"size":"s"}}`, false},
		{caseName("exponent"), `{"spec":{"f":1e+21,"size":"s"}}`, true},
		{caseName("exponent not as Marshal writes it"), `{"spec":{"f":1E21,"size":"s"}}`, false},
		{caseName("escaped"), `{"spec":{"size":"\u0073"}}`, false},
		{caseName("html"), `{"spec":{"size":"<b>"}}`, false},
		{caseName("non-ASCII"), `{"spec":{"size":"é"}}`, false},
		{caseName("negative zero"), `{"spec":{"num":-0,"size":"s"}}`, false},
		{caseName("big"), `{"spec":{"num":9223372036854775808,"size":"s"}}`, false},
		{caseName("whitespace"), `{"spec": {"size":"s"}}`, false},
		{caseName("trailing"), `{"spec":{"size":"s"}}x`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := s.Unchanged([]byte(tc.in))
			if got != tc.want {
				t.Errorf("Unchanged = %v, want %v", got, tc.want)
			}
			if got {
				if out := pipeline(t, s, []byte(tc.in)); !bytes.Equal(out, []byte(tc.in)) {
					t.Errorf("unchanged, but the pipeline writes %s", out)
				}
				checkSpan(t, s, []byte(tc.in))
			}
		})
	}
}

// checkSpan holds UnchangedSpan to Unchanged and codec.FindPath on an
// object Unchanged accepts, and its metadata members to codec.EachMember.
func checkSpan(t *testing.T, s *Schema, in []byte) {
	t.Helper()
	start, end, ok := s.UnchangedSpan(in, nil)
	if !ok {
		t.Fatalf("Unchanged accepts %s, UnchangedSpan does not", in)
	}
	md, found, _ := codec.FindPath(in, []string{"metadata"})
	if !found {
		if start != 0 || end != 0 {
			t.Fatalf("UnchangedSpan(%s) = %d, %d, for no metadata", in, start, end)
		}
		return
	}
	if !bytes.Equal(in[start:end], md) || &in[start] != &md[0] {
		t.Fatalf("UnchangedSpan(%s) = %d, %d: %s, not metadata's %s", in, start, end, in[start:end], md)
	}
	var got, want []string
	_, _, ok = s.UnchangedSpan(in, func(name, value []byte) bool {
		got = append(got, string(name)+"="+string(value))
		return true
	})
	if md[0] == '{' {
		codec.EachMember(md, func(name string, value []byte) bool {
			want = append(want, name+"="+string(value))
			return true
		})
	}
	// Names are plain, as the members' reader wants them, at least when
	// metadata is printable ASCII without escapes.
	plain := !bytes.ContainsFunc(md, func(r rune) bool { return r == '\\' || r < 0x20 || r > 0x7e })
	if ok && !slices.Equal(got, want) || !ok && plain {
		t.Fatalf("UnchangedSpan(%s) with members: %v, %q; metadata's members are %q", in, ok, got, want)
	}
}

func TestUnchangedSpan(t *testing.T) {
	s := mustCompile(t, unchangedSchema)
	in := `{"apiVersion":"g/v1","kind":"K","metadata":{"name":"a","labels":{"x":"y"}},"spec":{"size":"s"}}`
	var names []string
	start, end, ok := s.UnchangedSpan([]byte(in), func(name, value []byte) bool {
		names = append(names, string(name)+"="+string(value))
		return true
	})
	if !ok || in[start:end] != `{"name":"a","labels":{"x":"y"}}` {
		t.Errorf("UnchangedSpan = %d, %d, %v: %q", start, end, ok, in[start:end])
	}
	if want := []string{`name="a"`, `labels={"x":"y"}`}; !slices.Equal(names, want) {
		t.Errorf("members %q, want %q", names, want)
	}
	if _, _, ok := s.UnchangedSpan([]byte(in), func(name, _ []byte) bool { return string(name) != "labels" }); ok {
		t.Error("UnchangedSpan accepts what its member function refuses")
	}
	if _, _, ok := s.UnchangedSpan([]byte(`{"metadata":{"\u006eame":"a"}}`), func([]byte, []byte) bool { return true }); ok {
		t.Error("UnchangedSpan gives its member function an escaped name")
	}
	if start, end, ok := s.UnchangedSpan([]byte(`{"spec":{"size":"s"}}`), nil); !ok || start != 0 || end != 0 {
		t.Errorf("no metadata: UnchangedSpan = %d, %d, %v, want 0, 0, true", start, end, ok)
	}
	if _, _, ok := s.UnchangedSpan([]byte(`{"metadata":{},"spec":{"num":1}}`), nil); ok {
		t.Error("UnchangedSpan accepts an object defaulting changes")
	}
}

// FuzzUnchanged: what Unchanged accepts, decoding, pruning, defaulting
// and encoding give back byte for byte.
func FuzzUnchanged(f *testing.F) {
	for _, s := range []string{
		`{"apiVersion":"g/v1","kind":"K","metadata":{"name":"a"},"spec":{"list":[{"name":"a","port":1}],"num":-3,"size":"s"}}`,
		`{"spec":{"free":{"known":{"a":"y"},"x":{"deep":[1,{"y":true}]}},"size":"s"}}`,
		`{"spec":{"any":{"k":{}},"labels":{"a":"b"},"ok":true,"size":"s"},"status":{}}`,
		`{"spec":{"f":-1.5e-7,"num":0,"size":"s"}}`,
		`{"metadata":[1,{"a":"b"}],"spec":{"size":"s"}}`,
	} {
		f.Add([]byte(s))
	}
	s := mustCompile(f, unchangedSchema)
	f.Fuzz(func(t *testing.T, in []byte) {
		if !s.Unchanged(in) {
			return
		}
		if out := pipeline(t, s, in); !bytes.Equal(out, in) {
			t.Fatalf("Unchanged(%s), but the pipeline writes %s", in, out)
		}
		checkSpan(t, s, in)
	})
}

func BenchmarkUnchanged(b *testing.B) {
	s := mustCompile(b, unchangedSchema)
	in := []byte(`{"apiVersion":"g/v1","kind":"K","metadata":{"name":"a"},"spec":{"free":{"known":{"a":"y"}},"labels":{"a":"b","c":"d"},"list":[{"name":"a","port":1},{"name":"b","port":2}],"num":-3,"size":"s"},"status":{"phase":"Up"}}`)
	for b.Loop() {
		if !s.Unchanged(in) {
			b.Fatal("changed")
		}
	}
}

// TestUnchangedAt walks the objects of an array one after another, as a
// webhook's answer is read, metadata found where it is in the answer.
func TestUnchangedAt(t *testing.T) {
	s := mustCompile(t, unchangedSchema)
	in := []byte(`[{"metadata":{"name":"a"},"spec":{"size":"s"}},{"spec":{"size":"s"}},{"spec":{"num":1}}]`)
	tk := codec.MakeTokens(in)
	tk.Consume('[')
	start, end, ok := s.UnchangedAt(&tk, nil)
	if !ok || string(in[start:end]) != `{"name":"a"}` || !tk.Consume(',') {
		t.Fatalf("first: %d, %d, %v", start, end, ok)
	}
	if start, end, ok := s.UnchangedAt(&tk, nil); !ok || start != 0 || end != 0 || !tk.Consume(',') {
		t.Fatalf("second: %d, %d, %v", start, end, ok)
	}
	at := tk
	if _, _, ok := s.UnchangedAt(&tk, nil); ok {
		t.Fatal("third, which defaulting changes, accepted")
	}
	if v, ok := at.Value(); !ok || string(v) != `{"spec":{"num":1}}` || !at.Consume(']') || !at.End() {
		t.Errorf("read again from a copy: %s, %v", v, ok)
	}
}

// TestUnchangedDeep: nesting past the decoders' bound is refused, not
// recursed into (an answer is walked before anything else reads it).
func TestUnchangedDeep(t *testing.T) {
	s := mustCompile(t, unchangedSchema)
	deep := func(n int) []byte {
		return []byte(`{"spec":{"free":{"x":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `},"size":"s"}}`)
	}
	if !s.Unchanged(deep(100)) {
		t.Error("nesting of 100 refused")
	}
	if s.Unchanged(deep(codec.DefaultMaxDepth + 1)) {
		t.Error("nesting past the bound accepted")
	}
}
