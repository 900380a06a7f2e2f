package codec

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// The skips are held to the references below, the simplest forms of
// them: loops a byte at a time and a recursive descent, as the skips were
// first written. Every result counts, for malformed input too: the offset
// skipRaw gives for garbage, and where a failed scan leaves the scanner
// (Tokens.Value returns what it read).

// refSkipRaw is skipRaw as it was first written.
func refSkipRaw(b []byte, i int) int {
	switch b[i] {
	case '"':
		return refSkipRawString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = refSkipRawString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return i
	default: // a number or a literal
		for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' {
			i++
		}
		return i
	}
}

// refSkipRawString is skipRawString as it was first written.
func refSkipRawString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++ // the escaped character
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// refValue is scanner.value as it was first written.
func refValue(s *scanner, depth int) bool {
	if s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '"':
		_, ok := refStr(s)
		return ok
	case c == '{':
		if depth >= maxScanDepth {
			return false
		}
		s.i++
		for first := true; !s.consume('}'); first = false {
			if !first && !s.consume(',') {
				return false
			}
			if !s.peek('"') {
				return false
			}
			if _, ok := refStr(s); !ok || !s.consume(':') || !refValue(s, depth+1) {
				return false
			}
		}
		return true
	case c == '[':
		if depth >= maxScanDepth {
			return false
		}
		s.i++
		for first := true; !s.consume(']'); first = false {
			if !first && !s.consume(',') {
				return false
			}
			if !refValue(s, depth+1) {
				return false
			}
		}
		return true
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		return s.number()
	}
	return false
}

// refStr is scanner.str a byte at a time.
func refStr(s *scanner) (key, bool) {
	b := s.b
	k := key{start: s.i + 1, plain: true}
	for i := s.i + 1; i < len(b); {
		switch c := b[i]; {
		case c == '"':
			k.end = i
			s.i = i + 1
			return k, true
		case c == '\\':
			k.plain = false
			if i+1 >= len(b) {
				return key{}, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return key{}, false
				}
				i += 6
			default:
				return key{}, false
			}
		case c < 0x20:
			return key{}, false
		case c >= 0x80:
			k.plain = false
			i++
		default:
			i++
		}
	}
	return key{}, false
}

// checkSkips wants the skips to give what the references give, at every
// offset of b, the scanner's from depth.
func checkSkips(t *testing.T, b []byte, depth int) {
	t.Helper()
	for i := range b {
		if got, want := skipRaw(b, i), refSkipRaw(b, i); got != want {
			t.Fatalf("skipRaw(%q, %d) = %d, want %d", b, i, got, want)
		}
		if got, want := skipRawString(b, i), refSkipRawString(b, i); got != want {
			t.Fatalf("skipRawString(%q, %d) = %d, want %d", b, i, got, want)
		}
	}
	for i := range len(b) + 1 {
		got, want := scanner{b: b, i: i}, scanner{b: b, i: i}
		if ok, wantOK := got.value(depth), refValue(&want, depth); ok != wantOK || got.i != want.i {
			t.Fatalf("value(%d) of %q at %d: %v at %d, want %v at %d", depth, b, i, ok, got.i, wantOK, want.i)
		}
		if i == len(b) || b[i] != '"' {
			continue
		}
		got, want = scanner{b: b, i: i}, scanner{b: b, i: i}
		k, ok := got.str()
		wantK, wantOK := refStr(&want)
		if k != wantK || ok != wantOK || got.i != want.i {
			t.Fatalf("str of %q at %d: %+v %v at %d, want %+v %v at %d", b, i, k, ok, got.i, wantK, wantOK, want.i)
		}
	}
}

