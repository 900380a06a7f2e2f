package apply

import (
	"bytes"
	"sync"

	"github.com/crdserver/crdserver/internal/codec"
)

// ownedIndex is what an encoded field set owns, for a field set met
// before (codec.KnownFieldSet): the paths hasEncodedMember finds, each
// its encoded keys each after a zero byte, which no encoded key holds. An
// update then looks up what it changed in a map rather than searching
// the field set's bytes once per changed field.
type ownedIndex map[string]struct{}

// maxIndexedFieldSet bounds the field sets indexed: an index takes
// several times the bytes of its field set (a key per path, each holding
// its whole path), and codec's bound on the field sets it keeps does not
// count them.
const maxIndexedFieldSet = 8 << 10

// ownedIn returns the index of the encoded field set f, or nil when f is
// not one seen before or is not in a form the index answers for exactly.
func ownedIn(f []byte) ownedIndex {
	fs := codec.KnownFieldSet(f)
	if fs == nil || len(f) > maxIndexedFieldSet {
		return nil
	}
	idx, _ := fs.Derived(buildOwnedIndex).(ownedIndex)
	return idx
}

// buildOwnedIndex indexes the field set enc; nil unless each object in
// it has its members' names plain (no escapes, no control bytes) and in
// increasing order, as Marshal writes them: hasEncodedMember stops
// searching at a name past the one it looks for, and finds the first of
// two alike, which an index of any other form could answer otherwise.
func buildOwnedIndex(enc []byte) any {
	idx := ownedIndex{}
	var path []byte
	var walk func(f []byte) bool
	walk = func(f []byte) bool {
		ok := true
		var prev []byte
		at := len(path)
		codec.EachRawMember(f, func(name, value []byte) bool {
			if prev != nil && bytes.Compare(prev, name) >= 0 || !plainKey(name) {
				ok = false
				return false
			}
			prev = name
			if len(value) == 0 || value[0] != '{' {
				return true
			}
			path = append(append(path, 0), name...)
			if string(value) == "{}" || hasDot(value) {
				idx[string(path)] = struct{}{}
			}
			ok = walk(value)
			path = path[:at]
			return ok
		})
		return ok
	}
	if len(enc) < 2 || enc[0] != '{' || !walk(enc) {
		return ownedIndex(nil)
	}
	return idx
}

// hasDot reports whether the encoded object f has a "." member, as
// hasEncodedMember looks for one.
func hasDot(f []byte) bool {
	_, found := encodedMember(f, dotKey, true)
	return found
}

func plainKey(name []byte) bool {
	for _, c := range name {
		if c < 0x20 || c == '\\' {
			return false
		}
	}
	return true
}

// joinedKeys is a buffer for the lookups of has.
var joinedKeys = sync.Pool{New: func() any { b := make([]byte, 0, 128); return &b }}

// has is hasEncodedMember for the field set idx indexes.
func (idx ownedIndex) has(p encodedKeyPath) bool {
	bp := joinedKeys.Get().(*[]byte)
	b := (*bp)[:0]
	for _, k := range p.enc {
		b = append(append(b, 0), k...)
	}
	_, ok := idx[string(b)]
	*bp = b
	joinedKeys.Put(bp)
	return ok
}
