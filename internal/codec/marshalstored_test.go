package codec

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// checkMarshalStored holds MarshalStored to Marshal and to the scan it
// saves: the same bytes, and the same splice wherever the scan finds one;
// where only MarshalStored finds one, setting a revision through it gives
// what Marshal writes of the object with that revision.
func checkMarshalStored(t *testing.T, data []byte) {
	t.Helper()
	v, _, err := decodeJSON(data, DefaultMaxDepth)
	obj, isObj := v.(map[string]any)
	if err != nil || !isObj {
		return
	}
	want, werr := Marshal(obj)
	got, sp, ok, err := MarshalStored(obj)
	if (err != nil) != (werr != nil) || !bytes.Equal(got, want) {
		t.Fatalf("MarshalStored(%s) = %s, %v; Marshal: %s, %v", data, got, err, want, werr)
	}
	md, hasMeta := obj["metadata"].(map[string]any)
	if err != nil || ok != hasMeta {
		t.Fatalf("MarshalStored(%s): splice found %v, metadata object %v", data, ok, hasMeta)
	}
	if !ok {
		return
	}
	if scanned, sok := FindResourceVersion(got); sok && (scanned.at != sp.at || scanned.to != sp.to || scanned.comma != sp.comma) {
		t.Fatalf("MarshalStored(%s): splice %d %d %d; the scan finds %d %d %d", data, sp.at, sp.to, sp.comma, scanned.at, scanned.to, scanned.comma)
	}
	md["resourceVersion"] = "42"
	withRV, _ := Marshal(obj)
	if set := sp.Set("42"); !bytes.Equal(set, withRV) {
		t.Fatalf("MarshalStored(%s): the splice sets %s; Marshal with the revision: %s", data, set, withRV)
	}
}

func TestMarshalStored(t *testing.T) {
	mf, err := os.ReadFile("testdata/managedfields-widget.json")
	if err != nil {
		t.Fatal(err)
	}
	deep := strings.Repeat("[", maxScanDepth+1) + strings.Repeat("]", maxScanDepth+1)
	for _, in := range []string{
		`{"metadata":{}}`,
		`{"apiVersion":"v1","kind":"K","metadata":{"name":"a"}}`,
		`{"metadata":{"a":1,"uid":"u","z":[]}}`,
		`{"metadata":{"resourceVersion":"3"}}`,
		`{"metadata":{"resourceVersion":"3","uid":"u"}}`,
		`{"metadata":{"name":"a","resourceVersion":{"x":[1,"}"]},"uid":"u"}}`,
		`{"metadata":{"uid":"u"}}`,
		`{"metadata":{"a<":1,"a":2,"z\u00e9":3}}`,
		`{"a<b":1,"a":2,"metadata":{"b":1}}`,
		`{"kind":"K"}`,
		`{"metadata":null}`,
		`{"metadata":[]}`,
		`{"metadata":{"a":` + deep + `}}`,
		`{"metadata":{},"spec":` + deep + `}`,
		string(sample2K),
		string(mf),
	} {
		checkMarshalStored(t, []byte(in))
		if stored, ok := canonicalStored([]byte(in), true); ok {
			checkMarshalStored(t, stored)
		}
	}
}

func FuzzMarshalStored(f *testing.F) {
	metaSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte, _ string) {
		checkMarshalStored(t, data)
	})
}

// BenchmarkMarshalStored is an update's encoding of the object it
// stores: Marshal and then a scan for its resourceVersion, against
// MarshalStored.
func BenchmarkMarshalStored(b *testing.B) {
	data, err := os.ReadFile("testdata/managedfields-widget.json")
	if err != nil {
		b.Fatal(err)
	}
	v, _, err := decodeJSON(data, DefaultMaxDepth)
	if err != nil {
		b.Fatal(err)
	}
	obj := v.(map[string]any)
	delete(obj["metadata"].(map[string]any), "resourceVersion")
	b.Run("scan", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			out, _ := Marshal(obj)
			if _, ok := FindResourceVersion(out); !ok {
				b.Fatal("not found")
			}
		}
	})
	b.Run("noted", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, ok, _ := MarshalStored(obj); !ok {
				b.Fatal("not found")
			}
		}
	})
}
