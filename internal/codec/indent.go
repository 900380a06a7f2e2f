package codec

import "io"

// Indenter writes the JSON written to it indented as upstream indents its
// answers (encoding/json's MarshalIndent with no prefix and two spaces):
// a member or element per line, ": " after a key, and an empty object or
// array kept as {} or []. It may be written in pieces of any size,
// strings and escapes split anywhere, so that a list is indented as it is
// streamed, never held whole.
//
// Whitespace outside strings is dropped, the end's included: the output
// of valid JSON is what encoding/json.Indent makes of it, without
// trailing whitespace. Invalid input is passed on with a best-effort
// layout and never fails; errors are the underlying writer's.
//
// An Indenter is used by one goroutine.
type Indenter struct {
	w   io.Writer
	buf []byte // this write's output, reused
	st  indentState
}

// NewIndenter returns an Indenter writing to w.
func NewIndenter(w io.Writer) *Indenter {
	return &Indenter{w: w}
}

func (ind *Indenter) Write(p []byte) (int, error) {
	ind.buf = appendIndented(&ind.st, ind.buf[:0], p)
	if _, err := ind.w.Write(ind.buf); err != nil {
		return 0, err
	}
	return len(p), nil
}

// WriteString is Write of s.
func (ind *Indenter) WriteString(s string) (int, error) {
	ind.buf = appendIndented(&ind.st, ind.buf[:0], s)
	if _, err := ind.w.Write(ind.buf); err != nil {
		return 0, err
	}
	return len(s), nil
}

// WriteByte is Write of c.
func (ind *Indenter) WriteByte(c byte) error {
	_, err := ind.Write([]byte{c})
	return err
}

// AppendIndent appends src, a whole JSON value, indented as an Indenter
// writes it, to dst.
func AppendIndent(dst, src []byte) []byte {
	var st indentState
	return appendIndented(&st, dst, src)
}

// indentState is where an Indenter is in its input between writes.
type indentState struct {
	depth int
	// inString: inside a string, where every byte is copied; escaped: the
	// byte before was its backslash.
	inString, escaped bool
	// opened: an object or array was opened and nothing written in it
	// yet; its line is broken by its first member, not by its end.
	opened bool
}

// appendIndented appends the indented form of the next piece of input.
func appendIndented[T string | []byte](s *indentState, dst []byte, p T) []byte {
	for i := 0; i < len(p); i++ {
		c := p[i]
		if s.inString {
			// Copy the run up to the string's closing quote at once.
			j := i
			for ; j < len(p); j++ {
				if s.escaped {
					s.escaped = false
				} else if p[j] == '\\' {
					s.escaped = true
				} else if p[j] == '"' {
					s.inString = false
					break
				}
			}
			if j == len(p) {
				return append(dst, p[i:]...)
			}
			dst = append(dst, p[i:j+1]...)
			i = j
			continue
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		if s.opened && c != '}' && c != ']' {
			s.opened = false
			s.depth++
			dst = appendNewline(dst, s.depth)
		}
		switch c {
		case '"':
			s.inString = true
			dst = append(dst, c)
		case '{', '[':
			s.opened = true
			dst = append(dst, c)
		case ',':
			dst = appendNewline(append(dst, c), s.depth)
		case ':':
			dst = append(dst, ':', ' ')
		case '}', ']':
			if s.opened {
				s.opened = false
			} else {
				s.depth--
				dst = appendNewline(dst, s.depth)
			}
			dst = append(dst, c)
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// appendNewline appends a line break and depth levels of indentation
// (none below zero: invalid input).
func appendNewline(dst []byte, depth int) []byte {
	dst = append(dst, '\n')
	for range depth {
		dst = append(dst, ' ', ' ')
	}
	return dst
}
