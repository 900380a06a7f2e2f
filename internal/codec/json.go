package codec

import (
	"math"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// This file is a JSON decoder for unstructured objects. encoding/json cannot
// be used as is: it silently keeps the last of two equal keys (upstream
// reports them as strict-decoding problems), it needs a second pass to turn
// json.Number into int64/float64, and it goes through reflection. The
// grammar, the nesting limit and the error texts follow encoding/json, whose
// messages clients have seen from kube-apiserver for years.

// DefaultMaxDepth is encoding/json's nesting limit, which kube-apiserver
// inherits: the 10001st nested object or array is refused.
const DefaultMaxDepth = 10000

// maxProblems bounds the strict-decoding problems kept for one body, as
// upstream does, so a hostile body cannot make the warning list huge.
const maxProblems = 100

// SyntaxError is malformed JSON. Msg is encoding/json's text for the same
// input ("invalid character 'x' looking for beginning of value",
// "unexpected end of JSON input", ...).
type SyntaxError struct {
	Msg    string
	Offset int64 // bytes read before the error
}

func (e *SyntaxError) Error() string { return e.Msg }

// pathElem is one step from the root to the value being decoded: an object
// key, or an array index when idx >= 0.
type pathElem struct {
	key string
	idx int
}

type parser struct {
	data []byte
	// src is data as one string: strings without escapes are slices of
	// it, which costs one allocation per document instead of one per
	// string. They keep the whole document alive, which suits what is
	// decoded here (request bodies and stored objects, short-lived).
	src      string
	pos      int
	depth    int
	maxDepth int

	// stack is the path to the current value; it is only read to name a
	// duplicate field, so keeping it costs one append per value.
	stack    []pathElem
	problems []string
	buf      []byte // scratch for strings with escapes

	// rawManagedFields keeps metadata.managedFields of the top-level
	// object as a Raw when it is in Marshal's form (see rawfields.go).
	rawManagedFields bool
	// rawAt is DecodeOptions.RawManagedFieldsAt.
	rawAt [2]int
	// goType is the Go type the document is decoded as, if any: a key
	// given twice is then decoded into its first value (typedmerge.go).
	goType reflect.Type
}

// decodeJSON parses one JSON value (and nothing but whitespace after it).
func decodeJSON(data []byte, maxDepth int) (v any, problems []string, err error) {
	return decodeJSONWith(parser{data: data, src: string(data), maxDepth: maxDepth})
}

func decodeJSONWith(p parser) (v any, problems []string, err error) {
	v, err = p.value()
	if err != nil {
		return nil, nil, err
	}
	p.ws()
	if p.pos < len(p.data) {
		return nil, nil, p.syntax(p.data[p.pos], "after top-level value")
	}
	return v, p.problems, nil
}

func (p *parser) eof() error {
	return &SyntaxError{Msg: "unexpected end of JSON input", Offset: int64(len(p.data))}
}

// syntax builds encoding/json's "invalid character" error for c.
func (p *parser) syntax(c byte, context string) error {
	return &SyntaxError{Msg: "invalid character " + quoteChar(c) + " " + context, Offset: int64(p.pos + 1)}
}

func quoteChar(c byte) string {
	switch c {
	case '\'':
		return `'\''`
	case '"':
		return `'"'`
	}
	s := strconv.Quote(string(rune(c)))
	return "'" + s[1:len(s)-1] + "'"
}

func (p *parser) ws() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) value() (any, error) {
	p.ws()
	if p.pos >= len(p.data) {
		return nil, p.eof()
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		return p.str()
	case c == '-' || ('0' <= c && c <= '9'):
		return p.number()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	default:
		return nil, p.syntax(c, "looking for beginning of value")
	}
}

func (p *parser) literal(lit string) error {
	for i := 0; i < len(lit); i++ {
		if p.pos >= len(p.data) {
			return p.eof()
		}
		if c := p.data[p.pos]; c != lit[i] {
			return p.syntax(c, "in literal "+lit+" (expecting "+quoteChar(lit[i])+")")
		}
		p.pos++
	}
	return nil
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > p.maxDepth {
		return p.syntax(p.data[p.pos], "exceeded max depth")
	}
	p.pos++
	return nil
}

