package codec

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// line returns the caller's line, so that a failing table case names itself.
func line() int {
	_, _, l, _ := runtime.Caller(1)
	return l
}

// slowSetRV is the reference: decode as the server decodes stored objects,
// set metadata.resourceVersion, encode. ok is false when stored does not
// decode to an object with a metadata object.
func slowSetRV(stored []byte, rv string) ([]byte, bool) {
	var obj map[string]any
	if err := utiljson.Unmarshal(stored, &obj); err != nil || obj == nil {
		return nil, false
	}
	md, ok := obj["metadata"].(map[string]any)
	if !ok {
		return nil, false
	}
	md["resourceVersion"] = rv
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, false
	}
	return b, true
}

// canonicalStored returns data as the server stores it: decoded, without
// resourceVersion when dropRV, and encoded again.
func canonicalStored(data []byte, dropRV bool) ([]byte, bool) {
	var obj map[string]any
	if err := utiljson.Unmarshal(data, &obj); err != nil || obj == nil {
		return nil, false
	}
	if md, ok := obj["metadata"].(map[string]any); ok && dropRV {
		delete(md, "resourceVersion")
	}
	b, err := json.Marshal(obj)
	return b, err == nil
}

func TestSetResourceVersion(t *testing.T) {
	cases := []struct {
		line int
		in   string
		rv   string
		want string // "" means ok=false
	}{
		{line(), `{"metadata":{}}`, "5", `{"metadata":{"resourceVersion":"5"}}`},
		{line(), `{"apiVersion":"v1","kind":"K","metadata":{"name":"a"}}`, "12", `{"apiVersion":"v1","kind":"K","metadata":{"name":"a","resourceVersion":"12"}}`},
		{line(), `{"metadata":{"uid":"u"}}`, "7", `{"metadata":{"resourceVersion":"7","uid":"u"}}`},
		{line(), `{"metadata":{"a":1,"uid":"u","z":[]}}`, "7", `{"metadata":{"a":1,"resourceVersion":"7","uid":"u","z":[]}}`},
		{line(), `{"metadata":{"resourceVersion":"3"}}`, "7", `{"metadata":{"resourceVersion":"7"}}`},
		{line(), `{"metadata":{"name":"a","resourceVersion":{"x":[1,"}"]},"uid":"u"}}`, "7", `{"metadata":{"name":"a","resourceVersion":"7","uid":"u"}}`},
		{line(), `{"metadata":{"resourceVersion":null,"uid":"u"}}`, "8", `{"metadata":{"resourceVersion":"8","uid":"u"}}`},
		{line(), `{"a":{"metadata":{"name":"x"}},"metadata":{"name":"n"},"spec":{"metadata":{"uid":"y"}}}`, "1",
			`{"a":{"metadata":{"name":"x"}},"metadata":{"name":"n","resourceVersion":"1"},"spec":{"metadata":{"uid":"y"}}}`},
		{line(), `{"metadata":{"annotations":{"resourceVersion":"x","uid":"y"},"labels":{"resourceVersion":"z"},"name":"n"}}`, "9",
			`{"metadata":{"annotations":{"resourceVersion":"x","uid":"y"},"labels":{"resourceVersion":"z"},"name":"n","resourceVersion":"9"}}`},
		{line(), `{"metadata":{"annotations":{"a":"b"},"uid":"u"},"z":true}`, "9",
			`{"metadata":{"annotations":{"a":"b"},"resourceVersion":"9","uid":"u"},"z":true}`},
		{line(), `{"metadata":{"name":"a\"b\\c\u003c\u2028"},"spec":"\"metadata\":{}"}`, "2",
			`{"metadata":{"name":"a\"b\\c\u003c\u2028","resourceVersion":"2"},"spec":"\"metadata\":{}"}`},
		{line(), `{"metadata":{"name":"é日本"},"spec":{"ü":"ö"}}`, "2", `{"metadata":{"name":"é日本","resourceVersion":"2"},"spec":{"ü":"ö"}}`},
		// Escaped keys compare by their value: "r\u003c" is "r<", which sorts before "resourceVersion".
		{line(), `{"metadata":{"r\u003c":1,"s":2}}`, "3", `{"metadata":{"r\u003c":1,"resourceVersion":"3","s":2}}`},
		{line(), `{"meta\u0064ata":{"name":"a"}}`, "3", `{"meta\u0064ata":{"name":"a","resourceVersion":"3"}}`},
		{line(), `{"metadata":{"resourceVersio\u006e":"1"}}`, "3", `{"metadata":{"resourceVersion":"3"}}`},
		{line(), `{"metadata":{"name":"a"},"spec":{"n":[-1.5e+10,0,1E-2,true,false,null,[],{}]}}`, "4",
			`{"metadata":{"name":"a","resourceVersion":"4"},"spec":{"n":[-1.5e+10,0,1E-2,true,false,null,[],{}]}}`},
		// rv is encoded as json.Marshal encodes strings.
		{line(), `{"metadata":{}}`, `a"<é`, `{"metadata":{"resourceVersion":"a\"\u003cé"}}`},
		{line(), `{"metadata":{}}`, "", `{"metadata":{"resourceVersion":""}}`},

		// Anything unexpected: the caller falls back.
		{line(), ``, "1", ""},
		{line(), `null`, "1", ""},
		{line(), `[]`, "1", ""},
		{line(), `{}`, "1", ""},
		{line(), `{"kind":"K"}`, "1", ""},
		{line(), `{"metadata":null}`, "1", ""},
		{line(), `{"metadata":"x"}`, "1", ""},
		{line(), `{"metadata":{},"metadata":{}}`, "1", ""},
		{line(), `{"metadata":{"a":1,"a":2}}`, "1", ""},
		{line(), `{"metadata":{"resourceVersion":"1","resourceVersion":"2"}}`, "1", ""},
		{line(), `{"metadata":{"z":1,"a":2}}`, "1", ""},
		{line(), `{"spec":{},"metadata":{}}`, "1", ""},
		{line(), `{"metadata":{}} `, "1", ""},
		{line(), `{ "metadata":{}}`, "1", ""},
		{line(), `{"metadata":{"a" :1}}`, "1", ""},
		{line(), `{"metadata":{}}{}`, "1", ""},
		{line(), `{"metadata":{}`, "1", ""},
		{line(), `{"metadata":{},}`, "1", ""},
		{line(), `{"metadata":{"a":}}`, "1", ""},
		{line(), `{"metadata":{"a":01}}`, "1", ""},
		{line(), `{"metadata":{"a":1.}}`, "1", ""},
		{line(), `{"metadata":{"a":-}}`, "1", ""},
		{line(), `{"metadata":{"a":1e}}`, "1", ""},
		{line(), `{"metadata":{"a":tru}}`, "1", ""},
		{line(), `{"metadata":{"a":"\x"}}`, "1", ""},
		{line(), `{"metadata":{"a":"\u12"}}`, "1", ""},
		{line(), "{\"metadata\":{\"a\":\"\n\"}}", "1", ""},
		{line(), `{"metadata":{"a":[1,]}}`, "1", ""},
		{line(), `{"metadata":{},"spec":` + strings.Repeat("[", maxScanDepth+1) + strings.Repeat("]", maxScanDepth+1) + `}`, "1", ""},
	}
	for _, c := range cases {
		got, ok := SetResourceVersion([]byte(c.in), c.rv)
		if c.want == "" {
			if ok {
				t.Errorf("line %d: SetResourceVersion(%q) = %q, want ok=false", c.line, c.in, got)
			}
			continue
		}
		if !ok || string(got) != c.want {
			t.Errorf("line %d: SetResourceVersion(%q)\n got  %q %v\n want %q", c.line, c.in, got, ok, c.want)
			continue
		}
		// Every accepted case here is semantically what the slow path writes.
		want, _ := slowSetRV([]byte(c.in), c.rv)
		if !jsonEqual(t, got, want) {
			t.Errorf("line %d: result %q differs in value from the slow path's %q", c.line, got, want)
		}
	}
}

