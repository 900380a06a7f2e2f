package codec

import (
	"bytes"
	"encoding/json"
	"math/bits"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestEachMember(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // name=value;… ; "!" when not ok
	}{
		{`{}`, ``},
		{`{"a":1,"b":{"c":[true,null]},"\u0064":"x"}`, `a=1;b={"c":[true,null]};d="x";`},
		{`{"a":1,"a":2}`, `a=1;a=2;`},
		{`{"a":1} `, `a=1;!`},
		{`{"a": 1}`, `!`},
		{`{"a":1,}`, `a=1;!`},
		{`[1]`, `!`},
		{`{"a":01}`, `a=0;!`},
		{`{"a":"\x"}`, `!`},
	} {
		var got bytes.Buffer
		if !EachMember([]byte(tc.in), func(name string, v []byte) bool {
			got.WriteString(name + "=" + string(v) + ";")
			return true
		}) {
			got.WriteString("!")
		}
		if got.String() != tc.want {
			t.Errorf("EachMember(%s) = %s, want %s", tc.in, got.String(), tc.want)
		}
	}
}

func TestEachElement(t *testing.T) {
	var got []string
	if !EachElement([]byte(`[1,"a",{"b":[]},[null]]`), func(v []byte) bool { got = append(got, string(v)); return true }) {
		t.Fatal("not ok")
	}
	if want := `[1 "a" {"b":[]} [null]]`; "["+joinSpace(got)+"]" != want {
		t.Errorf("elements %v, want %s", got, want)
	}
	if EachElement([]byte(`[1,]`), func([]byte) bool { return true }) || EachElement([]byte(`{}`), func([]byte) bool { return true }) {
		t.Error("malformed arrays accepted")
	}
	n := 0
	if !EachElement([]byte(`[1,2,3]`), func([]byte) bool { n++; return n < 2 }) || n != 2 {
		t.Errorf("stopping: %d elements read, want 2", n)
	}
}

func joinSpace(s []string) string {
	var b bytes.Buffer
	for i, x := range s {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(x)
	}
	return b.String()
}