func (p *parser) object() (any, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	m := make(map[string]any)
	p.ws()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		p.depth--
		return m, nil
	}
	for {
		p.ws()
		if p.pos >= len(p.data) {
			return nil, p.eof()
		}
		if c := p.data[p.pos]; c != '"' {
			return nil, p.syntax(c, "looking for beginning of object key string")
		}
		key, err := p.key()
		if err != nil {
			return nil, err
		}
		p.ws()
		if p.pos >= len(p.data) {
			return nil, p.eof()
		}
		if c := p.data[p.pos]; c != ':' {
			return nil, p.syntax(c, "after object key")
		}
		p.pos++
		atManagedFields := p.rawManagedFields && p.depth == 2 && key == "managedFields" &&
			len(p.stack) == 1 && p.stack[0].key == "metadata" && p.stack[0].idx < 0
		p.stack = append(p.stack, pathElem{key: key, idx: -1})
		var v any
		if atManagedFields {
			v, err = p.managedFields()
		} else {
			v, err = p.value()
		}
		if err != nil {
			return nil, err
		}
		if p.goType != nil {
			if prev, ok := m[key]; ok {
				// p.stack still ends with key.
				v = redecode(p.goType, p.stack, prev, v)
			}
		}
		p.stack = p.stack[:len(p.stack)-1]
		n := len(m)
		m[key] = v // the last one wins, as in encoding/json
		if len(m) == n {
			p.duplicate(key)
		}
		p.ws()
		if p.pos >= len(p.data) {
			return nil, p.eof()
		}
		switch c := p.data[p.pos]; c {
		case ',':
			p.pos++
		case '}':
			p.pos++
			p.depth--
			return m, nil
		default:
			return nil, p.syntax(c, "after object key:value pair")
		}
	}
}

func (p *parser) array() (any, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	arr := []any{}
	p.ws()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		p.depth--
		return arr, nil
	}
	for i := 0; ; i++ {
		p.stack = append(p.stack, pathElem{idx: i})
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		p.stack = p.stack[:len(p.stack)-1]
		arr = append(arr, v)
		p.ws()
		if p.pos >= len(p.data) {
			return nil, p.eof()
		}
		switch c := p.data[p.pos]; c {
		case ',':
			p.pos++
		case ']':
			p.pos++
			p.depth--
			return arr, nil
		default:
			return nil, p.syntax(c, "after array element")
		}
	}
}

// duplicate records upstream's strict-decoding problem for key repeated in
// the object at the current path: `duplicate field "spec.replicas"`, array
// elements as "spec.items[0].name".
func (p *parser) duplicate(key string) {
	if len(p.problems) >= maxProblems {
		return
	}
	var b strings.Builder
	for i, e := range p.stack {
		if e.idx >= 0 {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(e.idx))
			b.WriteByte(']')
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(e.key)
	}
	if b.Len() > 0 {
		b.WriteByte('.')
	}
	b.WriteString(key)
	msg := "duplicate field " + strconv.Quote(b.String())
	for _, seen := range p.problems {
		if seen == msg {
			return
		}
	}
	p.problems = append(p.problems, msg)
}

// key parses an object key.
func (p *parser) key() (string, error) { return p.str() }

// str parses a string starting at the opening quote. Strings without
// escapes or invalid UTF-8 are slices of p.src; others are rebuilt in p.buf.
func (p *parser) str() (string, error) {
	start := p.pos + 1
	for i := start; i < len(p.data); {
		c := p.data[i]
		switch {
		case c == '"':
			p.pos = i + 1
			return p.src[start:i], nil
		case c == '\\' || c < 0x20:
			return p.slowStr(start, i)
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(p.data[i:])
			if r == utf8.RuneError && size == 1 {
				return p.slowStr(start, i)
			}
			i += size
		}
	}
	return "", p.eof()
}

// slowStr finishes a string whose first i-start bytes need no rewriting.
// Invalid UTF-8 becomes U+FFFD and lone surrogates in \u escapes too, as in
// encoding/json.
func (p *parser) slowStr(start, i int) (string, error) {
	b := append(p.buf[:0], p.data[start:i]...)
	for i < len(p.data) {
		c := p.data[i]
		switch {
		case c == '"':
			p.pos = i + 1
			p.buf = b
			return string(b), nil
		case c < 0x20:
			p.pos = i
			return "", p.syntax(c, "in string literal")
		case c == '\\':
			i++
			if i >= len(p.data) {
				return "", p.eof()
			}
			switch e := p.data[i]; e {
			case '"', '\\', '/':
				b = append(b, e)
				i++
			case 'b':
				b = append(b, '\b')
				i++
			case 'f':
				b = append(b, '\f')
				i++
			case 'n':
				b = append(b, '\n')
				i++
			case 'r':
				b = append(b, '\r')
				i++
			case 't':
				b = append(b, '\t')
				i++
			case 'u':
				r, err := p.hex4(i + 1)
				if err != nil {
					return "", err
				}
				i += 5
				if utf16.IsSurrogate(r) {
					// A high surrogate may pair with a following \uXXXX.
					if i+1 < len(p.data) && p.data[i] == '\\' && p.data[i+1] == 'u' {
						r2, err := p.hex4(i + 2)
						if err != nil {
							return "", err
						}
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							b = utf8.AppendRune(b, dec)
							i += 6
							continue
						}
					}
					r = utf8.RuneError
				}
				b = utf8.AppendRune(b, r)
			default:
				p.pos = i
				return "", p.syntax(e, "in string escape code")
			}
		case c < utf8.RuneSelf:
			b = append(b, c)
			i++
		default:
			r, size := utf8.DecodeRune(p.data[i:])
			if r == utf8.RuneError && size == 1 {
				b = utf8.AppendRune(b, utf8.RuneError)
			} else {
				b = append(b, p.data[i:i+size]...)
			}
			i += size
		}
	}
	return "", p.eof()
}