// TestSetResourceVersionCanonical checks byte identity on stored forms.
func TestSetResourceVersionCanonical(t *testing.T) {
	for _, in := range []string{
		string(sample2K),
		`{"metadata":{"annotations":{"a<b":"c&d","uid":"x"},"labels":{"k":"v\u2028"},"name":"\u00e9"}}`,
		`{"apiVersion":"v1","kind":"K","metadata":{"zz":1}}`,
		`{"0":1,"metadata":{"":""}}`,
		`{"metadata":{"labels":{}},"spec":{"big":1e30,"f":0.000001,"metadata":{"resourceVersion":"9"},"neg":-7}}`,
	} {
		stored, ok := canonicalStored([]byte(in), true)
		if !ok {
			t.Fatalf("bad test input %q", in)
		}
		for _, rv := range []string{"1", "9223372036854775807", "<&>"} {
			got, ok := SetResourceVersion(stored, rv)
			want, _ := slowSetRV(stored, rv)
			if !ok || !bytes.Equal(got, want) {
				t.Errorf("SetResourceVersion(%s, %q)\n got  %s %v\n want %s", stored, rv, got, ok, want)
			}
			// Replacing the revision of an already versioned object.
			again, ok := SetResourceVersion(got, "42")
			want, _ = slowSetRV(stored, "42")
			if !ok || !bytes.Equal(again, want) {
				t.Errorf("SetResourceVersion(%s, 42)\n got  %s %v\n want %s", got, again, ok, want)
			}
		}
	}
}

