package conversion

import (
	"bytes"
	"slices"

	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/registry"
)

// unchangedChecker is a Schema that can tell from an encoded object, read
// where it is in an answer, that pruning and defaulting leave it as it is,
// that it is in Marshal's form, and where its metadata is, handing its
// members to member as it reads them (schema.Schema.UnchangedAt).
type unchangedChecker interface {
	UnchangedAt(t *codec.Tokens, member func(name, value []byte) bool) (start, end int, ok bool)
}

// rawResult is quickResult without decoding: when the webhook's answer
// for a stored object is in Marshal's form, unchanged by s's pruning and
// defaulting, at apiVersion to, with its original's kind, name,
// namespace, uid, labels and annotations byte for byte, the result is the
// answer with the original's encoded metadata in place of its own —
// exactly what result would encode. ok is false otherwise. It is the
// steps send takes for each object of an answer (quickReview's walk, then
// rawResultAt), for one object alone.
func rawResult(orig Object, converted []byte, to string, s registry.Schema) (_ []byte, ok bool) {
	uc, ok := s.(unchangedChecker)
	if orig.Key == "" || !ok {
		return nil, false
	}
	t := codec.MakeTokens(converted)
	start, end, ok := uc.UnchangedAt(&t, keptMember)
	if !ok || !t.End() {
		return nil, false
	}
	out, _, ok := rawResultAt(orig, converted, to, start, end)
	return out, ok
}

// rawResultAt is rawResult for an answer the target schema's walk
// accepted (UnchangedAt, with keptMember: when the answer's metadata
// members are the original's byte for byte, as sameMetadata finds, check
// keeps them), its metadata at converted[start:end]. part says the result
// is converted itself (not copied; capped, so that appending to it
// cannot write past it), else it is new.
func rawResultAt(orig Object, converted []byte, to string, start, end int) (_ []byte, part, ok bool) {
	if orig.Key == "" || start == end || converted[start] != '{' {
		return nil, false, false
	}
	if sameMetadata(orig, converted, to, start, end) {
		return converted[:len(converted):len(converted)], true, true
	}
	var id, cid identity
	if !id.scan(orig.JSON, true) || !cid.scan(converted, false) || !isString(cid.apiVersion, to) ||
		cid.kind == nil || !bytes.Equal(cid.kind, id.kind) ||
		!bytes.Equal(cid.name, id.name) || !bytes.Equal(cid.namespace, id.namespace) || !bytes.Equal(cid.uid, id.uid) ||
		!sameField(cid.labels, id.labels) || !sameField(cid.annotations, id.annotations) {
		return nil, false, false
	}
	out := make([]byte, 0, len(converted)-(end-start)+len(id.metadata))
	out = append(out, converted[:start]...)
	out = append(out, id.metadata...)
	return append(out, converted[end:]...), false, true
}

// sameMetadata reports whether the result for the answer most webhooks
// give is the answer itself: the original's encoded members, metadata
// included, byte for byte from kind to the end of metadata
// (converted[metaStart:metaEnd], which UnchangedSpan found, its labels
// and annotations objects), under apiVersion to. Then kind, name,
// namespace, uid, labels and annotations are the original's, and so is
// the metadata result gives the answer. The bytes are compared, not read
// again: UnchangedSpan accepted the answer, so it is compact, its
// top-level names sorted, each once, and the original is stored, in
// Marshal's form, so equal bytes are equal members. false for any other
// answer (apiVersion not first, say), which rawResult reads in full.
func sameMetadata(orig Object, converted []byte, to string, metaStart, metaEnd int) bool {
	// The original's apiVersion, as APIVersion reads it (without making
	// it a string), and what follows it.
	if !bytes.HasPrefix(orig.JSON, []byte(avPrefix)) {
		return false
	}
	origRest := orig.JSON[len(avPrefix):]
	end := bytes.IndexByte(origRest, '"')
	if end < 0 || bytes.IndexByte(origRest[:end], '\\') >= 0 {
		return false
	}
	origRest = origRest[end+1:]
	head := len(avPrefix) + len(to) + 1 // {"apiVersion":"to"
	if metaStart <= head || string(converted[:len(avPrefix)]) != avPrefix ||
		string(converted[len(avPrefix):head-1]) != to || converted[head-1] != '"' {
		return false
	}
	// Kind is the member after apiVersion, as Marshal sorts them; the
	// members up to metadata's end are the original's.
	return bytes.HasPrefix(converted[head:], []byte(`,"kind":`)) &&
		bytes.HasPrefix(origRest, converted[head:metaEnd])
}

