package codec

import "strconv"

// EachMember calls fn with the name and the encoded value of each member
// of the compact JSON object encoded, in order, until fn returns false.
// Names are unescaped; values are slices of encoded, checked as they are
// skipped. ok is false when encoded is not one compact JSON object (it is
// malformed, has whitespace, or has more after its end); fn may have been
// called for the members before the fault. A repeated name is given each
// time: callers that care must notice.
func EachMember(encoded []byte, fn func(name string, value []byte) bool) (ok bool) {
	s := scanner{b: encoded}
	stopped := false
	ok = eachMember(&s, func(name []byte) bool {
		start := s.i
		if !s.value(0) {
			return false
		}
		stopped = !fn(string(name), encoded[start:s.i])
		return !stopped
	})
	return stopped || ok && s.i == len(encoded)
}

// EachMemberAt calls fn as EachMember(value, fn) does for the value at
// path in a compact JSON object (as FindPath finds it), in one scan: that
// checks each byte once, where finding the value and then reading its
// members checks the value's bytes twice. found is false when there is no
// value at path; ok is false when the value is not one compact JSON object
// or encoded is malformed before it (fn may have been called for members
// before the fault). When fn returns true throughout, ok is true exactly
// when FindPath finds the value and EachMember reads all of it.
func EachMemberAt(encoded []byte, path []string, fn func(name string, value []byte) bool) (found, ok bool) {
	s := scanner{b: encoded}
	for _, name := range path {
		if !s.consume('{') {
			return false, s.value(0)
		}
		for first := true; ; first = false {
			if s.consume('}') {
				return false, true
			}
			if !first && !s.consume(',') {
				return false, false
			}
			k, ok := s.key()
			if !ok {
				return false, false
			}
			if k.is(encoded, name) {
				break
			}
			if !s.value(0) {
				return false, false
			}
		}
	}
	if !s.consume('{') {
		return true, false
	}
	for first := true; !s.consume('}'); first = false {
		if !first && !s.consume(',') {
			return true, false
		}
		k, ok := s.key()
		if !ok {
			return true, false
		}
		start := s.i
		// The value at path counts as depth 0, as FindPath scans it.
		if !s.value(1) {
			return true, false
		}
		if !fn(k.string(encoded), encoded[start:s.i]) {
			return true, true
		}
	}
	return true, true
}

// EachElement calls fn with each encoded element of the compact JSON
// array encoded, in order, until fn returns false. ok is as EachMember's.
func EachElement(encoded []byte, fn func(value []byte) bool) (ok bool) {
	s := scanner{b: encoded}
	if !s.consume('[') {
		return false
	}
	for first := true; !s.consume(']'); first = false {
		if !first && !s.consume(',') {
			return false
		}
		start := s.i
		if !s.value(0) {
			return false
		}
		if !fn(encoded[start:s.i]) {
			return true
		}
	}
	return s.i == len(encoded)
}

// StringValue returns the text of an encoded JSON string; ok is false
// when encoded is anything else.
func StringValue(encoded []byte) (string, bool) {
	s := scanner{b: encoded}
	if !s.peek('"') {
		return "", false
	}
	k, ok := s.str()
	if !ok || s.i != len(encoded) {
		return "", false
	}
	return k.string(encoded), true
}

// Raw is a value already encoded in Marshal's form (compact, keys sorted,
// encoding/json's escaping): Marshal writes it as it is.
type Raw []byte

// Tokens reads a compact JSON document piece by piece, checking it as it
// goes, for callers that walk a document along something else (a schema)
// and so read it once. A method that finds malformed input returns false;
// the Tokens is then done with.
type Tokens struct{ s scanner }

// MakeTokens starts reading encoded.
func MakeTokens(encoded []byte) Tokens { return Tokens{s: scanner{b: encoded}} }

// Peek returns the next byte, 0 at the end.
func (t *Tokens) Peek() byte {
	if t.s.i >= len(t.s.b) {
		return 0
	}
	return t.s.b[t.s.i]
}

// Consume reads c ('{', '}', '[', ']' or ',') if it is next.
func (t *Tokens) Consume(c byte) bool { return t.s.consume(c) }

// End reports whether everything was read.
func (t *Tokens) End() bool { return t.s.i == len(t.s.b) }

// Offset is how many bytes have been read: what was read is
// encoded[:t.Offset()].
func (t *Tokens) Offset() int { return t.s.i }

// Key reads an object member's name and the colon after it: its text,
// as it is written, and whether that is its value (printable ASCII
// without escapes).
func (t *Tokens) Key() (text []byte, plain, ok bool) {
	k, ok := t.s.key()
	return t.s.b[k.start:k.end], k.plain, ok
}

// String reads a string as Key reads a name.
func (t *Tokens) String() (text []byte, plain, ok bool) {
	if !t.s.peek('"') {
		return nil, false, false
	}
	k, ok := t.s.str()
	return t.s.b[k.start:k.end], k.plain, ok
}

// Number reads a number and returns it as written.
func (t *Tokens) Number() ([]byte, bool) {
	start := t.s.i
	if t.s.i >= len(t.s.b) || !t.s.number() {
		return nil, false
	}
	return t.s.b[start:t.s.i], true
}

// Literal reads true, false or null and returns it.
func (t *Tokens) Literal() ([]byte, bool) {
	for _, lit := range [...]string{"true", "false", "null"} {
		if t.s.literal(lit) {
			return t.s.b[t.s.i-len(lit) : t.s.i], true
		}
	}
	return nil, false
}

// Skip passes over the next n bytes unread, for a caller that knows them
// to be a whole, valid value (equal to one it checked before); false when
// fewer than n remain.
func (t *Tokens) Skip(n int) bool {
	if n < 0 || n > len(t.s.b)-t.s.i {
		return false
	}
	t.s.i += n
	return true
}

// Value reads a whole value and returns it.
func (t *Tokens) Value() ([]byte, bool) {
	start := t.s.i
	ok := t.s.value(0)
	return t.s.b[start:t.s.i], ok
}

// MarshalPlain reports whether text, a plain string's or name's text (see
// Key), is written by Marshal as it is: without the characters it escapes
// (<, >, &) or hands to encoding/json (DEL).
func MarshalPlain(text []byte) bool {
	for _, c := range text {
		if c == '<' || c == '>' || c == '&' || c == 0x7f {
			return false
		}
	}
	return true
}

// MarshalNumber reports whether lit, a number as written, is written so
// by Marshal once decoded: an integer that fits an int64 (without the sign
// of zero), or another number in encoding/json's shortest form.
func MarshalNumber(lit []byte) bool {
	digits := lit
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	integral := len(digits) > 0
	for _, c := range digits {
		if c < '0' || c > '9' {
			integral = false
			break
		}
	}
	if integral {
		if n, err := strconv.ParseInt(string(lit), 10, 64); err == nil {
			return n != 0 || len(lit) == 1
		}
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil {
		return false
	}
	var buf [32]byte
	out, err := appendFloat(buf[:0], f)
	return err == nil && string(out) == string(lit)
}
