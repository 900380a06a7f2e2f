package codec

import (
	"bytes"
	"fmt"
	"unicode/utf8"
)

// Stored objects carry metadata.managedFields: on a 4 KB object about a
// third of its bytes and two thirds of the maps it decodes to, though an
// update by the manager that last wrote it reads none of them but the
// entries' names and times. DecodeOptions.RawManagedFields keeps them
// encoded, as a Raw, which Marshal writes back as it is; it does so only
// for bytes in Marshal's own form, so that writing the Raw gives the
// bytes writing the decoded value would.

// MarshalJSON makes encoding/json write a Raw as it is, as Marshal does.
func (r Raw) MarshalJSON() ([]byte, error) { return r, nil }

// DecodeRaw decodes a Raw (a value Marshal wrote) into the values Decode
// gives.
func DecodeRaw(r Raw) (any, error) {
	v, _, err := decodeJSON(r, DefaultMaxDepth)
	return v, err
}

// rawManagedFieldsDepth bounds the nesting a Raw may hold; deeper field
// sets are decoded.
const rawManagedFieldsDepth = 64

// rawManagedFields returns the Raw of a non-empty array starting at
// data[i], and the offset after it, when the array is written exactly as
// Marshal writes what it decodes to: compact, keys sorted and unique,
// strings escaped as Marshal escapes them, numbers in Marshal's form.
// ok is false for anything else, malformed input among it, for the
// caller to decode it. The Raw is a slice of data, which must not change.
// keep lets the check keep the field sets it finds in Marshal's form (see
// fieldSets): only stored objects' are kept, as the watch cache reads
// them, not those of what a client sends.
func rawManagedFields(data []byte, i int, maxDepth int, keep bool) (raw Raw, end int, ok bool) {
	c := rawCanon{t: MakeTokens(data[i:]), keep: keep}
	if c.t.Peek() != '[' || bytes.HasPrefix(data[i:], []byte("[]")) {
		return nil, 0, false
	}
	if !c.value(min(maxDepth, rawManagedFieldsDepth)) {
		return nil, 0, false
	}
	end = i + c.t.Offset()
	return Raw(data[i:end:end]), end, true
}

// rawCanon checks a value is in Marshal's form, reading it once.
type rawCanon struct {
	t Tokens
	// scratch holds the unescaped keys of the objects being read, each
	// object's after its parent's: an object's keys are dropped when it
	// ends. A key is compared with the next one of its object only, and
	// a key's bytes stay as they are once appended (a larger array holds
	// the next ones), so it may be held while more are appended.
	scratch []byte
	keep    bool // keep the field sets found in Marshal's form
}

// value reads one value of at most depth nested objects and arrays.
func (c *rawCanon) value(depth int) bool {
	switch c.t.Peek() {
	case '{':
		if depth <= 0 {
			return false
		}
		mark := len(c.scratch)
		ok := c.object(depth)
		c.scratch = c.scratch[:mark]
		return ok
	case '[':
		if depth <= 0 {
			return false
		}
		c.t.Consume('[')
		for first := true; !c.t.Consume(']'); first = false {
			if !first && !c.t.Consume(',') {
				return false
			}
			if !c.value(depth - 1) {
				return false
			}
		}
		return true
	case '"':
		text, plain, ok := c.t.String()
		if !ok {
			return false
		}
		if plain {
			return MarshalPlain(text)
		}
		return marshalEscaped(text)
	case 't', 'f', 'n':
		_, ok := c.t.Literal()
		return ok
	default:
		lit, ok := c.t.Number()
		return ok && MarshalNumber(lit)
	}
}

// object reads the members of an object, its values of at most depth-1
// nested objects and arrays.
func (c *rawCanon) object(depth int) bool {
	c.t.Consume('{')
	var prev []byte
	for first := true; !c.t.Consume('}'); first = false {
		if !first && !c.t.Consume(',') {
			return false
		}
		text, plain, ok := c.t.Key()
		if !ok {
			return false
		}
		k, ok := c.key(text, plain)
		// Marshal sorts keys as decoded, and a key repeats only in
		// bytes that decode to fewer members.
		if !ok || (!first && bytes.Compare(prev, k) >= 0) {
			return false
		}
		prev = k
		if depth == rawManagedFieldsDepth-1 && string(k) == "fieldsV1" && c.t.Peek() == '{' {
			// An entry's field set, read with the whole bound.
			if !c.fieldSet(depth - 1) {
				return false
			}
			continue
		}
		if !c.value(depth - 1) {
			return false
		}
	}
	return true
}

// fieldSet reads a managedFields entry's fieldsV1 object as value does,
// but once for bytes seen before: every object one manager writes alike
// has the same field set, as the watch cache shares it (see
// watchcache.Item.SetJSON).
func (c *rawCanon) fieldSet(depth int) bool {
	rest := c.t.s.b[c.t.s.i:]
	// Bytes that start with a field set seen before hold that field set,
	// whatever follows it: an object ends where its bytes say.
	if fs := fieldSets.find(rest); fs != nil {
		c.t.s.i += len(fs.enc)
		return true
	}
	start := c.t.s.i
	if !c.value(depth) {
		return false
	}
	if c.keep {
		fieldSets.add(c.t.s.b[start:c.t.s.i])
	}
	return true
}