// keptMember reports whether check would keep a member of a stored
// original's metadata as it is: labels and annotations must be objects (a
// stored object's hold strings), not null, which check drops.
func keptMember(name, v []byte) bool {
	return (string(name) != "labels" && string(name) != "annotations") || v[0] == '{'
}

// eachMember reads the object at t, calling fn with each member's name
// and encoded value, and reports whether the object is one: false for
// anything else, a name escaped, or when fn says not ok. fn's done stops
// the reading there (what follows is not checked).
func eachMember(t *codec.Tokens, fn func(name, v []byte) (done, ok bool)) bool {
	if !t.Consume('{') {
		return false
	}
	for first := true; !t.Consume('}'); first = false {
		if !first && !t.Consume(',') {
			return false
		}
		name, plain, ok := t.Key()
		if !ok || !plain {
			return false
		}
		v, ok := t.Value()
		if !ok {
			return false
		}
		if done, ok := fn(name, v); !ok || done {
			return ok
		}
	}
	return true
}

// rawObject is one converted object of an answer as quickReview read it:
// its encoding and, when unchanged, where its metadata is in it
// (json[metaStart:metaEnd]; both 0: none), the target schema's walk
// having accepted it.
type rawObject struct {
	json               []byte
	unchanged          bool
	metaStart, metaEnd int
	// stored: json is its original, byte for byte, but for apiVersion
	// (storedMatcher), and so the result as it is.
	stored bool
}

// storedMatcher returns, when the originals' results may be themselves,
// a function giving the length of the answer's object at the start of b
// when it is objs[j] byte for byte but for its apiVersion, to (0 when it
// is not); nil when none may be. Those are the stored objects written at
// the storage version since its schema last changed
// (Definition.SchemaRevision): the write pruned and defaulted them with
// that schema and encoded them in Marshal's form, so when the target
// version has the same schema, pruning and defaulting leave them as they
// are, and check keeps their metadata, its own being the original's.
// Comparing the answer's bytes with the original's then stands for
// quickReview's walk of the answer, the cost of a cold list's reviews;
// an original kept in parts (Cached) is compared part by part, not put
// together. Not safe for concurrent use.
func (w *Webhook) storedMatcher(to string, objs []Object) func(j int, b []byte) int {
	def := w.def
	if def == nil || def.PreserveUnknownFields || def.StoredAs != nil {
		return nil
	}
	sv, tv := def.StorageVersion(), versionOf(def, to)
	if sv == nil || tv == nil || !bytes.Equal(sv.OpenAPISchema, tv.OpenAPISchema) {
		return nil
	}
	prefix := []byte(avPrefix + def.StorageAPIVersion() + `"`)
	var pieces [][]byte
	return func(j int, b []byte) int {
		o := objs[j]
		if o.Key == "" || o.Revision <= def.SchemaRevision {
			return 0
		}
		if o.JSON != nil {
			pieces = append(pieces[:0], o.JSON)
		} else if o.Cached != nil {
			pieces = o.Cached.AppendPieces(pieces[:0])
		}
		// The original's first piece holds its apiVersion; what follows
		// it, from its closing quote, must follow to.
		if len(pieces) == 0 || !bytes.HasPrefix(pieces[0], prefix) {
			return 0
		}
		n := len(avPrefix) + len(to)
		if len(b) < n || string(b[:len(avPrefix)]) != avPrefix || string(b[len(avPrefix):n]) != to {
			return 0
		}
		for k, p := range pieces {
			if k == 0 {
				p = p[len(prefix)-1:]
			}
			if len(b)-n < len(p) || !bytes.Equal(b[n:n+len(p)], p) {
				return 0
			}
			n += len(p)
		}
		return n
	}
}