func TestSetResourceVersionDoesNotModifyInput(t *testing.T) {
	in := []byte(`{"metadata":{"name":"a","resourceVersion":"1"}}`)
	orig := string(in)
	if _, ok := SetResourceVersion(in[:len(in):len(in)], "2"); !ok {
		t.Fatal("not ok")
	}
	if string(in) != orig {
		t.Fatalf("input modified: %s", in)
	}
}

func TestScanMeta(t *testing.T) {
	cases := []struct {
		line int
		in   string
		want Meta
		ok   bool
	}{
		{line(), `{"apiVersion":"g/v1","kind":"K","metadata":{"labels":{"a":"b","c":""},"name":"n","namespace":"ns"}}`,
			Meta{Name: "n", Namespace: "ns", Labels: map[string]string{"a": "b", "c": ""}, APIVersion: "g/v1"}, true},
		{line(), `{"metadata":{"name":"n"}}`, Meta{Name: "n"}, true},
		{line(), `{}`, Meta{}, true},
		{line(), `{"metadata":null,"apiVersion":1}`, Meta{}, true},
		{line(), `{"metadata":{"labels":{}}}`, Meta{}, true},
		{line(), `{"metadata":{"labels":null,"name":5,"namespace":{"a":"b"}}}`, Meta{}, true},
		{line(), `{"metadata":{"labels":{"a":"b","c":1}}}`, Meta{}, true},
		{line(), `{"metadata":{"labels":{"a":1,"a":"b"}}}`, Meta{Labels: map[string]string{"a": "b"}}, true},
		{line(), `{"metadata":{"labels":{"a":"b","a":1}}}`, Meta{}, true},
		{line(), `{"metadata":{"labels":{"a":"b","a":"c"}}}`, Meta{Labels: map[string]string{"a": "c"}}, true},
		{line(), `{"metadata":{"name":"a"},"metadata":{"namespace":"b"}}`, Meta{Namespace: "b"}, true},
		{line(), `{"metadata":{"name":"a","name":"b"}}`, Meta{Name: "b"}, true},
		{line(), `{"metadata":{"annotations":{"name":"x","uid":"y"},"name":"n"},"spec":{"metadata":{"name":"z"},"name":"w"}}`, Meta{Name: "n"}, true},
		{line(), `{"metadata":{"labels":{"k\"\u00e9":"v\n\u003c\ud83d\ude00"},"name":"\u00e9\ud800x"}}`,
			Meta{Name: "é\uFFFDx", Labels: map[string]string{"k\"é": "v\n<😀"}}, true},
		{line(), "{\"metadata\":{\"name\":\"a\xffb\"}}", Meta{Name: "a\uFFFDb"}, true},
		{line(), `{"metadata":{"n\u0061me":"x"}}`, Meta{Name: "x"}, true},
		{line(), `{"metadata":{"name":"n"}} `, Meta{}, false},
		{line(), `{"metadata":{"name":"n"}`, Meta{}, false},
		{line(), `{"metadata":{"labels":{"a":"b",}}}`, Meta{}, false},
		{line(), `{"metadata":{"labels":{"a":[}}}`, Meta{}, false},
		{line(), `[]`, Meta{}, false},
		{line(), `{"metadata":{}},`, Meta{}, false},
	}
	for _, c := range cases {
		got, ok := ScanMeta([]byte(c.in))
		if ok != c.ok || !reflect.DeepEqual(got, c.want) {
			t.Errorf("line %d: ScanMeta(%q) = %#v, %v; want %#v, %v", c.line, c.in, got, ok, c.want, c.ok)
		}
		if ok {
			if want, wok := slowMeta([]byte(c.in)); !wok || !reflect.DeepEqual(got, want) {
				t.Errorf("line %d: ScanMeta(%q) = %#v; the accessors read %#v", c.line, c.in, got, want)
			}
		}
	}
}

// slowMeta is the reference for ScanMeta: decode, then the accessors.
func slowMeta(data []byte) (Meta, bool) {
	var obj map[string]any
	if err := utiljson.Unmarshal(data, &obj); err != nil || obj == nil {
		return Meta{}, false
	}
	u := &unstructured.Unstructured{Object: obj}
	m := Meta{Name: u.GetName(), Namespace: u.GetNamespace(), APIVersion: u.GetAPIVersion()}
	if l := u.GetLabels(); len(l) > 0 {
		m.Labels = l
	}
	return m, true
}

// jsonEqual reports whether a and b encode the same value: equal once
// decoded and encoded again (1.0 and 1 are the same number to a client).
func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	x, ok := canonicalStored(a, false)
	if !ok {
		t.Fatalf("decoding %q failed", a)
	}
	y, ok := canonicalStored(b, false)
	if !ok {
		t.Fatalf("decoding %q failed", b)
	}
	return bytes.Equal(x, y)
}