func TestStringValue(t *testing.T) {
	for in, want := range map[string]string{`"a"`: "a", `"\u00e9\n"`: "é\n", `""`: ""} {
		if got, ok := StringValue([]byte(in)); !ok || got != want {
			t.Errorf("StringValue(%s) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{`"a"x`, `1`, `"a`, ``, `null`} {
		if _, ok := StringValue([]byte(in)); ok {
			t.Errorf("StringValue(%s) ok", in)
		}
	}
}

// FuzzEachMember holds EachMember to encoding/json: what it reads is a
// compact object whose members encoding/json reads alike, and every
// compact object is read.
func FuzzEachMember(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1,"b":{"c":[true,null,-1.5e3]}}`, `{"a":"\u00e9\"","a":2}`, `{"a": 1}`, `[1,2]`, `{"a":1}x`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		type member struct {
			name  string
			value []byte
		}
		var got []member
		ok := EachMember(in, func(name string, v []byte) bool {
			got = append(got, member{name, v})
			return true
		})
		var compact bytes.Buffer
		isCompactObject := json.Compact(&compact, in) == nil && bytes.Equal(compact.Bytes(), in) && len(in) > 0 && in[0] == '{'
		if ok != isCompactObject {
			t.Fatalf("EachMember(%q) ok = %v, want %v", in, ok, isCompactObject)
		}
		if !ok {
			return
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(in, &m); err != nil {
			t.Fatalf("encoding/json refuses what EachMember read: %v", err)
		}
		last := map[string][]byte{}
		for _, g := range got {
			if !json.Valid(g.value) {
				t.Fatalf("member %q: invalid value %q", g.name, g.value)
			}
			last[g.name] = g.value
		}
		if len(last) != len(m) {
			t.Fatalf("%d names, encoding/json reads %d", len(last), len(m))
		}
		for name, v := range m {
			if !bytes.Equal(last[name], v) {
				t.Fatalf("member %q: %q, encoding/json reads %q", name, last[name], v)
			}
		}
	})
}

// FuzzMarshalNumber: a number MarshalNumber accepts is written back as it
// was by Decode and Marshal.
func FuzzMarshalNumber(f *testing.F) {
	for _, s := range []string{"0", "-0", "1", "-12", "1.5", "1.50", "1e21", "1e+21", "1E21", "0.000001", "1e-7", "9223372036854775808", "-9223372036854775808", "1.0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, lit string) {
		in := []byte(`{"n":` + lit + `}`)
		obj, _, err := Decode(in, "", DecodeOptions{})
		if !MarshalNumber([]byte(lit)) || err != nil || !json.Valid([]byte(lit)) {
			return
		}
		if out, err := Marshal(obj); err != nil || string(out) != string(in) {
			t.Fatalf("MarshalNumber(%s), but Marshal writes %s (%v)", lit, out, err)
		}
	})
}

// TestSpecial8 holds special8 to strSpecial, byte by byte: the lowest
// byte it marks is the first special one, every byte value at every
// position among plain ones, and random words.
func TestSpecial8(t *testing.T) {
	first := func(x uint64) int {
		for i := range 8 {
			if strSpecial[byte(x>>(8*i))] {
				return i
			}
		}
		return 8
	}
	check := func(x uint64) {
		if got, want := bits.TrailingZeros64(special8(x))/8, first(x); got != want {
			t.Fatalf("special8(%#x) = %#x: first special byte %d, want %d", x, special8(x), got, want)
		}
	}
	for c := range 256 {
		for pos := range 8 {
			x := uint64(0x6161616161616161) // "aaaaaaaa"
			check(x&^(0xff<<(8*pos)) | uint64(c)<<(8*pos))
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 1_000_000 {
		x := r.Uint64()
		if i%2 == 0 {
			x &= 0x7f7f7f7f7f7f7f7f // ASCII, where the subtractions borrow
		}
		check(x)
	}
}

// TestTokensOffset: a caller reading part of a document knows where that
// part ends.
func TestTokensOffset(t *testing.T) {
	in := []byte(`{"a":{"b":"c"},"d":[1]}`)
	tk := MakeTokens(in)
	if tk.Offset() != 0 {
		t.Fatalf("offset %d before reading", tk.Offset())
	}
	tk.Consume('{')
	if _, _, ok := tk.Key(); !ok {
		t.Fatal("no key")
	}
	if _, ok := tk.Value(); !ok {
		t.Fatal("no value")
	}
	if got := string(in[:tk.Offset()]); got != `{"a":{"b":"c"}` {
		t.Errorf("read %s", got)
	}
}

// findThenEach is what EachMemberAt replaces: FindPath, then EachMember
// of what it found.
func findThenEach(encoded []byte, path []string, fn func(string, []byte) bool) (found, ok bool) {
	v, found, ok := FindPath(encoded, path)
	if !ok || !found {
		return found, ok
	}
	return true, EachMember(v, fn)
}

// checkEachMemberAt wants EachMemberAt to read what FindPath and
// EachMember read, and to fail where they fail.
func checkEachMemberAt(t *testing.T, in []byte, path []string) {
	t.Helper()
	read := func(each func([]byte, []string, func(string, []byte) bool) (bool, bool)) string {
		var b bytes.Buffer
		found, ok := each(in, path, func(name string, v []byte) bool {
			b.WriteString(name + "=" + string(v) + ";")
			return true
		})
		if !ok {
			return "!" // what was read before a fault is not used
		}
		if !found {
			return "-"
		}
		return b.String()
	}
	if got, want := read(EachMemberAt), read(findThenEach); got != want {
		t.Fatalf("EachMemberAt(%q, %q) = %s, want %s", in, path, got, want)
	}
}

func TestEachMemberAt(t *testing.T) {
	for _, tc := range []struct {
		line int
		in   string
		path string
		want string // name=value;… ; "!" when not ok, "-" when not found
	}{
		{line(), `{"metadata":{"name":"a","labels":{"x":"y"}},"spec":{}}`, "metadata", `name="a";labels={"x":"y"};`},
		{line(), `{"apiVersion":"v1","metadata":{},"spec":[1,`, "metadata", ``},
		{line(), `{"a":{"b":{"c":1,"c":[2]}}}`, "a.b", `c=1;c=[2];`},
		{line(), `{"a":{"b":{"c":1}}}`, "a", `b={"c":1};`},
		{line(), `{"spec":{}}`, "metadata", `-`},
		{line(), `{"metadata":null}`, "metadata", `!`},
		{line(), `{"metadata":"x"}`, "metadata", `!`},
		{line(), `{"metadata":[1]}`, "metadata", `!`},
		{line(), `{"metadata":{"a":1,}}`, "metadata", `!`},
		{line(), `{"metadata":{"a": 1}}`, "metadata", `!`},
		{line(), `{"metadata":{"a":01}}`, "metadata", `!`},
		{line(), `{"x":tru,"metadata":{}}`, "metadata", `!`},
		{line(), `{"a":"s"}`, "a.b", `-`},
		{line(), `{"a":"s`, "a.b", `!`},
		{line(), `[1]`, "metadata", `-`},
		{line(), `{"metadata":{"a":` + strings.Repeat("[", maxScanDepth) + strings.Repeat("]", maxScanDepth) + `}}`, "metadata", `!`},
		{line(), `{"metadata":{"a":` + strings.Repeat("[", maxScanDepth-1) + strings.Repeat("]", maxScanDepth-1) + `}}`, "metadata", `a=` + strings.Repeat("[", maxScanDepth-1) + strings.Repeat("]", maxScanDepth-1) + `;`},
	} {
		path := strings.Split(tc.path, ".")
		var got bytes.Buffer
		found, ok := EachMemberAt([]byte(tc.in), path, func(name string, v []byte) bool {
			got.WriteString(name + "=" + string(v) + ";")
			return true
		})
		switch {
		case !ok:
			got.Reset()
			got.WriteString("!")
		case !found:
			got.WriteString("-")
		}
		if tc.want != "" && got.String() != tc.want {
			t.Errorf("line %d: EachMemberAt(%.40s, %s) = %s, want %s", tc.line, tc.in, tc.path, got.String(), tc.want)
		}
		checkEachMemberAt(t, []byte(tc.in), path)
	}
	n := 0
	if found, ok := EachMemberAt([]byte(`{"m":{"a":1,"b":2,"c":3}}`), []string{"m"}, func(string, []byte) bool { n++; return n < 2 }); !found || !ok || n != 2 {
		t.Errorf("stopping: %d members read, found %v, ok %v; want 2, true, true", n, found, ok)
	}
}

// FuzzEachMemberAt holds EachMemberAt to FindPath and EachMember.
func FuzzEachMemberAt(f *testing.F) {
	for _, s := range []string{`{"metadata":{"name":"a","labels":{"x":"y"}},"spec":{}}`, `{"a":{"b":{"c":1}}}`, `{"metadata":null}`, `{"metadata":{"a": 1}}`, `{"x":tru,"metadata":{}}`} {
		f.Add([]byte(s), "metadata")
		f.Add([]byte(s), "a.b")
	}
	f.Add(sample2K, "metadata")
	f.Fuzz(func(t *testing.T, in []byte, path string) {
		checkEachMemberAt(t, in, strings.Split(path, "."))
	})
}
