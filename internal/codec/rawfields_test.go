package codec

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
)

// decodeBoth decodes body without and with RawManagedFields.
func decodeBoth(body []byte) (plain, raw map[string]any, plainProblems, rawProblems []string, plainErr, rawErr error) {
	plain, plainProblems, plainErr = Decode(body, "", DecodeOptions{})
	raw, rawProblems, rawErr = Decode(body, "", DecodeOptions{RawManagedFields: true})
	return
}

// materialized returns obj with a Raw managedFields decoded.
func materialized(t testing.TB, obj map[string]any) map[string]any {
	md, _ := obj["metadata"].(map[string]any)
	r, ok := md["managedFields"].(Raw)
	if !ok {
		return obj
	}
	v, err := DecodeRaw(r)
	if err != nil {
		t.Fatalf("decoding the Raw %s: %v", r, err)
	}
	out := map[string]any{}
	for k, x := range obj {
		out[k] = x
	}
	md2 := map[string]any{}
	for k, x := range md {
		md2[k] = x
	}
	md2["managedFields"] = v
	out["metadata"] = md2
	return out
}

func TestRawManagedFields(t *testing.T) {
	stored, err := os.ReadFile("testdata/managedfields-widget.json")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		line int
		body string
		raw  bool // whether managedFields stays a Raw
	}{
		{line(), string(stored), true},
		{line(), `{"metadata":{"managedFields":[{"a":1,"b":[true,false,null,-2,1.5,"x"]}],"name":"n"}}`, true},
		{line(), `{"metadata":{"managedFields":[{"k:{\"name\":\"a\"}":{},"v:\"\u003c\"":{}}]}}`, true},
		{line(), `{"metadata":{"managedFields":[{"\u00e9":1}]}}`, false}, // Marshal writes é as it is
		{line(), "{\"metadata\":{\"managedFields\":[{\"é\":1}]}}", true},
		{line(), `{"metadata":{"managedFields":[{"b":1,"a":2}]}}`, false}, // unsorted
		{line(), `{"metadata":{"managedFields":[{"a":1,"a":2}]}}`, false}, // duplicate
		{line(), `{"metadata":{"managedFields":[{"a":1.0}]}}`, false},     // 1.0 is written 1
		{line(), `{"metadata":{"managedFields":[{"a":"<"}]}}`, false},     // written \u003c
		{line(), `{"metadata":{"managedFields":[{"a":"\/"}]}}`, false},    // written /
		{line(), `{"metadata":{"managedFields":[ {"a":1}]}}`, false},      // not compact
		{line(), `{"metadata":{"managedFields":[]}}`, false},              // empty: a reset
		{line(), `{"metadata":{"managedFields":{}}}`, false},              // not a list
		{line(), `{"metadata":{"managedFields":null}}`, false},
		{line(), `{"metadata":{"x":{"managedFields":[{"a":1}]}}}`, false}, // not metadata's own
		{line(), `{"spec":{"metadata":{"managedFields":[{"a":1}]}}}`, false},
		{line(), `{"metadata":{"managedFields":[{"a":1}],"managedFields":[{"b":1}]}}`, true}, // duplicate field: reported alike
		{line(), `{"metadata":{"managedFields":[{"a":1}`, false},                             // malformed: the same error
		{line(), `{"metadata":{"managedFields":[{"a":01}]}}`, false},
		{line(), `{"metadata":{"managedFields":[` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `]}}`, false}, // too deep to keep
	}
	for _, tc := range cases {
		body := []byte(tc.body)
		plain, raw, pp, rp, pe, re := decodeBoth(body)
		if (pe == nil) != (re == nil) || (pe != nil && pe.Error() != re.Error()) {
			t.Errorf("line %d: errors %v and %v", tc.line, pe, re)
			continue
		}
		if !reflect.DeepEqual(pp, rp) {
			t.Errorf("line %d: problems %q and %q", tc.line, pp, rp)
		}
		if pe != nil {
			continue
		}
		md, _ := raw["metadata"].(map[string]any)
		_, isRaw := md["managedFields"].(Raw)
		if isRaw != tc.raw {
			t.Errorf("line %d: managedFields kept raw %v, want %v", tc.line, isRaw, tc.raw)
		}
		if !reflect.DeepEqual(materialized(t, raw), plain) {
			t.Errorf("line %d: decoded %#v, want %#v", tc.line, materialized(t, raw), plain)
		}
		a, err1 := Marshal(plain)
		b, err2 := Marshal(raw)
		if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
			t.Errorf("line %d: Marshal gives\n%s (%v) decoded, and\n%s (%v) with the Raw", tc.line, a, err1, b, err2)
		}
		c, err := json.Marshal(raw)
		if err != nil || !bytes.Equal(a, c) {
			t.Errorf("line %d: encoding/json gives %s (%v), want %s", tc.line, c, err, a)
		}
		if r, ok := md["managedFields"].(Raw); ok {
			checkRawWalks(t, r)
		}
	}
}