func metaSeeds(f *testing.F) {
	for _, s := range []string{
		`{"metadata":{}}`, `{"metadata":{"name":"a","uid":"u"}}`, `{"metadata":{"resourceVersion":"1"}}`,
		`{"a":[1,-2.5e3,true,null,{"b":"\"\\\u00e9"}],"metadata":{"labels":{"x":"y"},"name":"n\n","namespace":"ns"},"z":{}}`,
		`{"meta\u0064ata":{"r\u003c":1}}`, `{"metadata":{},"metadata":{}}`, `{"metadata":{"z":1,"a":2}}`,
		`{"metadata":{"a":1.0,"b":1e2,"c":"<>&","d":"\u2028"}}`, "{\"metadata\":{\"a\":\"\xff\"}}",
		`{"metadata":{"labels":{"a":"b","a":1}}}`, `[1]`, `{"metadata":{"a":`,
	} {
		f.Add([]byte(s), "12")
	}
	f.Add(sample2K, "9223372036854775807")
	f.Add([]byte(`{"metadata":{}}`), "a\"<\xff")
}

// FuzzSetResourceVersion checks that SetResourceVersion never panics, that
// whatever it accepts means what the slow path writes, and that on stored
// forms (what json.Marshal writes) it accepts and is byte-identical to the
// slow path.
func FuzzSetResourceVersion(f *testing.F) {
	metaSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte, rv string) {
		got, ok := SetResourceVersion(data, rv)
		want, wok := slowSetRV(data, rv)
		if ok {
			if !wok {
				t.Fatalf("SetResourceVersion accepted %q, which the slow path cannot handle", data)
			}
			if !jsonEqual(t, got, want) {
				t.Fatalf("SetResourceVersion(%q, %q)\n got  %q\n want %q (in value)", data, rv, got, want)
			}
		}
		for _, dropRV := range []bool{true, false} {
			stored, sok := canonicalStored(data, dropRV)
			if !sok {
				return
			}
			want, wok := slowSetRV(stored, rv)
			got, ok := SetResourceVersion(stored, rv)
			if ok != wok || !bytes.Equal(got, want) {
				t.Fatalf("SetResourceVersion(%q, %q)\n got  %q %v\n want %q %v", stored, rv, got, ok, want, wok)
			}
			checkRVSplice(t, stored, rv, want, wok)
		}
	})
}

// checkRVSplice wants FindResourceVersion to set rv in stored as
// SetResourceVersion does (want, when ok), more than once, and Equal to
// tell want from any other bytes.
func checkRVSplice(t *testing.T, stored []byte, rv string, want []byte, ok bool) {
	t.Helper()
	sp, found := FindResourceVersion(stored)
	if found != ok {
		t.Fatalf("FindResourceVersion(%q) found %v, SetResourceVersion %v", stored, found, ok)
	}
	if !found {
		return
	}
	for range 2 {
		if got := sp.Set(rv); !bytes.Equal(got, want) {
			t.Fatalf("Set(%q) in %q\n got  %q\n want %q", rv, stored, got, want)
		}
	}
	// The parts an answer writes are the same bytes.
	p := sp.Parts(rv)
	var written bytes.Buffer
	if n, err := p.WriteTo(&written); err != nil || n != int64(len(want)) || !bytes.Equal(written.Bytes(), want) {
		t.Fatalf("Parts(%q) in %q wrote %q (%d, %v), want %q", rv, stored, written.Bytes(), n, err, want)
	}
	if p.Len() != len(want) || !bytes.Equal(p.JSON(), want) {
		t.Fatalf("Parts(%q) in %q: Len %d, JSON %q; want %q", rv, stored, p.Len(), p.JSON(), want)
	}
	if !sp.Equal(rv, want) {
		t.Fatalf("Equal(%q, %q) in %q is false", rv, want, stored)
	}
	if sp.Equal(rv+"1", want) || sp.Equal(rv, want[:len(want)-1]) || sp.Equal(rv, append(slices.Clone(want), ' ')) {
		t.Fatalf("Equal in %q holds for bytes other than %q", stored, want)
	}
	for i := range want {
		other := slices.Clone(want)
		other[i] ^= 0x20
		if sp.Equal(rv, other) {
			t.Fatalf("Equal(%q, %q) in %q is true", rv, other, stored)
		}
	}
}

// FuzzScanMeta checks ScanMeta against decoding and the unstructured
// accessors.
func FuzzScanMeta(f *testing.F) {
	metaSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte, _ string) {
		got, ok := ScanMeta(data)
		want, wok := slowMeta(data)
		if ok && (!wok || !reflect.DeepEqual(got, want)) {
			t.Fatalf("ScanMeta(%q) = %#v; decoding reads %#v, %v", data, got, want, wok)
		}
		if stored, sok := canonicalStored(data, false); sok {
			got, ok := ScanMeta(stored)
			want, _ := slowMeta(stored)
			if !ok || !reflect.DeepEqual(got, want) {
				t.Fatalf("ScanMeta(%q) = %#v, %v; want %#v", stored, got, ok, want)
			}
		}
	})
}