// quickReview returns the n encoded converted objects of a compact,
// successful ConversionReview answering uid, read in one pass: ok is
// false for any other answer (an error, whitespace inside, a field
// repeated or escaped), which convertedObjects must read. An object that
// same finds is its original (storedMatcher) is compared, not read. With
// uc, each other object is read by its walk
// (UnchangedAt, with keptMember), and read again plainly only when the
// walk declines it: an answer's objects are read once.
func (w *Webhook) quickReview(uid string, data []byte, n int, uc unchangedChecker, same func(j int, b []byte) int) (objs []rawObject, ok bool) {
	// Encoders end their output with a newline (json.Encoder does).
	data = bytes.TrimSpace(data)
	t := codec.MakeTokens(data)
	objs = make([]rawObject, 0, n)
	readObjects := func(int) bool {
		if !t.Consume('[') {
			return false
		}
		for first := true; !t.Consume(']'); first = false {
			if !first && !t.Consume(',') {
				return false
			}
			if len(objs) == n {
				return false
			}
			start, ro := t.Offset(), rawObject{}
			if same != nil {
				if size := same(len(objs), data[start:]); size > 0 && t.Skip(size) {
					ro.json, ro.stored = data[start:start+size:start+size], true
					objs = append(objs, ro)
					continue
				}
			}
			if uc != nil {
				at := t
				if ro.metaStart, ro.metaEnd, ro.unchanged = uc.UnchangedAt(&t, keptMember); ro.unchanged {
					if ro.metaEnd > 0 {
						ro.metaStart, ro.metaEnd = ro.metaStart-start, ro.metaEnd-start
					}
				} else {
					t, ro.metaStart, ro.metaEnd = at, 0, 0
				}
			}
			if !ro.unchanged {
				if _, ok := t.Value(); !ok {
					return false
				}
			}
			ro.json = data[start:t.Offset():t.Offset()]
			objs = append(objs, ro)
		}
		return true
	}
	var resp [3][]byte // uid, result, convertedObjects (read in place)
	readResponse := func(int) bool {
		return t.Peek() == '{' && readObject(&t, []string{"uid", "result", "convertedObjects"}, resp[:], readObjects, 2)
	}
	var top [3][]byte // apiVersion, kind, response (read in place)
	ok = readObject(&t, []string{"apiVersion", "kind", "response"}, top[:], readResponse, 2)
	uidv, result := resp[0], resp[1]
	if !ok || !t.End() || top[2] == nil || resp[2] == nil || len(objs) != n {
		return nil, false
	}
	if w.review == "v1" && (!isString(top[0], "apiextensions.k8s.io/v1") || !isString(top[1], "ConversionReview") || !isString(uidv, uid)) {
		return nil, false
	}
	var status [1][]byte
	if result == nil || !members(result, []string{"status"}, status[:]) || !isString(status[0], "Success") {
		return nil, false
	}
	return objs, true
}

// readObject reads the compact object at t, whose names must be plain:
// the values of the members named in names go to vals, but for
// names[inPlace], whose value read reads (vals gets a non-nil mark); the
// others are skipped. ok is false for malformed input, a name repeated or
// escaped, or when read is.
func readObject(t *codec.Tokens, names []string, vals [][]byte, read func(k int) bool, inPlace int) bool {
	if !t.Consume('{') {
		return false
	}
	for first := true; !t.Consume('}'); first = false {
		if !first && !t.Consume(',') {
			return false
		}
		name, plain, ok := t.Key()
		if !ok || !plain {
			return false
		}
		k := slices.Index(names, string(name))
		if k >= 0 && vals[k] != nil {
			return false
		}
		switch {
		case k == inPlace:
			if !read(k) {
				return false
			}
			vals[k] = []byte{}
		default:
			v, ok := t.Value()
			if !ok {
				return false
			}
			if k >= 0 {
				vals[k] = v
			}
		}
	}
	return true
}

// sameField: both absent, or the same encoded object.
func sameField(a, b []byte) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a[0] == '{' && bytes.Equal(a, b)
}

// isString reports whether v is the encoded string s, written without
// escapes.
func isString(v []byte, s string) bool {
	return len(v) == len(s)+2 && v[0] == '"' && v[len(v)-1] == '"' && string(v[1:len(v)-1]) == s
}

// quickResult is check, prune, default and encode for the common answer:
// a stored object converted to apiVersion to with its kind, name,
// namespace, uid, labels and annotations as they were. The original is
// not decoded: its identity is read from its encoding, and its encoded
// metadata becomes the result's as it is (check restores the original's
// metadata too, and a stored object's was pruned when it was written).
// ok is false for anything else — an object not stored (Key ""), a change
// the checks refuse or labels and annotations they must validate — and
// the caller must check it; quickResult never accepts what check refuses.
// scratch is a buffer to reuse; the one returned may have grown.
func quickResult(orig Object, converted any, to string, s registry.Schema, scratch []byte) (_ []byte, _ []byte, ok bool) {
	obj, isObj := converted.(map[string]any)
	if orig.Key == "" || !isObj {
		return nil, scratch, false
	}
	var id identity
	if !id.scan(orig.JSON, true) {
		return nil, scratch, false
	}
	md, isObj := obj["metadata"].(map[string]any)
	if av, _ := obj["apiVersion"].(string); av != to || !isObj {
		return nil, scratch, false
	}
	kind, _ := obj["kind"].(string)
	if !id.is(id.kind, kind) {
		return nil, scratch, false
	}
	for _, f := range [...]struct {
		key string
		raw []byte
	}{{"name", id.name}, {"namespace", id.namespace}, {"uid", id.uid}} {
		if v, _ := md[f.key].(string); !id.is(f.raw, v) {
			return nil, scratch, false
		}
	}
	for _, f := range [...]struct {
		key string
		raw []byte
	}{{"labels", id.labels}, {"annotations", id.annotations}} {
		if ok, scratch = sameMap(f.raw, md[f.key], scratch); !ok {
			return nil, scratch, false
		}
	}
	// Metadata is the original's; Prune would drop none of it.
	delete(obj, "metadata")
	if s != nil {
		s.Prune(obj)
		s.Default(obj)
	}
	obj["metadata"] = codec.Raw(id.metadata)
	b, err := finish(obj, nil)
	return b, scratch, err == nil
}

