package codec

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"math/bits"
)

// Stored objects are the compact JSON that encoding/json.Marshal writes for
// a map[string]any (keys sorted at every level, no whitespace), without
// metadata.resourceVersion, which is the etcd revision and set on read.
// Decoding a whole object only to set that one field and encode it again is
// most of the CPU a read costs, so this file edits and reads the encoded
// form directly. Every function here reports ok=false on input it does not
// expect, and callers then take the decode/encode path, which stays the
// reference behaviour.

// SetResourceVersion returns a new buffer equal to what decoding stored,
// setting metadata.resourceVersion to rv and json.Marshal would produce: it
// inserts "resourceVersion":rv at its sorted place among metadata's keys,
// or replaces the value of an existing resourceVersion member.
//
// ok is false, and the result nil, when stored is not a JSON object in the
// compact sorted form above: malformed JSON, whitespace, top-level or
// metadata keys out of order or duplicated, or no metadata object. stored is
// not modified. Other parts of stored are copied as they are; given stored
// as json.Marshal writes it, the result is byte-identical to the slow path.
func SetResourceVersion(stored []byte, rv string) ([]byte, bool) {
	sp, ok := FindResourceVersion(stored)
	if !ok {
		return nil, false
	}
	return sp.Set(rv), true
}

// RVSplice is where SetResourceVersion sets metadata.resourceVersion in
// one stored object, found by one scan of it: an update sets two
// revisions in the object it writes (the one it compares the cached copy
// with, and the written one it answers with), and the scan, which checks
// every token of metadata (managedFields among them), costs far more
// than the copies.
type RVSplice struct {
	stored []byte
	// The member replaces stored[at:to], preceded (comma<0) or followed
	// (comma>0) by a comma, or neither.
	at, to, comma int
}

// FindResourceVersion scans stored as SetResourceVersion does, and
// returns where it sets the resourceVersion; ok is false when
// SetResourceVersion's is. stored must not change while the RVSplice is
// in use.
func FindResourceVersion(stored []byte) (RVSplice, bool) {
	return findRV(stored, nil)
}

// metaSpans are where findRV saw the members ScanMeta reads and the
// metadata object: stored[x.start:x.end] is the encoded value, empty when
// the member is absent.
type metaSpans struct {
	apiVersion, name, namespace, labels, managedFields, metadata span
	// rawManagedFields says managedFields are a Raw's, as
	// rawManagedFields finds them (their span is then set).
	rawManagedFields bool
}

type span struct{ start, end int }

// findRV is FindResourceVersion, noting in spans, when it is not nil,
// where the members ScanMeta reads are. Keys are checked to be strictly
// sorted, so each member is seen at most once.
func findRV(stored []byte, spans *metaSpans) (RVSplice, bool) {
	s := scanner{b: stored}
	if !s.consume('{') {
		return RVSplice{}, false
	}
	// The metadata object's splice: bytes [at, to) are replaced by the
	// resourceVersion member; comma says where a separating comma goes.
	at, to, comma := -1, -1, 0
	var prev key
	for first := true; !s.consume('}'); first = false {
		if !first && !s.consume(',') {
			return RVSplice{}, false
		}
		k, ok := s.key()
		if !ok || (!first && !less(stored, prev, k)) {
			return RVSplice{}, false
		}
		prev = k
		start := s.i
		if !k.is(stored, "metadata") {
			if !s.value(0) {
				return RVSplice{}, false
			}
			if spans != nil && k.is(stored, "apiVersion") {
				spans.apiVersion = span{start, s.i}
			}
			continue
		}
		if at, to, comma, ok = s.metadataRV(spans); !ok {
			return RVSplice{}, false
		}
		if spans != nil {
			spans.metadata = span{start, s.i}
		}
	}
	if at < 0 || s.i != len(stored) {
		return RVSplice{}, false
	}
	return RVSplice{stored: stored, at: at, to: to, comma: comma}, true
}