// storedSample is sample2K as the server stores it.
func storedSample(b *testing.B) []byte { return mustStored(b, sample2K) }

// mustStored is data as the server stores it.
func mustStored(b *testing.B, data []byte) []byte {
	stored, ok := canonicalStored(data, true)
	if !ok {
		b.Fatal("sample does not decode")
	}
	return stored
}

func BenchmarkSetResourceVersion2K(b *testing.B) {
	stored := storedSample(b)
	b.SetBytes(int64(len(stored)))
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := SetResourceVersion(stored, "123456789"); !ok {
			b.Fatal("not ok")
		}
	}
}

// BenchmarkSetResourceVersionSlow2K is the path SetResourceVersion replaces.
func BenchmarkSetResourceVersionSlow2K(b *testing.B) {
	stored := storedSample(b)
	b.SetBytes(int64(len(stored)))
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := slowSetRV(stored, "123456789"); !ok {
			b.Fatal("not ok")
		}
	}
}

func BenchmarkScanMeta2K(b *testing.B) {
	stored := storedSample(b)
	b.SetBytes(int64(len(stored)))
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := ScanMeta(stored); !ok {
			b.Fatal("not ok")
		}
	}
}

// BenchmarkItemFast2K and BenchmarkItemSlow2K compare what the watch cache
// does per stored event: set the revision and read the indexed fields.
func BenchmarkItemFast2K(b *testing.B) {
	stored := storedSample(b)
	b.SetBytes(int64(len(stored)))
	b.ReportAllocs()
	for b.Loop() {
		out, ok := SetResourceVersion(stored, "123456789")
		if !ok {
			b.Fatal("not ok")
		}
		if _, ok := ScanMeta(out); !ok {
			b.Fatal("not ok")
		}
	}
}

func BenchmarkItemSlow2K(b *testing.B) {
	stored := storedSample(b)
	b.SetBytes(int64(len(stored)))
	b.ReportAllocs()
	for b.Loop() {
		var obj map[string]any
		if err := utiljson.Unmarshal(stored, &obj); err != nil {
			b.Fatal(err)
		}
		obj["metadata"].(map[string]any)["resourceVersion"] = "123456789"
		if _, err := json.Marshal(obj); err != nil {
			b.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: obj}
		_, _, _ = u.GetName(), u.GetNamespace(), u.GetLabels()
	}
}

// MetadataSpan finds the top-level metadata object, whatever precedes it,
// and nothing when there is none (or it is not an object).
func TestMetadataSpan(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{`{"apiVersion":"v1","kind":"X","metadata":{"name":"a","labels":{"x":"}"}},"spec":{}}`, `{"name":"a","labels":{"x":"}"}}`, true},
		{`{"a":{"metadata":{"no":1}},"metadata":{}}`, `{}`, true},
		{`{"metadata":null,"spec":{}}`, ``, false},
		{`{"spec":{"metadata":{}}}`, ``, false},
		{`{"spec":[1,2`, ``, false},
		{`[]`, ``, false},
	} {
		start, end, ok := MetadataSpan([]byte(tc.in))
		if ok != tc.ok || ok && tc.in[start:end] != tc.want {
			t.Errorf("MetadataSpan(%s) = %d, %d, %v; want %s, %v", tc.in, start, end, ok, tc.want, tc.ok)
		}
	}
}

func TestFindPath(t *testing.T) {
	const obj = `{"a":{"b":{"c":[1,{"d":2}]},"s":"x"},"metadata":{"name":"n"},"z":null}`
	for _, tc := range []struct {
		path      string
		want      string
		found, ok bool
	}{
		{"a.b.c", `[1,{"d":2}]`, true, true},
		{"a.s", `"x"`, true, true},
		{"metadata.name", `"n"`, true, true},
		{"z", `null`, true, true},
		{"a.s.t", ``, false, true},   // through a string
		{"a.b.c.d", ``, false, true}, // through an array
		{"a.missing", ``, false, true},
		{"missing.x", ``, false, true},
	} {
		v, found, ok := FindPath([]byte(obj), strings.Split(tc.path, "."))
		if string(v) != tc.want || found != tc.found || ok != tc.ok {
			t.Errorf("FindPath(%s) = %s, %v, %v; want %s, %v, %v", tc.path, v, found, ok, tc.want, tc.found, tc.ok)
		}
	}
	if _, _, ok := FindPath([]byte(`{"a":{"b":}`), []string{"a", "c"}); ok {
		t.Error("malformed input read as well formed")
	}
}

// threeScans is what IndexStored replaces: SetResourceVersion, then
// ScanMeta and MetadataSpan of its result.
func threeScans(stored []byte, rv string) (Indexed, bool) {
	out, ok := SetResourceVersion(stored, rv)
	if !ok {
		return Indexed{}, false
	}
	m, mok := ScanMeta(out)
	start, end, sok := MetadataSpan(out)
	if !mok || !sok {
		// IndexStored promises both succeed after SetResourceVersion.
		return Indexed{JSON: out, MetaStart: -1}, true
	}
	return Indexed{JSON: out, Meta: m, MetaStart: start, MetaEnd: end, Shared: FieldsV1Spans(out, start, end)}, true
}