// hexDigit is the value of hexadecimal digit c.
func hexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// hex4 reads the four hex digits of a \u escape at data[i:].
func (p *parser) hex4(i int) (rune, error) {
	var r rune
	for j := i; j < i+4; j++ {
		if j >= len(p.data) {
			return 0, p.eof()
		}
		d, ok := hexDigit(p.data[j])
		if !ok {
			p.pos = j
			return 0, p.syntax(p.data[j], `in \u hexadecimal character escape`)
		}
		r = r*16 + rune(d)
	}
	return r, nil
}

// number parses a JSON number: int64 when it has no fraction or exponent and
// fits, float64 otherwise (upstream's "preserve ints" rule).
func (p *parser) number() (any, error) {
	start := p.pos
	i := p.pos
	d := p.data
	if d[i] == '-' {
		i++
		if i >= len(d) {
			return nil, p.eof()
		}
	}
	switch c := d[i]; {
	case c == '0':
		i++
	case '1' <= c && c <= '9':
		for i < len(d) && '0' <= d[i] && d[i] <= '9' {
			i++
		}
	default:
		p.pos = i
		return nil, p.syntax(c, "in numeric literal")
	}
	integral := true
	if i < len(d) && d[i] == '.' {
		integral = false
		i++
		if i >= len(d) {
			return nil, p.eof()
		}
		if c := d[i]; c < '0' || c > '9' {
			p.pos = i
			return nil, p.syntax(c, "after decimal point in numeric literal")
		}
		for i < len(d) && '0' <= d[i] && d[i] <= '9' {
			i++
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		integral = false
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) {
			return nil, p.eof()
		}
		if c := d[i]; c < '0' || c > '9' {
			p.pos = i
			return nil, p.syntax(c, "in exponent of numeric literal")
		}
		for i < len(d) && '0' <= d[i] && d[i] <= '9' {
			i++
		}
	}
	p.pos = i
	lit := d[start:i]
	if integral {
		if n, ok := smallInt(lit); ok {
			return n, nil
		}
		if n, err := strconv.ParseInt(string(lit), 10, 64); err == nil {
			return n, nil
		}
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil {
		return nil, &SyntaxError{
			Msg:    "json: cannot unmarshal number " + string(lit) + " into Go value of type float64",
			Offset: int64(i),
		}
	}
	if f == 0 && math.Signbit(f) {
		// Negative zero (-0.0, -1e-400) is the integer 0: upstream answers
		// a write with the object it stored decoded again, and stores
		// it as -0, which reads as an integer.
		return int64(0), nil
	}
	return f, nil
}

// smallInt converts an integer literal of at most 18 digits, which always
// fits in an int64, without allocating.
func smallInt(lit []byte) (int64, bool) {
	neg := lit[0] == '-'
	if neg {
		lit = lit[1:]
	}
	if len(lit) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range lit {
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// managedFields parses metadata.managedFields, kept as a Raw when it is
// in Marshal's form and decoded like any value otherwise (which also
// reports malformed input as it always does).
func (p *parser) managedFields() (any, error) {
	p.ws()
	if start, end := p.rawAt[0], p.rawAt[1]; start == p.pos && end > start && end <= len(p.data) && p.data[end-1] == ']' &&
		p.maxDepth-p.depth-1 >= rawManagedFieldsDepth {
		// What rawManagedFields would find, as IndexStored found it
		// with the same depth bound.
		p.pos = end
		return Raw(p.data[start:end:end]), nil
	}
	if raw, end, ok := rawManagedFields(p.data, p.pos, p.maxDepth-p.depth-1, false); ok {
		p.pos = end
		return raw, nil
	}
	return p.value()
}