// skipSeeds are inputs for the skips: pieces of a stored object's
// managedFields, and what is malformed or deep. They are short, as the
// fuzzer's inputs had best be: checkSkips takes time quadratic in the
// length, and the fuzzer minimizes every new input it finds.
func skipSeeds(t testing.TB) [][]byte {
	mf := storedManagedFields(t)
	seeds := [][]byte{mf[:200], mf[:17], mf[100:300], mf[len(mf)-200:]}
	for _, s := range []string{
		`{"a":{"b\"":[1,2]},"c":"\\","d":"\u00e9\/","e":[true,false,null,-1.5e3]}`,
		`{"k:{\"name\":\"a\"}":{".":{},"f:x":{}},"v:\"b\\\\\"":{}}`,
		`{"a":{}}`, `{}`, `[]`, `[{]}`, `{]`, `{"a"}`, `{"a":}`, `{"a":1,}`, `[1,]`, `[,1]`,
		`"abc`, `"a\`, `"a\u12"`, `"a\x"`, "\"a\x01\"", "\"\xff\xfe\"", `"\uABCD\uefgh"`,
		`tru`, `nul`, `-`, `01`, `1.`, `1e`, `1e+`, `-0.5E-7`, `x`, `}`, `]`, `,`,
		strings.Repeat("[", 70) + strings.Repeat("]", 70),
		strings.Repeat(`{"a":[`, 40) + strings.Repeat("]}", 40),
		strings.Repeat(`{"a":[`, 40) + strings.Repeat("]}", 39),
		`{"aaaaaaaaaaaaaaaaaaaaaaaa":"bbbbbbbbbbbbbbbbbbbbbbbbbbbbb\"bbbbbbbbbbbbbb\\","c":{"ddddddd{[":"]}"}}`,
	} {
		seeds = append(seeds, []byte(s))
	}
	return seeds
}

// storedManagedFields is the managedFields value of the test widget.
func storedManagedFields(t testing.TB) []byte {
	stored, err := os.ReadFile("testdata/managedfields-widget.json")
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(stored, []byte(`"managedFields":`)) + len(`"managedFields":`)
	return stored[i : i+bytes.Index(stored[i:], []byte(`}],`))+2]
}

func TestSkips(t *testing.T) {
	stored, err := os.ReadFile("testdata/managedfields-widget.json")
	if err != nil {
		t.Fatal(err)
	}
	mf := storedManagedFields(t)
	for _, b := range append(skipSeeds(t), stored, mf, mf[:len(mf)-1], mf[:len(mf)/2]) {
		for _, depth := range []int{0, 1, maxScanDepth - 65, maxScanDepth - 64, maxScanDepth - 63, maxScanDepth - 2, maxScanDepth, maxScanDepth + 1} {
			checkSkips(t, b, depth)
		}
	}
	deep := []byte(strings.Repeat(`[{"a":`, maxScanDepth/2) + "1" + strings.Repeat("}]", maxScanDepth/2))
	for _, depth := range []int{0, 1} {
		got, want := scanner{b: deep}, scanner{b: deep}
		if ok, wantOK := got.value(depth), refValue(&want, depth); ok != wantOK || got.i != want.i {
			t.Errorf("value(%d) of %d nested values: %v at %d, want %v at %d", depth, maxScanDepth, ok, got.i, wantOK, want.i)
		}
	}
}

// FuzzSkips holds the skips to their references on any input, at every
// offset and at any depth, the scanner's limit among them.
func FuzzSkips(f *testing.F) {
	for _, b := range skipSeeds(f) {
		f.Add(b, uint16(0))
	}
	f.Add([]byte(strings.Repeat("[", 70)+strings.Repeat("]", 70)), uint16(maxScanDepth-64))
	f.Fuzz(func(t *testing.T, b []byte, depth uint16) {
		checkSkips(t, b, int(depth)%(maxScanDepth+2))
	})
}

// BenchmarkSkipManagedFields skips a stored object's managedFields value:
// trusting Marshal's form (skipRaw, as the walks over a Raw do), and
// checking it (scanner.value, as EachMemberAt does on its way to the
// metadata members after it).
func BenchmarkSkipManagedFields(b *testing.B) {
	benchSkips(b, [][]byte{storedRawManagedFields(b)})
}

// BenchmarkSkipVariedFields is BenchmarkSkipManagedFields over 512 field
// sets of random shapes in turn. The processor learns the branches of one
// input repeated (even with a decode of the whole object between two
// skips), which favours loops a byte at a time; this shows what skipping
// costs where it cannot.
func BenchmarkSkipVariedFields(b *testing.B) {
	benchSkips(b, variedFields(512))
}

func benchSkips(b *testing.B, in [][]byte) {
	size := 0
	for _, r := range in {
		size += len(r)
	}
	b.Run("raw", func(b *testing.B) {
		b.SetBytes(int64(size / len(in)))
		n := 0
		for b.Loop() {
			r := in[n%len(in)]
			n++
			if skipRaw(r, 0) != len(r) {
				b.Fatal("not skipped")
			}
		}
	})
	b.Run("checked", func(b *testing.B) {
		b.SetBytes(int64(size / len(in)))
		n := 0
		for b.Loop() {
			r := in[n%len(in)]
			n++
			s := scanner{b: r}
			if !s.value(0) || s.i != len(r) {
				b.Fatal("not skipped")
			}
		}
	})
}

// variedFields makes n managedFields values with field sets of random
// shapes and key lengths, the same ones on every call.
func variedFields(n int) [][]byte {
	rng := uint64(12345)
	next := func(k int) int { // xorshift
		rng ^= rng << 13
		rng ^= rng >> 7
		rng ^= rng << 17
		return int(rng % uint64(k))
	}
	var set func(depth int) map[string]any
	set = func(depth int) map[string]any {
		m := map[string]any{}
		if depth > 0 && next(3) == 0 {
			m["."] = map[string]any{}
		}
		for range next(6) + 1 {
			var k strings.Builder
			k.WriteString("f:")
			for range next(20) + 1 {
				k.WriteByte("abcdefghijklmnopqrstuvwxyz./-"[next(29)])
			}
			name := k.String()
			if next(8) == 0 {
				name = `k:{"name":"` + name + `"}`
			}
			if depth < 3 && next(3) == 0 {
				m[name] = set(depth + 1)
			} else {
				m[name] = map[string]any{}
			}
		}
		return m
	}
	entry := func() map[string]any {
		return map[string]any{"apiVersion": "g/v1", "fieldsType": "FieldsV1", "fieldsV1": set(0),
			"manager": "m", "operation": "Update", "time": "2026-01-01T00:00:00Z"}
	}
	var out [][]byte
	for range n {
		b, err := Marshal([]any{entry(), entry()})
		if err != nil {
			panic(err)
		}
		out = append(out, b)
	}
	return out
}