// Indexed is a stored object with its revision set, and what the watch
// cache indexes it by.
type Indexed struct {
	JSON []byte
	Meta Meta
	// JSON[MetaStart:MetaEnd] is the metadata object.
	MetaStart, MetaEnd int
	// Shared are where in JSON the field sets of metadata.managedFields
	// are, as FieldsV1Spans gives them.
	Shared [][2]int
	// RawManagedFields, when its end is not 0, is where in JSON
	// metadata.managedFields are when they are in the form Decode keeps
	// as a Raw (DecodeOptions.RawManagedFields): a decode of JSON told
	// so (DecodeOptions.RawManagedFieldsAt) need not check them again.
	RawManagedFields [2]int
}

// IndexStored returns in one scan of stored what three scans return:
// SetResourceVersion(stored, rv), then ScanMeta and MetadataSpan of that;
// and FieldsV1Spans of the result, from where that scan saw managedFields.
// ok is false when SetResourceVersion's is; when it is true, so are the
// other two's. Every event of the watch cache takes this path, and each
// scan checks every byte of the object (its managedFields among them).
// The object is written over dst's array (from dst[:0]), grown as
// needed: a cache that keeps it in parts copies them out of a buffer it
// reuses, rather than of a new one per event.
func IndexStored(dst, stored []byte, rv string) (Indexed, bool) {
	spans := metaSpans{rawManagedFields: true}
	sp, ok := findRV(stored, &spans)
	if !ok {
		return Indexed{}, false
	}
	// stored is valid where findRV scanned it, and the splice changes
	// only the resourceVersion member: ScanMeta of the result reads these
	// same members, which reading again from their spans cannot fail.
	var m Meta
	m.APIVersion = spans.apiVersion.stringOrEmpty(stored)
	m.Name = spans.name.stringOrEmpty(stored)
	m.Namespace = spans.namespace.stringOrEmpty(stored)
	if spans.labels.end > 0 {
		sc := scanner{b: stored[:spans.labels.end], i: spans.labels.start}
		m.Labels, _ = sc.labels()
	}
	var shared [][2]int
	var raw [2]int
	if mf := spans.managedFields; mf.end > 0 {
		// managedFields sorts before resourceVersion: their offsets in
		// stored are theirs in the result.
		shared = fieldsV1Spans(stored[:mf.end], mf.start)
		if spans.rawManagedFields {
			raw = [2]int{mf.start, mf.end}
		}
	}
	out := sp.AppendTo(dst[:0], rv)
	// The splice is inside metadata: its end moves by what it added.
	return Indexed{
		JSON:             out,
		Meta:             m,
		MetaStart:        spans.metadata.start,
		MetaEnd:          spans.metadata.end + len(out) - len(stored),
		Shared:           shared,
		RawManagedFields: raw,
	}, true
}

// stringOrEmpty reads the value at x as scanner.stringOrEmpty does; ""
// when x is empty.
func (x span) stringOrEmpty(b []byte) string {
	if x.end == 0 {
		return ""
	}
	sc := scanner{b: b[:x.end], i: x.start}
	v, _ := sc.stringOrEmpty()
	return v
}

// Set returns what SetResourceVersion(stored, rv) returns, in a new
// buffer.
func (sp RVSplice) Set(rv string) []byte {
	// Room for the member (name, quoted rv) and a comma; an rv that needs
	// escaping grows the buffer once more.
	return sp.AppendTo(make([]byte, 0, len(sp.stored)-(sp.to-sp.at)+len(rvName)+len(rv)+3), rv)
}

// AppendTo appends what Set(rv) returns to out.
func (sp RVSplice) AppendTo(out []byte, rv string) []byte {
	out = append(out, sp.stored[:sp.at]...)
	out = sp.appendMember(out, rv)
	return append(out, sp.stored[sp.to:]...)
}

// appendMember appends what replaces stored[at:to]: the resourceVersion
// member rv, with its separating comma.
func (sp RVSplice) appendMember(out []byte, rv string) []byte {
	if sp.comma < 0 {
		out = append(out, ',')
	}
	out = appendRV(out, rv)
	if sp.comma > 0 {
		out = append(out, ',')
	}
	return out
}