// FuzzRawManagedFields: keeping managedFields raw changes nothing anyone
// can see: the same errors and problems, the same values once decoded,
// the same bytes once encoded.
func FuzzRawManagedFields(f *testing.F) {
	stored, err := os.ReadFile("testdata/managedfields-widget.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(stored)
	for _, s := range []string{
		`{"metadata":{"managedFields":[{"apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{".":{},"f:x":{}}},"manager":"m","operation":"Update","time":"2026-01-01T00:00:00Z"}]}}`,
		`{"metadata":{"managedFields":[{"k:{\"name\":\"a\"}":{},"v:\"\u003c\"":{}}]}}`,
		`{"metadata":{"managedFields":[{"a":1,"b":[true,false,null,-2,1.5,"x","\u0000\n\u2028é"]}]}}`,
		`{"metadata":{"managedFields":[{"a":1,"a":2}],"managedFields":[]}}`,
		`{"metadata":{"managedFields":[1e3,-0,0.1,1E-7]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		plain, raw, pp, rp, pe, re := decodeBoth(body)
		if (pe == nil) != (re == nil) || (pe != nil && pe.Error() != re.Error()) {
			t.Fatalf("errors %v and %v", pe, re)
		}
		if pe != nil {
			return
		}
		if !reflect.DeepEqual(pp, rp) {
			t.Fatalf("problems %q and %q", pp, rp)
		}
		if !reflect.DeepEqual(materialized(t, raw), plain) {
			t.Fatalf("decoded %#v, want %#v", materialized(t, raw), plain)
		}
		a, err1 := Marshal(plain)
		b, err2 := Marshal(raw)
		if (err1 == nil) != (err2 == nil) || !bytes.Equal(a, b) {
			t.Fatalf("Marshal gives\n%s (%v) decoded, and\n%s (%v) with the Raw", a, err1, b, err2)
		}
		md, _ := raw["metadata"].(map[string]any)
		if r, ok := md["managedFields"].(Raw); ok {
			checkRawWalks(t, r)
		}
	})
}

// checkRawWalks wants the walks that trust a Raw to see what the checking
// ones see, in every value it holds.
func checkRawWalks(t *testing.T, v []byte) {
	t.Helper()
	switch v[0] {
	case '[':
		var want, got [][]byte
		EachElement(v, func(e []byte) bool { want = append(want, e); return true })
		EachRawElement(v, func(e []byte) bool { got = append(got, e); return true })
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("elements of %s: %q, want %q", v, got, want)
		}
		// The one-pass walk sees the same elements, and each object's
		// members as EachRawMember does.
		var (
			elems   [][]byte
			members [][2][]byte
		)
		EachRawObjectMember(v, func(n, e []byte) bool {
			members = append(members, [2][]byte{n, e})
			return true
		}, func(e []byte) bool {
			elems = append(elems, e)
			var want [][2][]byte
			EachRawMember(e, func(n, m []byte) bool { want = append(want, [2][]byte{n, m}); return true })
			if (len(members) > 0 || len(want) > 0) && !reflect.DeepEqual(members, want) {
				t.Fatalf("members of %s in one pass: %q, want %q", e, members, want)
			}
			members = members[:0]
			return true
		})
		if !reflect.DeepEqual(elems, want) {
			t.Fatalf("elements of %s in one pass: %q, want %q", v, elems, want)
		}
		for _, e := range got {
			checkRawWalks(t, e)
		}
	case '{':
		type member struct {
			name  string
			value []byte
		}
		var want, got []member
		EachMember(v, func(n string, e []byte) bool { want = append(want, member{n, e}); return true })
		EachRawMember(v, func(n, e []byte) bool {
			name, ok := RawString(append(append([]byte{'"'}, n...), '"'))
			if !ok {
				t.Fatalf("member name %q of %s", n, v)
			}
			got = append(got, member{name, e})
			return true
		})
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("members of %s: %q, want %q", v, got, want)
		}
		for _, m := range got {
			checkRawWalks(t, m.value)
		}
	case '"':
		got, ok1 := RawString(v)
		want, ok2 := StringValue(v)
		if got != want || ok1 != ok2 {
			t.Fatalf("string %s: %q %v, want %q %v", v, got, ok1, want, ok2)
		}
	}
}

func BenchmarkDecodeStoredManagedFields(b *testing.B) {
	stored, err := os.ReadFile("testdata/managedfields-widget.json")
	if err != nil {
		b.Fatal(err)
	}
	for _, raw := range []bool{false, true} {
		name := "decoded"
		if raw {
			name = "raw"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				obj, _, err := Decode(stored, "", DecodeOptions{RawManagedFields: raw})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := Marshal(obj); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRawManagedFieldsCheck is the check that keeps a stored
// object's managedFields encoded, which every update on the encoded path
// makes of the object it starts from.
func BenchmarkRawManagedFieldsCheck(b *testing.B) {
	stored, err := os.ReadFile("testdata/managedfields-widget.json")
	if err != nil {
		b.Fatal(err)
	}
	i := bytes.Index(stored, []byte(`"managedFields":`)) + len(`"managedFields":`)
	// Its field set new each time (new), or seen before (seen), as the
	// field sets of objects one manager writes alike are.
	for _, seen := range []bool{false, true} {
		name := "new"
		if seen {
			name = "seen"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(bytes.Index(stored[i:], []byte(`}],`)) + 2))
			b.ReportAllocs()
			for b.Loop() {
				if !seen {
					fieldSets.reset()
				}
				if _, _, ok := rawManagedFields(stored, i, DefaultMaxDepth, true); !ok {
					b.Fatal("not kept encoded")
				}
			}
		})
	}
}

// storedRawManagedFields are the managedFields of the test widget, kept
// encoded.
func storedRawManagedFields(b *testing.B) Raw {
	stored, err := os.ReadFile("testdata/managedfields-widget.json")
	if err != nil {
		b.Fatal(err)
	}
	i := bytes.Index(stored, []byte(`"managedFields":`)) + len(`"managedFields":`)
	raw, _, ok := rawManagedFields(stored, i, DefaultMaxDepth, true)
	if !ok {
		b.Fatal("not kept encoded")
	}
	return raw
}

// BenchmarkEachRawObjectMember is the walk over a stored object's
// encoded managedFields that an update on the encoded path makes to read
// each entry's identity and time (and metadata validation again).
func BenchmarkEachRawObjectMember(b *testing.B) {
	raw := storedRawManagedFields(b)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		EachRawObjectMember(raw, func(_, _ []byte) bool { n++; return true }, func([]byte) bool { return true })
		if n == 0 {
			b.Fatal("no members")
		}
	}
}

// equalRawAgrees wants EqualRaw(v, Marshal(w)) to say what comparing v
// with w decoded from that encoding says.
func equalRawAgrees(t *testing.T, v, w any) {
	t.Helper()
	enc, err := Marshal(w)
	if err != nil {
		return
	}
	d, err := DecodeRaw(enc)
	if err != nil {
		t.Fatalf("decoding %s: %v", enc, err)
	}
	if got, want := EqualRaw(v, enc), reflect.DeepEqual(v, d); got != want {
		t.Fatalf("EqualRaw(%#v, %s) = %v, want %v", v, enc, got, want)
	}
}

func TestEqualRaw(t *testing.T) {
	entry := `{"apiVersion":"g/v1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{".":{},"f:x":{}},"k:{\"name\":\"a\u003cb\"}":{}},"manager":"m","operation":"Update","time":"2026-01-01T00:00:00Z"}`
	cases := []struct {
		line int
		v, r string // v decoded; r marshaled from its decoded form
		want bool
	}{
		{line(), `[` + entry + `]`, `[` + entry + `]`, true},
		{line(), `[` + entry + `]`, `[` + entry + `,` + entry + `]`, false},            // one entry more
		{line(), `[` + entry + `,` + entry + `]`, `[` + entry + `]`, false},            // one entry less
		{line(), `[{"manager":"m"}]`, `[{"manager":"m","operation":"Update"}]`, false}, // a member more
		{line(), `[{"manager":"m","x":1}]`, `[{"manager":"m"}]`, false},                // a member less
		{line(), `[{"manager":"m"}]`, `[{"manager":"n"}]`, false},
		{line(), `[{"k:{\"a\"}":{}}]`, `[{"k:{\"a\"}":{}}]`, true}, // escaped names
		{line(), `[{"a":"\u003c\n"}]`, `[{"a":"\u003c\n"}]`, true},
		{line(), `[{"a":1}]`, `[{"a":1}]`, true},
		{line(), `[{"a":1}]`, `[{"a":1.0}]`, true}, // both decode to the same int64
		{line(), `[{"a":1.5}]`, `[{"a":1.5}]`, true},
		{line(), `[{"a":1}]`, `[{"a":"1"}]`, false},
		{line(), `[{"a":null}]`, `[{"a":null}]`, true},
		{line(), `[{"a":null}]`, `[{"a":[]}]`, false},
		{line(), `[{"a":{}}]`, `[{"a":[]}]`, false},
		{line(), `[{"a":[]}]`, `[{"a":[]}]`, true},
		{line(), `[{"a":[true,false]}]`, `[{"a":[true,true]}]`, false},
		{line(), `["x"]`, `[{"x":{}}]`, false},
	}
	for _, tc := range cases {
		v, _, err := decodeJSON([]byte(tc.v), DefaultMaxDepth)
		if err != nil {
			t.Fatalf("line %d: %v", tc.line, err)
		}
		w, _, err := decodeJSON([]byte(tc.r), DefaultMaxDepth)
		if err != nil {
			t.Fatalf("line %d: %v", tc.line, err)
		}
		enc, err := Marshal(w)
		if err != nil {
			t.Fatalf("line %d: %v", tc.line, err)
		}
		if got := EqualRaw(v, enc); got != tc.want {
			t.Errorf("line %d: EqualRaw(%s, %s) = %v, want %v", tc.line, tc.v, enc, got, tc.want)
		}
		equalRawAgrees(t, v, w)
	}
}

// FuzzEqualRaw: EqualRaw of a decoded value and an encoding says what
// comparing the value with that encoding decoded says.
func FuzzEqualRaw(f *testing.F) {
	stored, err := os.ReadFile("testdata/managedfields-widget.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(stored, stored)
	f.Add([]byte(`[{"a":1,"b":[true,null,"x\u003c"]}]`), []byte(`[{"a":1,"b":[true,null,"x<"]}]`))
	f.Add([]byte(`{"k:{\"a\"}":{},"x":1.5}`), []byte(`{"k:{\"a\"}":{},"x":1.25}`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		v, _, err := decodeJSON(a, DefaultMaxDepth)
		if err != nil {
			return
		}
		w, _, err := decodeJSON(b, DefaultMaxDepth)
		if err != nil {
			return
		}
		equalRawAgrees(t, v, w)
		equalRawAgrees(t, v, v)
	})
}

// BenchmarkEqualRaw is the comparison of the managedFields a client sends
// back (decoded) with the stored ones (encoded) that an update makes.
func BenchmarkEqualRaw(b *testing.B) {
	raw := storedRawManagedFields(b)
	sent, err := DecodeRaw(raw)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if !EqualRaw(sent, raw) {
			b.Fatal("not equal")
		}
	}
}

// TestFieldSetsSeenBefore: a field set read before is not checked again,
// and that changes nothing: whatever surrounds it, an array is kept
// encoded exactly when it would be were every field set new.
func TestFieldSetsSeenBefore(t *testing.T) {
	const set = `{"f:metadata":{"f:labels":{".":{},"f:a":{}}},"f:spec":{".":{},"f:x":{},"k:{\"name\":\"c\"}":{}}}`
	entry := func(fields string) string {
		return `{"apiVersion":"g/v1","fieldsType":"FieldsV1","fieldsV1":` + fields + `,"manager":"m","operation":"Update"}`
	}
	cases := []struct {
		line int
		mf   string
		raw  bool
	}{
		{line(), `[` + entry(set) + `]`, true},
		{line(), `[` + entry(set) + `,` + entry(set) + `]`, true},
		{line(), `[` + entry(set+`x`) + `]`, false},
		{line(), `[` + entry(set) + `,{"b":1,"a":2}]`, false},
		{line(), `[` + entry(set[:len(set)-1]) + `]`, false},
		{line(), `[` + entry(set[:len(set)-1]+`,"f:z":{}}`) + `]`, true},
		{line(), `[` + entry(set[:len(set)-1]+`,"f:a":{}}`) + `]`, false}, // out of order
		{line(), `[` + entry(strings.Replace(set, `f:x`, `f:\u0078`, 1)) + `]`, false},
		{line(), `[{"fieldsV1":` + set + `}]`, true},
		{line(), `[{"fieldsV1":` + set, false},
		{line(), `[{"fieldsV1":` + set + `]`, false},
		{line(), `[{"fieldsV1":` + set + `}`, false},
		{line(), `[{"x":{"fieldsV1":` + set + `}}]`, true},
		{line(), `[{"x":{"fieldsV1":` + strings.Replace(set, `f:x`, `f:\u0078`, 1) + `}}]`, false},
		{line(), `[` + strings.Repeat("[", 61) + strings.Repeat("]", 61) + `,` + entry(set) + `]`, true},
	}
	check := func(tc struct {
		line int
		mf   string
		raw  bool
	}, seen string) {
		t.Helper()
		data := []byte(tc.mf)
		raw, end, ok := rawManagedFields(data, 0, DefaultMaxDepth, true)
		if ok != tc.raw || (ok && (end != len(data) || !bytes.Equal(raw, data))) {
			t.Errorf("line %d (%s): rawManagedFields = %s, %d, %v; want it kept %v", tc.line, seen, raw, end, ok, tc.raw)
		}
	}
	// More field sets alike (the same first bytes) than are kept.
	var alike []string
	for i := range maxFieldSetsAlike + 2 {
		alike = append(alike, `[`+entry(set[:len(set)-1]+`,"f:z`+strings.Repeat("z", i)+`":{}}`)+`]`)
	}
	for _, mf := range alike {
		cases = append(cases, struct {
			line int
			mf   string
			raw  bool
		}{line(), mf, true})
	}
	for _, tc := range cases {
		fieldSets.reset()
		check(tc, "every field set new")
		check(tc, "read again")
		fieldSets.reset()
		for range 2 { // kept the second time
			rawManagedFields([]byte(`[`+entry(set)+`]`), 0, DefaultMaxDepth, true)
		}
		check(tc, "the field set seen before")
		for _, mf := range alike {
			rawManagedFields([]byte(mf), 0, DefaultMaxDepth, true)
			rawManagedFields([]byte(mf), 0, DefaultMaxDepth, true)
		}
		check(tc, "field sets alike seen before")
	}
	if fieldSets.reset(); len(fieldSets.sets) != 0 || fieldSets.size != 0 {
		t.Errorf("after reset, %d field sets of %d bytes", len(fieldSets.sets), fieldSets.size)
	}
}