// key returns the decoded text of a key written as text (without its
// quotes), and whether Marshal writes that text so. The text of a plain
// one is itself; others are decoded into c.scratch.
func (c *rawCanon) key(text []byte, plain bool) ([]byte, bool) {
	if plain {
		// Printable ASCII without escapes: Marshal escapes <, > and &.
		return text, MarshalPlain(text)
	}
	if !marshalEscaped(text) {
		return nil, false
	}
	if c.scratch == nil {
		// Keys with escapes (those of list items, k:{"name":"x"}) are
		// unescaped to compare them: in one buffer rather than each in
		// a new one.
		c.scratch = make([]byte, 0, 256)
	}
	start := len(c.scratch)
	c.scratch = unescapeMarshaled(c.scratch, text)
	return c.scratch[start:], true
}

// marshalEscaped reports whether text, the text of a JSON string
// between its quotes, is how Marshal (encoding/json's appendString with
// HTML escaping) writes the string it decodes to: ", \, \b, \f, \n, \r
// and \t escaped so, other control characters, <, > and & as \u00xx in
// lower case, U+2028 and U+2029 as \u2028 and \u2029, and everything
// else (valid UTF-8) as it is.
func marshalEscaped(text []byte) bool {
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case c == '\\':
			if i+1 >= len(text) {
				return false
			}
			switch text[i+1] {
			case '"', '\\', 'b', 'f', 'n', 'r', 't':
				i += 2
				continue
			case 'u':
			default:
				return false
			}
			if i+6 > len(text) {
				return false
			}
			switch h := text[i+2 : i+6]; {
			case h[0] == '0' && h[1] == '0' && lowerHex(h[2]) && lowerHex(h[3]):
				b := hexValue(h[2])<<4 | hexValue(h[3])
				short := b == '\b' || b == '\f' || b == '\n' || b == '\r' || b == '\t'
				if !(b < 0x20 && !short) && b != '<' && b != '>' && b != '&' {
					return false
				}
			case string(h) == "2028" || string(h) == "2029":
			default:
				return false
			}
			i += 6
		case c < 0x20 || c == '"' || c == '<' || c == '>' || c == '&':
			return false
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(text[i:])
			if (r == utf8.RuneError && size == 1) || r == '\u2028' || r == '\u2029' {
				return false
			}
			i += size
		}
	}
	return true
}

// unescapeMarshaled appends to dst the string text decodes to, text being
// as marshalEscaped accepts it.
func unescapeMarshaled(dst, text []byte) []byte {
	for i := 0; i < len(text); {
		c := text[i]
		if c != '\\' {
			dst = append(dst, c)
			i++
			continue
		}
		switch e := text[i+1]; e {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r := rune(hexValue(text[i+2]))<<12 | rune(hexValue(text[i+3]))<<8 | rune(hexValue(text[i+4]))<<4 | rune(hexValue(text[i+5]))
			dst = utf8.AppendRune(dst, r)
			i += 6
			continue
		default: // " and \\
			dst = append(dst, e)
		}
		i += 2
	}
	return dst
}

func lowerHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' }

func hexValue(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c - 'a' + 10
}

// MaterializeManagedFields decodes obj's metadata.managedFields in place
// when they are kept as a Raw, for code that reads them as values.
func MaterializeManagedFields(obj map[string]any) error {
	md, _ := obj["metadata"].(map[string]any)
	r, ok := md["managedFields"].(Raw)
	if !ok {
		return nil
	}
	v, err := DecodeRaw(r)
	if err != nil {
		return fmt.Errorf("decoding metadata.managedFields: %w", err)
	}
	md["managedFields"] = v
	return nil
}

// The walks below read a Raw, or a value inside one, without checking
// it again: it was checked when it was made (or Marshal wrote it), so
// they only find where each value ends, several times faster than the
// checking scanner. They must not be given anything else.

// EachRawElement calls fn with each element of the encoded array a (a
// Raw or a value in one), in order, until fn returns false.
func EachRawElement(a []byte, fn func(value []byte) bool) {
	if len(a) < 2 || a[0] != '[' {
		return
	}
	for i := 1; i < len(a) && a[i] != ']'; {
		end := skipRaw(a, i)
		if !fn(a[i:end]) || end >= len(a) {
			return
		}
		i = end
		if a[i] == ',' {
			i++
		}
	}
}

// EachRawMember calls fn with the name, as written between its quotes,
// and the value of each member of the encoded object o (a value in a
// Raw), in order, until fn returns false.
func EachRawMember(o []byte, fn func(name, value []byte) bool) {
	if len(o) < 2 || o[0] != '{' {
		return
	}
	for i := 1; i < len(o) && o[i] != '}'; {
		nameEnd := skipRaw(o, i) // the name and its quotes
		start := nameEnd + 1     // after the colon
		end := skipRaw(o, start)
		if !fn(o[i+1:nameEnd-1], o[start:end]) || end >= len(o) {
			return
		}
		i = end
		if o[i] == ',' {
			i++
		}
	}
}