// checkIndexStored wants IndexStored to return exactly what the three
// scans it replaces return (and the field sets FieldsV1Spans finds in
// their result), whatever buffer it appends to.
func checkIndexStored(t *testing.T, stored []byte, rv string) {
	t.Helper()
	want, wok := threeScans(stored, rv)
	for _, dst := range [][]byte{nil, []byte("left over")[:0]} {
		got, ok := IndexStored(dst, stored, rv)
		if ok != wok || !bytes.Equal(got.JSON, want.JSON) || !reflect.DeepEqual(got.Meta, want.Meta) ||
			got.MetaStart != want.MetaStart || got.MetaEnd != want.MetaEnd || !slices.Equal(got.Shared, want.Shared) {
			t.Fatalf("IndexStored(%q, %q)\n got  %+v %v\n want %+v %v", stored, rv, got, ok, want, wok)
		}
		if ok {
			checkRawManagedFieldsAt(t, got)
		}
	}
}

// checkRawManagedFieldsAt wants x.RawManagedFields where a decode that
// keeps managedFields as a Raw finds them (none when it decodes them),
// and a decode told where they are to give what one that checks them
// gives.
func checkRawManagedFieldsAt(t *testing.T, x Indexed) {
	t.Helper()
	opts := DecodeOptions{RawManagedFields: true, Unchanging: true}
	want, _, werr := Decode(x.JSON, "", opts)
	var at [2]int
	md, _ := want["metadata"].(map[string]any)
	if raw, ok := md["managedFields"].(Raw); ok {
		// A slice of x.JSON (whose capacity ends with it).
		start := int(uintptr(unsafe.Pointer(unsafe.SliceData(raw))) - uintptr(unsafe.Pointer(unsafe.SliceData(x.JSON))))
		at = [2]int{start, start + len(raw)}
	}
	if x.RawManagedFields != at {
		t.Fatalf("IndexStored(%.200q).RawManagedFields = %v, want %v", x.JSON, x.RawManagedFields, at)
	}
	if got := RawManagedFieldsSpan(x.JSON, x.MetaStart, x.MetaEnd); got != at {
		t.Fatalf("RawManagedFieldsSpan(%.200q) = %v, want %v", x.JSON, got, at)
	}
	opts.RawManagedFieldsAt = x.RawManagedFields
	got, _, err := Decode(x.JSON, "", opts)
	if (err == nil) != (werr == nil) || !reflect.DeepEqual(got, want) {
		t.Fatalf("Decode(%.200q) told managedFields are at %v = %v, %v; want %v, %v", x.JSON, x.RawManagedFields, got, err, want, werr)
	}
}

