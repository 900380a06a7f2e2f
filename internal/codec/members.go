package codec

// EachMember calls fn with the name and the encoded value of each member
// of the compact JSON object encoded, in order, until fn returns false.
// Names are unescaped; values are slices of encoded, checked as they are
// skipped. ok is false when encoded is not one compact JSON object (it is
// malformed, has whitespace, or has more after its end); fn may have been
// called for the members before the fault. A repeated name is given each
// time: callers that care must notice.
func EachMember(encoded []byte, fn func(name string, value []byte) bool) (ok bool) {
	s := scanner{b: encoded}
	if !s.consume('{') {
		return false
	}
	for first := true; !s.consume('}'); first = false {
		if !first && !s.consume(',') {
			return false
		}
		k, ok := s.key()
		if !ok {
			return false
		}
		start := s.i
		if !s.value(0) {
			return false
		}
		if !fn(k.string(encoded), encoded[start:s.i]) {
			return true
		}
	}
	return s.i == len(encoded)
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
