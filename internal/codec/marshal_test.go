package codec

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

func TestMarshalMatchesEncodingJSON(t *testing.T) {
	for name, v := range map[string]any{
		"null":        nil,
		"object":      map[string]any{"b": int64(1), "a": "x", "c": []any{true, false, nil}, "": map[string]any{}},
		"nil map":     map[string]any{"m": map[string]any(nil), "s": []any(nil)},
		"escapes":     []any{"<script>&", "quote\"back\\slash", "tab\tnl\ncr\r", "\x00\x1f\x7f", "é ü 日本", "\u2028\u2029", "bad \xff utf8"},
		"ints":        []any{int64(0), int64(-1), int64(math.MaxInt64), int64(math.MinInt64), 7},
		"floats":      []any{0.0, -0.0, 1.5, 1e20, 1e21, 1e-6, 1e-7, 123456789.125, -2.5e-300, math.MaxFloat64, math.SmallestNonzeroFloat64},
		"other":       map[string]any{"strs": []string{"a", "b"}, "m": map[string]string{"z": "1", "a": "2"}, "n": json.Number("12")},
		"deep":        map[string]any{"a": map[string]any{"b": map[string]any{"c": []any{map[string]any{"d": "e"}}}}},
		"many":        manyKeys(100),
		"nested many": map[string]any{"x": manyKeys(3), "a": map[string]any{"m": manyKeys(100), "n": manyKeys(70)}, "z": manyKeys(5000)},
		"sort bound":  map[string]any{"twelve": manyKeys(12), "thirteen": manyKeys(13)},
		"key <&>":     map[string]any{"<k>": "&"},
		"unicode k":   map[string]any{"ключ": int64(1), "a": int64(2), "Z": int64(3)},
	} {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Marshal(v)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
	}
}

func manyKeys(n int) map[string]any {
	m := map[string]any{}
	for i := range n {
		m[string(rune('a'+i%26))+string(rune('A'+i/26))] = int64(i)
	}
	return m
}

// TestMarshalAfterError checks that an encoder whose encoding failed half
// way leaves nothing behind for the next one.
func TestMarshalAfterError(t *testing.T) {
	bad := map[string]any{"a": manyKeys(40), "b": map[string]any{"c": manyKeys(30), "d": math.NaN()}}
	good := manyKeys(10)
	want, _ := json.Marshal(good)
	for range 10 {
		if _, err := Marshal(bad); err == nil {
			t.Fatal("NaN encoded")
		}
		if got, err := Marshal(good); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("after a failure: %s, %v; want %s", got, err, want)
		}
	}
}

func TestMarshalRefusesNaN(t *testing.T) {
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		_, err := Marshal(map[string]any{"f": f})
		_, want := json.Marshal(map[string]any{"f": f})
		if err == nil || err.Error() != want.Error() {
			t.Errorf("Marshal(%v) error %v, want %v", f, err, want)
		}
	}
}

// FuzzMarshal decodes arbitrary JSON with our decoder and checks that
// Marshal writes exactly what encoding/json writes for the result.
func FuzzMarshal(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":[true,null,"x<>&"],"c":{"d":1.5e-7}}`, `"\u2028"`, `[1e21,-0,0.1]`, `{"é":"\ud800"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, _, err := decodeJSON(data, DefaultMaxDepth)
		if err != nil {
			return
		}
		want, werr := json.Marshal(v)
		got, gerr := Marshal(v)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("errors differ: %v vs %v", gerr, werr)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("got %s\nwant %s", got, want)
		}
	})
}

func BenchmarkMarshal(b *testing.B) {
	v, _, err := decodeJSON([]byte(benchObject), DefaultMaxDepth)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("codec", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Marshal(v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(v); err != nil {
				b.Fatal(err)
			}
		}
	})
}

const benchObject = `{"apiVersion":"bench.crdserver.io/v1","kind":"Widget","metadata":{"name":"bench-1","namespace":"ns","uid":"0d9e5b0a-9d0e-4b8e-8f3c-3b6f8a1c2d3e","generation":1,"creationTimestamp":"2026-11-21T21:00:00Z","labels":{"app.kubernetes.io/name":"widget","app.kubernetes.io/instance":"bench-1","tier":"frontend"},"annotations":{"bench.crdserver.io/seq":"12","pad":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}},"spec":{"displayName":"Widget number 1","size":"small","replicas":3,"paused":false,"weight":0.75,"endpoints":[{"name":"ep-0","url":"https://ep-0.bench-1.example.com/api","port":8080,"protocol":"TCP"},{"name":"ep-1","url":"https://ep-1.bench-1.example.com/api","port":8081,"protocol":"UDP"}],"selector":{"matchLabels":{"a":"b"}},"env":{"A":"1","B":"2","C":"3"},"tags":["x","y","z"]},"status":{"phase":"Ready","observedGeneration":1}}`

// BenchmarkMarshalManagedFieldsFresh encodes an object with managedFields,
// a dozen levels deep, on a new goroutine each time, as a request's
// goroutine does at the bottom of its stack: the frames of the encoder
// decide whether that stack grows, copying everything above it.
func BenchmarkMarshalManagedFieldsFresh(b *testing.B) {
	v, _, err := decodeJSON([]byte(benchManagedObject), DefaultMaxDepth)
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan error)
	b.ReportAllocs()
	for b.Loop() {
		go func() {
			_, err := Marshal(v)
			done <- err
		}()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
}

const benchManagedObject = `{"apiVersion":"bench.crdserver.io/v1","kind":"Widget","metadata":{"name":"bench-1","namespace":"ns","labels":{"app":"widget","tier":"frontend"},"managedFields":[{"apiVersion":"bench.crdserver.io/v1","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{".":{},"f:app":{},"f:tier":{}}},"f:spec":{".":{},"f:endpoints":{".":{},"k:{\"name\":\"ep-0\"}":{".":{},"f:name":{},"f:port":{},"f:tls":{".":{},"f:ca":{".":{},"f:secret":{".":{},"f:name":{}}}}}},"f:selector":{".":{},"f:matchLabels":{".":{},"f:a":{}}}}},"manager":"bench","operation":"Update","time":"2026-11-21T21:00:00Z"}]},"spec":{"endpoints":[{"name":"ep-0","port":8080,"tls":{"ca":{"secret":{"name":"ca"}}}}],"selector":{"matchLabels":{"a":"b"}}}}`