func TestIndexStored(t *testing.T) {
	mf, err := os.ReadFile("testdata/managedfields-widget.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		line int
		in   string
	}{
		{line(), `{"metadata":{}}`},
		{line(), `{"apiVersion":"v1","kind":"K","metadata":{"name":"a"}}`},
		{line(), `{"apiVersion":"g/v1","kind":"K","metadata":{"labels":{"a":"b","c":"d"},"name":"n","namespace":"ns","uid":"u"},"spec":{"x":[1,2]}}`},
		{line(), `{"apiVersion":"g/v1","metadata":{"labels":{"a":"b"},"name":"n","namespace":"ns","resourceVersion":"3","uid":"u"}}`},
		{line(), `{"metadata":{"labels":{"a":"b","a":1},"name":"n"}}`},
		{line(), `{"metadata":{"labels":{"a":1,"b":"c"}}}`},
		{line(), `{"metadata":{"labels":{}}}`},
		{line(), `{"metadata":{"labels":null,"name":null,"namespace":7}}`},
		{line(), `{"apiVersion":["v1"],"metadata":{"name":{"a":"b"}}}`},
		{line(), `{"apiVersion":"v\u0031","metadata":{"l\u0061bels":{"\u00e9":"\n"},"n\u0061me":"\u00e9"}}`},
		{line(), `{"a":[1,-2.5e3,true,null,{"b":"\"\\\u00e9"}],"metadata":{"labels":{"x":"y"},"name":"n\n","namespace":"ns"},"z":{}}`},
		{line(), `{"metadata":{"managedFields":[{"fieldsV1":{"f:metadata":{"f:labels":{".":{}}}},"manager":"m"}],"name":"a"},"spec":{}}`},
		{line(), `{"metadata":{"annotations":{"managedFields":"x"},"managedFields":[{"fieldsV1":{"f:metadata":{"f:labels":{".":{}}}},"manager":"m"}],"name":"a"}}`},
		{line(), `{"metadata":{"name":"a","zz":{"name":"b","labels":{"c":"d"}}},"name":"x"}`},
		// managedFields not as Marshal writes them: decoded, not kept.
		{line(), `{"metadata":{"managedFields":[{"manager":"m","fieldsV1":{"f:a":{}}}],"name":"a"}}`},
		{line(), `{"metadata":{"managedFields":[{"manager":"<m>"}],"name":"a"}}`},
		{line(), `{"metadata":{"managedFields":[{"manager":"\u0061"}],"name":"a"}}`},
		{line(), `{"metadata":{"managedFields":[{"x":1.0}],"name":"a"}}`},
		{line(), `{"metadata":{"managedFields":[{"f":{"a":{},"a":{}}}],"name":"a"}}`},
		{line(), `{"metadata":{"managedFields":[],"name":"a"}}`},
		{line(), `{"metadata":{"managedFields":{"manager":"m"},"name":"a"}}`},
		{line(), `{"metadata":{"managedFields":null,"name":"a"}}`},
		{line(), `{"metadata":{"managedFields":[{"manager":"m"}],"name":"a","managedFields":[{"manager":"n"}]}}`},
		{line(), `{"metadata":{"managedFields":[{"manager":"\u003cm\u003e"}],"name":"a"}}`},
		{line(), `{"metadata":{"managedFields":[` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `],"name":"a"}}`},
		{line(), `{"metadata":{"managedFields":[` + strings.Repeat("[", 62) + strings.Repeat("]", 62) + `],"name":"a"}}`},
		{line(), `{"metadata":{"managedFields":[1],"name":"a"},"metadata":{"managedFields":[2]}}`},
		// Not in the stored form: none is indexed.
		{line(), `{"metadata":{"name":"a"},"apiVersion":"v1"}`},
		{line(), `{"metadata":{"name":"a","labels":{}}}`},
		{line(), `{"metadata":{"labels":{"a":"b"},"name":"a","name":"b"}}`},
		{line(), `{"metadata":{"labels":{"a":tru},"name":"a"}}`},
		{line(), `{"metadata":null}`},
		{line(), `{"metadata":{"name":"a"}} `},
		{line(), `{"apiVersion":"v1"}`},
		{line(), string(sample2K)},
		{line(), string(mf)},
	} {
		for _, rv := range []string{"1", "123456789", `a"<`} {
			t.Run(strconv.Itoa(tc.line), func(t *testing.T) { checkIndexStored(t, []byte(tc.in), rv) })
		}
	}
	// The stored forms of the samples are indexed, and name the fields.
	for _, in := range [][]byte{sample2K, mf} {
		stored, ok := canonicalStored(in, true)
		if !ok {
			t.Fatal("sample does not decode")
		}
		checkIndexStored(t, stored, "42")
		got, ok := IndexStored(nil, stored, "42")
		if !ok || got.Meta.Name == "" || len(got.Meta.Labels) == 0 || got.JSON[got.MetaStart] != '{' || got.JSON[got.MetaEnd-1] != '}' {
			t.Errorf("IndexStored(%.60q...) = %+v, %v; want the sample's name, labels and metadata", stored, got.Meta, ok)
		}
		if r := got.RawManagedFields; r[1] == 0 || !bytes.HasPrefix(got.JSON[r[0]:], []byte(`[{"apiVersion":`)) {
			t.Errorf("IndexStored(%.60q...).RawManagedFields = %v, want where the sample's managedFields are", stored, r)
		}
	}
}

// FuzzIndexStored checks that IndexStored returns what the three scans it
// replaces return, on any input and on its stored form.
func FuzzIndexStored(f *testing.F) {
	metaSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte, rv string) {
		checkIndexStored(t, data, rv)
		if stored, ok := canonicalStored(data, true); ok {
			checkIndexStored(t, stored, rv)
		}
	})
}

// widgetSample is an object as the load generator's are stored
// (managedFields a third of it).
func widgetSample(b *testing.B) []byte {
	mf, err := os.ReadFile("testdata/managedfields-widget.json")
	if err != nil {
		b.Fatal(err)
	}
	return mustStored(b, mf)
}

// BenchmarkIndexStored is what the watch cache does per event with an
// object shaped as the load generator's (managedFields a third of it):
// one scan (new) against the three it replaces (old).
func BenchmarkIndexStored(b *testing.B) {
	stored := widgetSample(b)
	for _, bc := range []struct {
		name  string
		index func([]byte, string) (Indexed, bool)
	}{{"old", threeScans}, {"new", func(stored []byte, rv string) (Indexed, bool) { return IndexStored(nil, stored, rv) }}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(stored)))
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := bc.index(stored, "123456789"); !ok {
					b.Fatal("not ok")
				}
			}
		})
	}
}