// EachRawObjectMember is EachRawElement over an array of objects (a
// Raw's managedFields entries) reading each element's members in the
// same pass, rather than finding the element's end first and its members
// then: member is called with each member of an element, as EachRawMember
// calls fn, and then element with the whole element; an element that is
// not an object goes to element alone. The walk stops when either returns
// false.
func EachRawObjectMember(a []byte, member func(name, value []byte) bool, element func(value []byte) bool) {
	if len(a) < 2 || a[0] != '[' {
		return
	}
	for i := 1; i < len(a) && a[i] != ']'; {
		end := len(a)
		if a[i] == '{' {
			j := i + 1
			for j < len(a) && a[j] != '}' {
				nameEnd := skipRaw(a, j) // the name and its quotes
				start := nameEnd + 1     // after the colon
				if a[j] != '"' || nameEnd < j+2 || start >= len(a) {
					return // not Marshal's form after all
				}
				name := a[j+1 : nameEnd-1]
				var valueEnd int
				if string(name) == "fieldsV1" && a[start] == '{' {
					valueEnd = skipFieldSet(a, start)
				} else {
					valueEnd = skipRaw(a, start)
				}
				if !member(name, a[start:valueEnd]) {
					return
				}
				j = valueEnd
				if j < len(a) && a[j] == ',' {
					j++
				}
			}
			end = min(j+1, len(a)) // after the closing brace
		} else {
			end = skipRaw(a, i)
		}
		if end <= i {
			return // not Marshal's form: no value here
		}
		if !element(a[i:end]) || end >= len(a) {
			return
		}
		i = end
		if a[i] == ',' {
			i++
		}
	}
}

// RawString returns the text of the encoded string s (a value in a Raw);
// ok is false when s is not a string.
func RawString(s []byte) (string, bool) {
	if len(s) < 2 || s[0] != '"' {
		return "", false
	}
	if bytes.IndexByte(s, '\\') < 0 {
		return string(s[1 : len(s)-1]), true
	}
	return StringValue(s)
}

// skipRaw returns the offset after the value starting at b[i].
func skipRaw(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipRawString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = skipRawString(b, i) - 1
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

// skipRawString returns the offset after the string starting at b[i].
func skipRawString(b []byte, i int) int {
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

// EqualRaw reports whether v, a value as Decode gives them (maps, slices,
// strings, int64 and float64 numbers, bools, nil), equals what the
// encoded r (a Raw, or a value in one) decodes to: maps with the same
// members, lists with the same elements, scalars of the same type and
// value. It decodes nothing but numbers and escaped strings, and reads
// each byte of r once, so that a client sending back the managedFields it
// read costs an update a walk of them rather than decoding the stored
// ones to compare.
func EqualRaw(v any, r []byte) bool {
	end, eq := equalRaw(v, r, 0)
	return eq && end == len(r)
}

// equalRaw compares v with the value at r[i] as EqualRaw does; when
// equal, end is the offset after that value.
func equalRaw(v any, r []byte, i int) (end int, eq bool) {
	if i >= len(r) {
		return 0, false
	}
	switch r[i] {
	case '{':
		m, ok := v.(map[string]any)
		if !ok {
			return 0, false
		}
		n := 0
		for i++; i < len(r) && r[i] != '}'; n++ {
			if n > 0 {
				if r[i] != ',' {
					return 0, false
				}
				i++
			}
			if i >= len(r) || r[i] != '"' {
				return 0, false
			}
			nameEnd := skipRawString(r, i)
			name := r[i+1 : nameEnd-1]
			var x any
			if bytes.IndexByte(name, '\\') < 0 {
				x, ok = m[string(name)]
			} else {
				s, _ := RawString(r[i:nameEnd])
				x, ok = m[s]
			}
			if !ok || nameEnd >= len(r) || r[nameEnd] != ':' {
				return 0, false
			}
			if i, eq = equalRaw(x, r, nameEnd+1); !eq {
				return 0, false
			}
		}
		if i >= len(r) || n != len(m) {
			return 0, false
		}
		return i + 1, true
	case '[':
		l, ok := v.([]any)
		if !ok {
			return 0, false
		}
		n := 0
		for i++; i < len(r) && r[i] != ']'; n++ {
			if n > 0 {
				if r[i] != ',' {
					return 0, false
				}
				i++
			}
			if n >= len(l) {
				return 0, false
			}
			if i, eq = equalRaw(l[n], r, i); !eq {
				return 0, false
			}
		}
		if i >= len(r) || n != len(l) {
			return 0, false
		}
		return i + 1, true
	case '"':
		s, ok := v.(string)
		if !ok {
			return 0, false
		}
		end = skipRawString(r, i)
		text := r[i+1 : max(i+1, end-1)]
		if bytes.IndexByte(text, '\\') < 0 {
			return end, end > i+1 && string(text) == s
		}
		rs, ok := RawString(r[i:end])
		return end, ok && rs == s
	default: // a number or a literal: scalars, compared as decoded
		end = skipRaw(r, i)
		d, err := DecodeRaw(r[i:end])
		return end, err == nil && d == v
	}
}
