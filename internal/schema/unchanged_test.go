package schema

import (
	"bytes"
	"math"
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
	start, end, hasMeta := codec.MetadataSpan(encoded)
	delete(obj, "metadata")
	s.Prune(obj)
	s.Default(obj)
	if hasMeta {
		obj["metadata"] = codec.Raw(encoded[start:end])
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
			}
		})
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