// A typed list's item: the object without its top-level apiVersion and
// kind, nested ones kept; anything else is not ok.
func TestWithoutTypeMeta(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"apiVersion":"v1","data":{"kind":"x"},"kind":"ConfigMap","metadata":{"name":"a"}}`, `{"data":{"kind":"x"},"metadata":{"name":"a"}}`},
		{`{"apiVersion":"v1","kind":"K"}`, `{}`},
		{`{"metadata":{}}`, `{"metadata":{}}`},
		{`{"a":1,"kind":"K","z":[{"apiVersion":"x"}]}`, `{"a":1,"z":[{"apiVersion":"x"}]}`},
		{`{}`, `{}`},
		{`[1]`, ""},
		{`{"a":1`, ""},
		{`{"a":1}x`, ""},
	} {
		segs, ok := WithoutTypeMeta([]byte(tc.in))
		if got := string(bytes.Join(segs, nil)); ok != (tc.want != "") || got != tc.want {
			t.Errorf("WithoutTypeMeta(%s) = %s, %v; want %s", tc.in, got, ok, tc.want)
		}
	}
}

func TestFieldsV1Spans(t *testing.T) {
	for _, tc := range []struct {
		obj  string
		want []string
	}{
		{`{"metadata":{"name":"a","managedFields":[{"manager":"m","fieldsV1":{"f:spec":{}}},{"fieldsV1":{"f:x":{}},"manager":"n"}]},"spec":{}}`,
			[]string{`{"f:spec":{}}`, `{"f:x":{}}`}},
		{`{"apiVersion":"v1","metadata":{"managedFields":[]}}`, nil},
		{`{"metadata":{"name":"a"}}`, nil},
		{`{"metadata":{"annotations":{"a":"\"managedFields\":[{\"fieldsV1\":{}}]"}}}`, nil},
		// A key of that name elsewhere in metadata is not the member.
		{`{"metadata":{"annotations":{"managedFields":"x"},"managedFields":[{"fieldsV1":{"f:spec":{}}}],"name":"a"}}`, []string{`{"f:spec":{}}`}},
		// Cut short: what was read before the fault (a cache keeps the
		// bytes whatever they are).
		{`{"metadata":{"managedFields":[{"fieldsV1":{"f:a":{}}}]`, []string{`{"f:a":{}}`}},
	} {
		// Within a larger buffer, as a cache item's bytes may be.
		buf := append([]byte(tc.obj), "....."...)
		obj := buf[:len(tc.obj)]
		start, end, ok := MetadataSpan(obj)
		if !ok {
			// Cut short: the metadata as far as it goes.
			start, end = bytes.Index(obj, []byte(`{"managedFields`)), len(obj)
		}
		var got []string
		for _, sp := range FieldsV1Spans(obj, start, end) {
			got = append(got, string(obj[sp[0]:sp[1]]))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.obj, got, tc.want)
		}
	}
}

// FuzzFieldsV1Spans wants spans within the object and in order, whatever
// its bytes.
func FuzzFieldsV1Spans(f *testing.F) {
	f.Add([]byte(`{"metadata":{"name":"a","managedFields":[{"manager":"m","fieldsV1":{"f:spec":{}}},{"fieldsV1":{"f:x":{}}}]}}`))
	f.Add([]byte(`{"metadata":{"managedFields":[{"fieldsV1":"x"},3,{"a`))
	f.Fuzz(func(t *testing.T, obj []byte) {
		start, end, ok := MetadataSpan(obj)
		if !ok {
			start, end = 0, len(obj)
		}
		from := 0
		for _, sp := range FieldsV1Spans(obj, start, end) {
			if sp[0] < from || sp[1] < sp[0] || sp[1] > len(obj) {
				t.Fatalf("span %v out of order or out of %d bytes (previous ended at %d)", sp, len(obj), from)
			}
			from = sp[1]
		}
	})
}

// BenchmarkDecodeIndexedManagedFields is an update's decode of the object
// it starts from, as the watch cache holds it (the load generator's
// widget), its managedFields kept encoded: checked for Marshal's form
// (checked) or, as IndexStored found them so, not again (known).
func BenchmarkDecodeIndexedManagedFields(b *testing.B) {
	x, ok := IndexStored(nil, widgetSample(b), "123456789")
	if !ok || x.RawManagedFields[1] == 0 {
		b.Fatal("not indexed with its managedFields")
	}
	for _, bc := range []struct {
		name string
		at   [2]int
	}{{"checked", [2]int{}}, {"known", x.RawManagedFields}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(x.JSON)))
			b.ReportAllocs()
			for b.Loop() {
				obj, _, err := Decode(x.JSON, "", DecodeOptions{RawManagedFields: true, RawManagedFieldsAt: bc.at, Unchanging: true})
				if err != nil {
					b.Fatal(err)
				}
				if _, ok := obj["metadata"].(map[string]any)["managedFields"].(Raw); !ok {
					b.Fatal("managedFields decoded")
				}
			}
		})
	}
}