// sameMap reports whether a converted object's labels (or annotations) v
// are the original's, encoded as raw (nil when absent): both absent, or v
// encodes to raw exactly (stored objects are in Marshal's form; anything
// else is left to check).
func sameMap(raw []byte, v any, scratch []byte) (bool, []byte) {
	if raw == nil {
		return v == nil, scratch
	}
	m, ok := v.(map[string]any)
	if !ok || raw[0] != '{' {
		return false, scratch
	}
	for _, x := range m {
		if _, ok := x.(string); !ok {
			return false, scratch
		}
	}
	scratch, err := codec.AppendMarshal(scratch[:0], m)
	return err == nil && bytes.Equal(scratch, raw), scratch
}

// identity is what the checks compare of an original, encoded: its
// apiVersion, kind and metadata, and metadata's name, namespace, uid,
// labels and annotations (nil when absent).
type identity struct {
	apiVersion, kind, metadata                []byte
	name, namespace, uid, labels, annotations []byte
}

var (
	topFields  = []string{"apiVersion", "kind", "metadata"}
	metaFields = []string{"name", "namespace", "uid", "labels", "annotations"}
)

// scan reads id from an encoded object: false when it is not compact JSON
// with a metadata object, or repeats a field read. It stops at the end of
// metadata when apiVersion and kind came before it, as Marshal writes
// them; what follows is not read, so b must be known to have each
// top-level field once (a stored object, or one schema.Unchanged
// accepted). Metadata is read whole unless stored.
func (id *identity) scan(b []byte, stored bool) bool {
	var top [3][]byte
	if !firstMembers(b, topFields, top[:]) || len(top[2]) == 0 || top[2][0] != '{' {
		return false
	}
	id.apiVersion, id.kind, id.metadata = top[0], top[1], top[2]
	var md [5][]byte
	read := members
	if stored {
		read = firstMembers
	}
	if !read(id.metadata, metaFields, md[:]) {
		return false
	}
	id.name, id.namespace, id.uid, id.labels, id.annotations = md[0], md[1], md[2], md[3], md[4]
	return true
}

// str is the string encoded as raw: "" when raw is nil (absent, as
// check reads a missing field); ok is false when raw is another value.
func (id *identity) str(raw []byte) (string, bool) {
	if raw == nil {
		return "", true
	}
	return codec.StringValue(raw)
}

// is reports whether the string encoded as raw (nil: "") is s, as check
// compares them: a field that is not a string reads as "".
func (id *identity) is(raw []byte, s string) bool {
	if raw == nil {
		return s == ""
	}
	if len(raw) == len(s)+2 && raw[0] == '"' && string(raw[1:len(raw)-1]) == s {
		return true // no escapes: the common case, without decoding
	}
	v, ok := codec.StringValue(raw)
	if !ok {
		return s == ""
	}
	return v == s
}

// members reads the members named in names of the compact JSON object b
// into vals (same order; nil when absent). ok is false when b is not a
// compact object, has one of the names twice, or has a name that is not
// plain (escaped or not ASCII: the caller must decode b to compare it).
func members(b []byte, names []string, vals [][]byte) bool {
	return readMembers(b, names, vals, false)
}

// firstMembers is members stopping once it has them all: what follows is
// neither read nor checked, so b must be known to name each once (stored
// objects do).
func firstMembers(b []byte, names []string, vals [][]byte) bool {
	return readMembers(b, names, vals, true)
}

// readMembers reads names as they are written, which saves a string per
// member over codec.EachMember: a list's answer has a few hundred
// thousand.
func readMembers(b []byte, names []string, vals [][]byte, stop bool) bool {
	clear(vals)
	t := codec.MakeTokens(b)
	found, stopped := 0, false
	ok := eachMember(&t, func(name, v []byte) (bool, bool) {
		for k, n := range names {
			if n == string(name) {
				if vals[k] != nil {
					return false, false
				}
				vals[k] = v
				found++
			}
		}
		stopped = stop && found == len(names)
		return stopped, true
	})
	return ok && (stopped || t.End())
}
