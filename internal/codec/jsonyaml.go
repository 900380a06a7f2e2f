package codec

import (
	"math"
	"strconv"
)

// YAML bodies are nearly always JSON: kubectl, client-go and
// controller-runtime send server-side apply configurations as JSON under
// the apply-patch+yaml media type. Converting them through a YAML parser
// (sigs.k8s.io/yaml, then encoding/json, then our decoder) costs about ten
// times decoding them as JSON, a tenth of an apply's CPU. JSON is not
// quite a subset of the YAML that parser reads, though: it refuses the
// "\/" escape, escaped surrogates, control and non-ASCII characters it
// does not print, tabs before a token, and keys more than 1024 characters
// before their colon or on another line than it; and it turns 1.0 or 1e3
// into integers. So a body is decoded as JSON only when it has none of
// these — printable ASCII and line breaks, escapes both read alike, no
// number the YAML way turns into an integer, short keys on their colon's
// line, no duplicate keys, no deep nesting — which is when both ways give
// the same object; anything else takes the YAML way. FuzzJSONAsYAML checks the two agree.

// jsonAsYAMLMaxDepth bounds the nesting of the fast path, far below the
// YAML parser's limit of 10000, so that the two never disagree on depth.
const jsonAsYAMLMaxDepth = 1000

// maxSimpleKey is how far from its start, in bytes, a key's colon may be
// on the fast path: the YAML parser reads a key no further than 1024
// characters (bytes, in printable ASCII).
const maxSimpleKey = 1000

// jsonAsYAML decodes body, a YAML document, as JSON when that gives what
// the YAML conversion would (see above); ok is false otherwise.
func jsonAsYAML(body []byte, maxDepth int) (obj map[string]any, ok bool) {
	if !yamlSafeJSON(body) {
		return nil, false
	}
	v, problems, err := decodeJSON(body, min(maxDepth, jsonAsYAMLMaxDepth))
	if err != nil || len(problems) > 0 {
		return nil, false
	}
	obj, ok = v.(map[string]any)
	return obj, ok
}

// yamlSafeJSON reports whether body, if it is JSON at all, reads the same
// as YAML: an object of printable ASCII and line breaks whose strings use
// only the escapes both read alike, whose numbers are integers of at most
// 18 digits, and whose keys meet their colon on the same line, close by.
// It does not check the grammar: decodeJSON does.
func yamlSafeJSON(b []byte) bool {
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	if i == len(b) || b[i] != '{' {
		return false
	}
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			end, ok := safeString(b, i)
			if !ok || !safeKey(b, i, end) {
				return false
			}
			i = end
		case c == '-' || ('0' <= c && c <= '9'):
			var ok bool
			if i, ok = safeNumber(b, i); !ok {
				return false
			}
		case c == '\n' || c == '\r' || (0x20 <= c && c < 0x7f):
			i++
		default: // tabs, other controls, DEL, non-ASCII
			return false
		}
	}
	return true
}

// safeNumber checks the number starting at b[i] and returns the offset
// after it. An integer reads alike both ways when it has at most 18
// digits (more may not fit an int64, which the two ways treat apart). A
// number with a fraction or an exponent is a float64 both ways, but the
// YAML way writes it out again, and one with an integral value that fits
// an int64 (1.0, 1e3, -0.0) then reads as an integer: such numbers take
// the YAML way.
func safeNumber(b []byte, i int) (end int, ok bool) {
	start := i
	if b[i] == '-' {
		i++
	}
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	if i == len(b) || (b[i] != '.' && b[i] != 'e' && b[i] != 'E') {
		return i, i-start <= 18
	}
	for i < len(b) && (('0' <= b[i] && b[i] <= '9') || b[i] == '.' || b[i] == 'e' || b[i] == 'E' || b[i] == '+' || b[i] == '-') {
		i++
	}
	f, err := strconv.ParseFloat(string(b[start:i]), 64)
	if err != nil {
		return i, false // malformed, or out of range: left to the YAML way
	}
	integral := f == math.Trunc(f) && f >= -(1<<63) && f < 1<<63
	return i, !integral
}

// safeString checks the string starting at the quote b[start] and returns
// the offset after its closing quote; ok is false for a character or an
// escape the two readings treat differently (or an unterminated string).
func safeString(b []byte, start int) (end int, ok bool) {
	for i := start + 1; i < len(b); {
		c := b[i]
		switch {
		case c == '"':
			return i + 1, true
		case c == '\\':
			if i+1 >= len(b) {
				return 0, false
			}
			switch b[i+1] {
			case '"', '\\', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				r, ok := hexRune(b, i+2)
				if !ok || (0xD800 <= r && r <= 0xDFFF) {
					return 0, false
				}
				i += 6
			default: // "\/" among them: the YAML parser refuses it
				return 0, false
			}
		case 0x20 <= c && c < 0x7f:
			i++
		default:
			return 0, false
		}
	}
	return 0, false
}

func hexRune(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		d, ok := hexDigit(c)
		if !ok {
			return 0, false
		}
		r = r*16 + rune(d)
	}
	return r, true
}

// safeKey reports whether the string b[start:end], when a colon follows
// it (it is a key), has that colon on its own line, close enough for the
// YAML parser to read it as a key; and is not "<<", YAML's merge key.
func safeKey(b []byte, start, end int) bool {
	i := end
	for i < len(b) && b[i] == ' ' {
		i++
	}
	if i < len(b) && (b[i] == '\n' || b[i] == '\r') {
		// A line break before a colon: the key would be on another line.
		for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r') {
			i++
		}
		return i == len(b) || b[i] != ':'
	}
	if i == len(b) || b[i] != ':' {
		return true // not a key
	}
	return i-start <= maxSimpleKey && string(b[start:end]) != `"<<"`
}