// Parts returns what Set(rv) returns held in three parts, the stored
// bytes before the member, the member and the stored bytes after it,
// which an answer writes as they are (WriteRawParts) instead of copying
// the whole object into one buffer. stored must not change while they
// are in use.
func (sp RVSplice) Parts(rv string) *RVParts {
	p := &RVParts{head: sp.stored[:sp.at], tail: sp.stored[sp.to:]}
	p.member = sp.appendMember(p.buf[:0], rv)
	return p
}

// RVParts is an object with its resourceVersion set, in parts (see
// RVSplice.Parts).
type RVParts struct {
	head, member, tail []byte
	// buf holds the member of any revision (19 digits at most) without
	// another allocation.
	buf [48]byte
}

var _ RawParts = (*RVParts)(nil)

// Len is the length of the object.
func (p *RVParts) Len() int { return len(p.head) + len(p.member) + len(p.tail) }

// WriteTo writes the object to w.
func (p *RVParts) WriteTo(w io.Writer) (int64, error) {
	var n int64
	for _, b := range [...][]byte{p.head, p.member, p.tail} {
		k, err := w.Write(b)
		n += int64(k)
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// JSON returns the object in a new buffer, as Set does.
func (p *RVParts) JSON() []byte {
	out := make([]byte, 0, p.Len())
	out = append(out, p.head...)
	out = append(out, p.member...)
	return append(out, p.tail...)
}

// Equal reports whether b is what Set(rv) returns, without making it.
func (sp RVSplice) Equal(rv string, b []byte) bool {
	return sp.equal(rv, b, bytes.Equal)
}

// EqualButTimes is Equal but for the values of time members in
// stored[from:to], which must end before the splice, as SameButTimes
// compares them.
func (sp RVSplice) EqualButTimes(rv string, b []byte, from, to int) bool {
	if to > sp.at {
		return false
	}
	return sp.equal(rv, b, func(b, head []byte) bool { return SameButTimes(head, b, from, to) })
}

func (sp RVSplice) equal(rv string, b []byte, equalHead func(b, head []byte) bool) bool {
	var buf [64]byte
	member := sp.appendMember(buf[:0], rv)
	head, tail := sp.stored[:sp.at], sp.stored[sp.to:]
	return len(b) == len(head)+len(member)+len(tail) &&
		equalHead(b[:len(head)], head) &&
		bytes.Equal(b[len(head):len(head)+len(member)], member) &&
		bytes.Equal(b[len(head)+len(member):], tail)
}

// metadataRV scans the metadata object at s.i and returns where the
// resourceVersion member goes: replace stored[at:to] with it, preceded
// (comma<0) or followed (comma>0) by a comma, or neither (empty metadata or
// replacing an existing member).
//
// With spans not nil, it notes where the name, namespace and labels
// values are.
func (s *scanner) metadataRV(spans *metaSpans) (at, to, comma int, ok bool) {
	if !s.consume('{') {
		return 0, 0, 0, false
	}
	at = -1
	var prev key
	for first := true; ; first = false {
		if s.peek('}') {
			if at < 0 { // every key sorts before resourceVersion
				at, to = s.i, s.i
				if !first {
					comma = -1
				}
			}
			s.i++
			return at, to, comma, true
		}
		if !first && !s.consume(',') {
			return 0, 0, 0, false
		}
		start := s.i
		k, ok := s.key()
		if !ok || (!first && !less(s.b, prev, k)) {
			return 0, 0, 0, false
		}
		prev = k
		if at < 0 {
			switch c := k.compare(s.b, "resourceVersion"); {
			case c == 0:
				if !s.value(0) {
					return 0, 0, 0, false
				}
				at, to = start, s.i
				continue
			case c > 0:
				at, to, comma = start, start, 1
			}
		}
		vstart := s.i
		if spans != nil && spans.rawManagedFields && k.is(s.b, "managedFields") {
			// Checked for Marshal's form in the same pass as they are
			// scanned (a Raw's bytes are valid JSON), for the decode
			// of the cached object not to check them again.
			if _, end, ok := rawManagedFields(s.b, vstart, rawManagedFieldsDepth, true); ok {
				s.i = end
				spans.managedFields = span{vstart, end}
				continue
			}
			spans.rawManagedFields = false
		}
		if !s.value(0) {
			return 0, 0, 0, false
		}
		if spans != nil {
			switch {
			case k.is(s.b, "name"):
				spans.name = span{vstart, s.i}
			case k.is(s.b, "namespace"):
				spans.namespace = span{vstart, s.i}
			case k.is(s.b, "labels"):
				spans.labels = span{vstart, s.i}
			case k.is(s.b, "managedFields"):
				spans.managedFields = span{vstart, s.i}
			}
		}
	}
}

const rvName = `"resourceVersion":`

// appendRV appends the "resourceVersion":rv member as json.Marshal writes
// it. Revisions are decimal digits; anything else goes through
// json.Marshal for its exact escaping.
func appendRV(b []byte, rv string) []byte {
	b = append(b, rvName...)
	for i := 0; i < len(rv); i++ {
		if c := rv[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(rv) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, rv...)
	return append(b, '"')
}

// Meta is what the watch cache indexes an object by.
type Meta struct {
	Name      string
	Namespace string
	// Labels is nil when metadata.labels is absent, null or empty, or when
	// any of its values is not a string (as unstructured.GetLabels).
	Labels     map[string]string
	APIVersion string
}

// MetadataSpan returns where the top-level metadata object is in a compact
// JSON object: encoded[start:end]. It reads no further than metadata's end,
// so what follows is not checked; ok is false when there is no metadata
// object before a malformed part (or at all). The first metadata key
// counts: stored objects have one.
func MetadataSpan(encoded []byte) (start, end int, ok bool) {
	s := scanner{b: encoded}
	if !s.consume('{') {
		return 0, 0, false
	}
	for first := true; !s.consume('}'); first = false {
		if !first && !s.consume(',') {
			return 0, 0, false
		}
		k, ok := s.key()
		if !ok {
			return 0, 0, false
		}
		isMeta := k.is(encoded, "metadata") && s.peek('{')
		start := s.i
		if !s.value(0) {
			return 0, 0, false
		}
		if isMeta {
			return start, s.i, true
		}
	}
	return 0, 0, false
}

// FindPath returns the encoded value at path (object member names, from
// the top) in a compact JSON object, without decoding anything: found is
// false when a member is missing or a value on the way is not an object.
// ok is false when encoded is malformed where it was read (what was not
// read is not checked). A repeated member counts by its first occurrence:
// stored objects have none.
func FindPath(encoded []byte, path []string) (value []byte, found, ok bool) {
	s := scanner{b: encoded}
	for _, name := range path {
		if !s.consume('{') {
			return nil, false, s.value(0)
		}
		for first := true; ; first = false {
			if s.consume('}') {
				return nil, false, true
			}
			if !first && !s.consume(',') {
				return nil, false, false
			}
			k, ok := s.key()
			if !ok {
				return nil, false, false
			}
			if k.is(encoded, name) {
				break
			}
			if !s.value(0) {
				return nil, false, false
			}
		}
	}
	start := s.i
	if !s.value(0) {
		return nil, false, false
	}
	return encoded[start:s.i], true, true
}

// labels reads a labels value: a map when it is an object of strings, nil
// for anything else. A repeated label counts by its last value.
func (s *scanner) labels() (map[string]string, bool) {
	if !s.peek('{') {
		return nil, s.value(0)
	}
	s.i++
	var l map[string]string
	var notString map[string]bool // labels whose last value is not a string; rare
	for first := true; !s.consume('}'); first = false {
		if !first && !s.consume(',') {
			return nil, false
		}
		k, ok := s.key()
		if !ok {
			return nil, false
		}
		name := k.string(s.b)
		if !s.peek('"') {
			if !s.value(0) {
				return nil, false
			}
			if notString == nil {
				notString = map[string]bool{}
			}
			notString[name] = true
			delete(l, name)
			continue
		}
		v, ok := s.str()
		if !ok {
			return nil, false
		}
		if l == nil {
			l = make(map[string]string, 4)
		}
		l[name] = v.string(s.b)
		delete(notString, name)
	}
	if len(notString) > 0 || len(l) == 0 {
		return nil, true
	}
	return l, true
}

// stringOrEmpty reads a value: its text when it is a string, "" otherwise.
func (s *scanner) stringOrEmpty() (string, bool) {
	if !s.peek('"') {
		return "", s.value(0)
	}
	v, ok := s.str()
	if !ok {
		return "", false
	}
	return v.string(s.b), true
}

// maxScanDepth bounds nesting as the decoders bound it, so that hostile
// input cannot recurse without end.
const maxScanDepth = 10000

// scanner walks compact JSON, validating it as it skips values.
type scanner struct {
	b []byte
	i int
}

// key is a string's contents, b[start:end] without the quotes; plain when
// it is printable ASCII without escapes, so that its bytes are its value.
type key struct {
	start, end int
	plain      bool
}

func (s *scanner) peek(c byte) bool { return s.i < len(s.b) && s.b[s.i] == c }

func (s *scanner) consume(c byte) bool {
	if s.peek(c) {
		s.i++
		return true
	}
	return false
}

// key scans an object key and the colon after it.
func (s *scanner) key() (key, bool) {
	if !s.peek('"') {
		return key{}, false
	}
	k, ok := s.str()
	return k, ok && s.consume(':')
}

// eachMember calls member with each member name of the object at s.i,
// with s at the member's value, which member must consume. name is only
// valid during the call.
func eachMember(s *scanner, member func(name []byte) bool) bool {
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
		name := s.b[k.start:k.end]
		if !k.plain {
			name = []byte(k.string(s.b))
		}
		if !member(name) {
			return false
		}
	}
	return true
}

// str scans the string at s.i.
func (s *scanner) str() (key, bool) {
	b := s.b
	i := s.i + 1
	k := key{start: i, plain: true}
	for {
		// Eight bytes at a time to the first special one (where the
		// byte loop below stops at once), or one by one near the end.
		for i+8 <= len(b) {
			if m := special8(binary.LittleEndian.Uint64(b[i:])); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		for i < len(b) && !strSpecial[b[i]] {
			i++
		}
		if i >= len(b) {
			return key{}, false
		}
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
		default: // non-ASCII
			k.plain = false
			i++
		}
	}
}

// strSpecial marks the bytes that end a string's run of plain characters:
// the quote, escapes, control characters (invalid) and non-ASCII bytes.
var strSpecial = func() (t [256]bool) {
	for c := range 256 {
		t[c] = c < 0x20 || c >= 0x80 || c == '"' || c == '\\'
	}
	return t
}()

// special8 marks with their high bit the special bytes of x (see
// strSpecial), read little endian: below 0x20, at or above 0x80, a quote
// or a backslash. The tests for a byte below n, (x - n·ones) &^ x &
// highs, mark the lowest such byte exactly (a borrow from it may mark
// bytes above it too), which is all that is asked: where the first
// special byte is.
func special8(x uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	q := x ^ ones*'"'
	bs := x ^ ones*'\\'
	return ((x-ones*0x20)&^x | (q-ones)&^q | (bs-ones)&^bs | x) & highs
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// value skips the value at s.i.
func (s *scanner) value(depth int) bool {
	if s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '"':
		_, ok := s.str()
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
			if _, ok := s.key(); !ok || !s.value(depth+1) {
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
			if !s.value(depth + 1) {
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

func (s *scanner) literal(lit string) bool {
	if len(s.b)-s.i < len(lit) || string(s.b[s.i:s.i+len(lit)]) != lit {
		return false
	}
	s.i += len(lit)
	return true
}

// number skips a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() bool {
	b, i := s.b, s.i
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i = digits(b, i)
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return false
		}
		i = j
	}
	s.i = i
	return true
}

func digits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

// string returns k's value, unescaped.
func (k key) string(b []byte) string {
	if k.plain {
		return string(b[k.start:k.end])
	}
	// Escapes and non-ASCII text (invalid UTF-8 becomes U+FFFD) are rare in
	// the fields read here; the standard decoder handles them exactly as
	// the server's decoder does.
	var v string
	_ = json.Unmarshal(b[k.start-1:k.end+1], &v) // a scanned string always decodes
	return v
}

// is reports whether k's value is lit (lit is plain ASCII).
func (k key) is(b []byte, lit string) bool {
	if k.plain {
		return string(b[k.start:k.end]) == lit
	}
	return k.string(b) == lit
}

// compare compares k's value with lit the way map keys are sorted.
func (k key) compare(b []byte, lit string) int {
	if k.plain {
		return compare(string(b[k.start:k.end]), lit)
	}
	return compare(k.string(b), lit)
}

// less reports whether a's value sorts before b's.
func less(buf []byte, a, b key) bool {
	if a.plain && b.plain {
		return bytes.Compare(buf[a.start:a.end], buf[b.start:b.end]) < 0
	}
	return a.string(buf) < b.string(buf)
}

// compare is strings.Compare written with operators, which compile
// string(bytes) conversions without copying.
func compare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a == b:
		return 0
	}
	return 1
}

// WithoutTypeMeta returns obj, an encoded object, without its top-level
// apiVersion and kind members, as segments to write one after another:
// how upstream's typed lists write their items. ok is false for anything
// but a well-formed object.
func WithoutTypeMeta(obj []byte) (segs [][]byte, ok bool) {
	s := scanner{b: obj}
	if !s.consume('{') {
		return nil, false
	}
	segs = append(segs, obj[:s.i])
	kept := 0
	for first := true; !s.consume('}'); first = false {
		if !first && !s.consume(',') {
			return nil, false
		}
		start := s.i
		k, ok := s.key()
		if !ok || !s.value(0) {
			return nil, false
		}
		if k.is(obj, "apiVersion") || k.is(obj, "kind") {
			continue
		}
		if kept > 0 {
			segs = append(segs, comma)
		}
		segs = append(segs, obj[start:s.i])
		kept++
	}
	if s.i != len(obj) {
		return nil, false
	}
	return append(segs, obj[s.i-1:]), true
}

var comma = []byte{','}

// FieldsV1Spans returns where the fieldsV1 values of the entries of an
// encoded object's metadata.managedFields are in it, in order, as
// [start, end) offsets: field sets, which are the same bytes in every
// object one manager writes alike, for a cache to keep once (see
// watchcache.Item.SetJSON). obj[mdStart:mdEnd] is the metadata object.
// Its members are read as IndexStored reads them, up to managedFields;
// the entries are walked trusting Marshal's form rather than checking
// every byte again, so that bytes in another form may give wrong spans,
// never ones out of obj or out of order.
func FieldsV1Spans(obj []byte, mdStart, mdEnd int) [][2]int {
	s := scanner{b: obj[:mdEnd], i: mdStart}
	var out [][2]int
	eachMember(&s, func(name []byte) bool {
		if string(name) == "managedFields" {
			out = fieldsV1Spans(s.b, s.i)
			return false
		}
		return s.value(0)
	})
	return out
}

// RawManagedFieldsSpan returns where, in the compact JSON object obj whose
// metadata object is obj[mdStart:mdEnd], metadata.managedFields are when
// they are in the form Decode keeps as a Raw, as IndexStored gives it
// (Indexed.RawManagedFields); [0, 0] when they are not, or absent.
func RawManagedFieldsSpan(obj []byte, mdStart, mdEnd int) [2]int {
	s := scanner{b: obj[:mdEnd], i: mdStart}
	var at [2]int
	eachMember(&s, func(name []byte) bool {
		if string(name) == "managedFields" {
			if _, end, ok := rawManagedFields(s.b, s.i, rawManagedFieldsDepth, true); ok {
				at = [2]int{s.i, end}
			}
			return false
		}
		return s.value(0)
	})
	return at
}

// fieldsV1Spans is FieldsV1Spans of the managedFields array at obj[at:].
func fieldsV1Spans(obj []byte, at int) [][2]int {
	var out [][2]int
	EachRawObjectMember(obj[at:], func(name, f []byte) bool {
		if string(name) == "fieldsV1" {
			// f is a slice of obj: their capacities say where.
			start := cap(obj) - cap(f)
			if start >= 0 && start+len(f) <= len(obj) && (len(out) == 0 || out[len(out)-1][1] <= start) {
				out = append(out, [2]int{start, start + len(f)})
			}
		}
		return true
	}, func([]byte) bool { return true })
	return out
}
