package codec

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Marshal encodes an unstructured value — what Decode returns: maps,
// slices, strings, int64, float64, bools and nil — exactly as
// encoding/json.Marshal does (sorted keys, HTML-safe escaping, the same
// float forms), without reflection. Stored objects and the resourceVersion
// splicing in ScanMeta rely on that exact form. Values of any other type
// are handed to encoding/json.
func Marshal(v any) ([]byte, error) {
	// Objects are a few kilobytes: one allocation, not a series of growths.
	return AppendMarshal(make([]byte, 0, 4096), v)
}

// AppendMarshal is Marshal appending to dst.
func AppendMarshal(dst []byte, v any) ([]byte, error) {
	e := encoders.Get().(*encoder)
	b, err := e.appendValue(dst, v)
	e.release()
	return b, err
}

// encoder holds the members of the objects being written, sorted by key,
// one stretch per level of nesting, in one slice; with their values, so
// that writing them needs no second lookup in the map. Keeping them there rather than in an
// array on each appendObject frame keeps the frames small: objects with
// managedFields nest a dozen levels deep, and encoding them at the bottom
// of a request's goroutine grew its stack, copying every frame above, on
// most admission reviews.
type encoder struct {
	members []member
}

type member struct {
	key   string
	value any
}

var encoders = sync.Pool{New: func() any { return &encoder{members: make([]member, 0, 64)} }}

// release returns e to the pool, dropping the members it holds (they keep
// their maps' memory alive) and the slice when one huge object grew it.
func (e *encoder) release() {
	if cap(e.members) > 4096 {
		return
	}
	clear(e.members[:cap(e.members)])
	e.members = e.members[:0]
	encoders.Put(e)
}

func (e *encoder) appendValue(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		return appendString(b, v), nil
	case bool:
		return strconv.AppendBool(b, v), nil
	case int64:
		return strconv.AppendInt(b, v, 10), nil
	case int:
		return strconv.AppendInt(b, int64(v), 10), nil
	case float64:
		return appendFloat(b, v)
	case map[string]any:
		return e.appendObject(b, v)
	case Raw:
		return append(b, v...), nil
	case []any:
		if v == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		for i, el := range v {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = e.appendValue(b, el); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	default:
		enc, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		return append(b, enc...), nil
	}
}

func (e *encoder) appendObject(b []byte, m map[string]any) ([]byte, error) {
	if m == nil {
		return append(b, "null"...), nil
	}
	members := e.push(m)
	b = append(b, '{')
	for i, mb := range members {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, mb.key)
		b = append(b, ':')
		var err error
		if b, err = e.appendValue(b, mb.value); err != nil {
			return nil, err
		}
	}
	e.pop(members)
	return append(b, '}'), nil
}

// push adds m's members, sorted, to e's and returns them. They stay
// valid while the objects inside append theirs: a slice that grows moves,
// leaving these in the old array, unchanged.
func (e *encoder) push(m map[string]any) []member {
	start := len(e.members)
	for k, v := range m {
		e.members = append(e.members, member{k, v})
	}
	members := e.members[start:]
	sortMembers(members)
	return members
}

// pop drops the members push returned, the last pushed.
func (e *encoder) pop(members []member) {
	e.members = e.members[:len(e.members)-len(members)]
}

// sortMembers sorts by key: by insertion for the few members most objects
// have, where it beats the general sort's set-up.
func sortMembers(ms []member) {
	if len(ms) > 12 {
		slices.SortFunc(ms, func(a, b member) int { return strings.Compare(a.key, b.key) })
		return
	}
	for i := 1; i < len(ms); i++ {
		for j := i; j > 0 && ms[j].key < ms[j-1].key; j-- {
			ms[j], ms[j-1] = ms[j-1], ms[j]
		}
	}
}

// AppendString appends s quoted as encoding/json.Marshal quotes it.
func AppendString(b []byte, s string) []byte { return appendString(b, s) }

// appendString quotes s as encoding/json does. Strings of plain printable
// ASCII, nearly all of them, are copied as they are; anything else (quotes,
// backslashes, control characters, <, >, &, non-ASCII) goes through
// encoding/json so the escaping stays exactly its own.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if !plain[s[i]] {
			enc, _ := json.Marshal(s) // a string always encodes
			return append(b, enc...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// plain are the bytes a string encodes as they are.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// appendFloat writes f in encoding/json's form: plain decimals between
// 1e-6 and 1e21, exponents (without a leading zero) outside.
func appendFloat(b []byte, f float64) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, &json.UnsupportedValueError{Str: strconv.FormatFloat(f, 'g', -1, 64)}
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// 1e-07 → 1e-7
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}
