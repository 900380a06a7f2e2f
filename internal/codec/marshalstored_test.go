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
	st, err := MarshalStored(obj)
	got, sp, ok := st.JSON, st.RV, st.HasRV
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
	if mf, has := md["managedFields"]; has {
		enc, _ := Marshal(mf)
		if !bytes.Equal(got[st.ManagedFrom:st.ManagedTo], enc) {
			t.Fatalf("MarshalStored(%s): managedFields noted at %d:%d, %s; want %s", data, st.ManagedFrom, st.ManagedTo, got[st.ManagedFrom:st.ManagedTo], enc)
		}
	} else if st.ManagedFrom != st.ManagedTo {
		t.Fatalf("MarshalStored(%s): managedFields noted at %d:%d, none there", data, st.ManagedFrom, st.ManagedTo)
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
			if st, _ := MarshalStored(obj); !st.HasRV {
				b.Fatal("not found")
			}
		}
	})
}

// SameButTimes tells a write that changes only its managedFields' times
// from any other change, however near a time it is.
func TestSameButTimes(t *testing.T) {
	const (
		mf   = `[{"manager":"a","operation":"Apply","time":"2026-01-01T00:00:00Z"},{"fieldsV1":{"f:time":{}},"manager":"time","time":"2026-01-01T00:00:01Z"}]`
		base = `{"metadata":{"managedFields":` + mf + `,"name":"n"},"spec":{"time":"2026-01-01T00:00:00Z"}}`
	)
	from := strings.Index(base, "[")
	to := strings.Index(base, `,"name"`)
	for _, c := range []struct {
		name, b string
		same    bool
	}{
		{"identical", base, true},
		{"one time", strings.Replace(base, "00:00:00Z\"},{", "09:09:09Z\"},{", 1), true},
		{"both times", strings.NewReplacer("00:00:00Z\"},{", "09:09:09Z\"},{", "00:00:01Z", "07:00:01Z").Replace(base), true},
		{"a time of another length", strings.Replace(base, "00:00:00Z\"},{", "00:00:00.5Z\"},{", 1), false},
		{"a time outside managedFields", strings.Replace(base, `"spec":{"time":"2026-01-01T00:00:00Z"`, `"spec":{"time":"2026-01-01T00:00:09Z"`, 1), false},
		{"a manager", strings.Replace(base, `"manager":"a"`, `"manager":"b"`, 1), false},
		{"a field set", strings.Replace(base, `"f:time"`, `"f:tame"`, 1), false},
		{"an operation", strings.Replace(base, `"Apply"`, `"Apple"`, 1), false},
		{"the name", strings.Replace(base, `"name":"n"`, `"name":"m"`, 1), false},
		{"a time and the name", strings.NewReplacer("00:00:01Z", "07:00:01Z", `"name":"n"`, `"name":"m"`).Replace(base), false},
	} {
		if got := SameButTimes([]byte(base), []byte(c.b), from, to); got != c.same {
			t.Errorf("%s: SameButTimes = %v, want %v\n%s\n%s", c.name, got, c.same, base, c.b)
		}
	}
}

// FuzzSameButTimes: whatever it is given, SameButTimes does not panic,
// finds equal bytes the same, and finds bytes the same only where they
// differ inside [from, to).
func FuzzSameButTimes(f *testing.F) {
	f.Add([]byte(`{"metadata":{"managedFields":[{"time":"2026-01-01T00:00:00Z"}]}}`), []byte(`{"metadata":{"managedFields":[{"time":"2026-01-01T00:00:09Z"}]}}`), 29, 62)
	f.Add([]byte(`"time":"a"`), []byte(`"time":"b"`), 0, 10)
	f.Fuzz(func(t *testing.T, a, b []byte, from, to int) {
		from, to = max(0, min(from, len(a))), max(0, min(to, len(a)))
		if !SameButTimes(a, a, from, to) {
			t.Fatal("equal bytes not the same")
		}
		if SameButTimes(a, b, from, to) {
			for i := range a {
				if a[i] != b[i] && (i < from || i >= to) {
					t.Fatalf("same, but they differ at %d, outside %d:%d", i, from, to)
				}
			}
		}
	})
}
