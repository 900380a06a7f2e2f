package apply

import (
	"bytes"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/crdserver/crdserver/internal/codec"
)

// The fast path of Update on encoded entries. The handler decodes the
// object an update starts from with its managedFields kept encoded (a
// codec.Raw, in Marshal's form): decoding ~90 small maps and encoding them
// again cost an update more than working out its fields did. Here the
// entries are read in that form — each one's identity and time, and its
// FieldsV1 searched for the changed fields without decoding it — and
// written back as they are, but for the writer's new time; an entry that
// owns a changed field other than the writer's is decoded and goes the
// way updateFast takes it. The result is updateFast's, encoded.

// encodedEntry is a managedFields entry kept encoded.
type encodedEntry struct {
	key     string
	op      string
	manager string
	version string // apiVersion
	sub     string
	time    string
	hasTime bool
	enc     []byte // the entry, in Marshal's form
	fields  []byte // its fieldsV1
	// timeAt and timeEnd are where the time member's value is in enc,
	// when it has one.
	timeAt, timeEnd int
	timeFound       bool
	// pos is the entry's place among the entries read (-1 for one made
	// anew); edited is set once enc is no longer the entry as read.
	pos    int
	edited bool
	// newTime, when set, is the time that replaces the one at
	// enc[timeAt:timeEnd] as the entry is written (see joinSorted): the
	// writer's entry, when the time is all that changes, is written once.
	newTime string
}

// rawManagedFields returns obj's managedFields when they are kept
// encoded.
func rawManagedFields(obj map[string]any) (codec.Raw, bool) {
	r, ok := metadata(obj)["managedFields"].(codec.Raw)
	return r, ok
}

// updateRaw is update for a live object whose managedFields are the
// encoded raw; it reports false, having changed nothing, when the fast
// path does not apply, for update to decode them and go its way. When
// it leaves obj with entries, it describes them.
func (m *Manager) updateRaw(live, obj map[string]any, raw codec.Raw, manager string) (bool, *Written, error) {
	if m.slow {
		return false, nil, nil
	}
	if m.Subresource == "" {
		// As startingEntries: the client's entries, unless it sent none
		// or sent back live's as they are (as clients that update what
		// they read do), compared without decoding live's, or, when
		// the client's are kept encoded too, without decoding either.
		switch sent := metadata(obj)["managedFields"].(type) {
		case codec.Raw:
			if !bytes.Equal(sent, raw) {
				return false, nil, nil
			}
		case nil:
		default:
			sentList, _ := sent.([]any)
			if isReset(sentList) || (len(sentList) > 0 && !codec.EqualRaw(sentList, raw)) {
				return false, nil, nil
			}
		}
	}
	if manager == "" {
		manager = "unknown"
	}
	id := managerID{Manager: manager, Operation: opUpdate, APIVersion: m.apiVersion(), Subresource: m.Subresource}.String()
	v, err := m.Types.version(m.GroupVersion.Version)
	if err != nil {
		return false, nil, err
	}
	changes, err := m.changes(v, live, obj)
	if err != nil {
		return false, nil, err
	}
	if m.Reset != nil {
		changes = withoutReset(changes, m.Reset[fieldpath.APIVersion(m.apiVersion())])
	}
	out, ids, ok := updateFastRaw(raw, changes, m.apiVersion(), id)
	if !ok {
		return false, nil, nil
	}
	if out == nil {
		setManagedFields(obj, nil)
		return true, nil, nil
	}
	metadata(obj)["managedFields"] = out
	return true, &Written{Raw: out, Entries: ids}, nil
}

// Written describes the managedFields entries an update left encoded (a
// codec.Raw): each is an object whose members are of the types a
// ManagedFieldsEntry has (manager, operation, apiVersion, fieldsType and
// subresource strings, time an RFC 3339 time), and Entries are their
// identities, in order, as metadata validation reads them (without time
// and fields). The handler checks and validates the entries from these
// rather than walking the encoded ones again, for as long as the object
// holds Raw itself.
type Written struct {
	Raw     codec.Raw
	Entries []metav1.ManagedFieldsEntry
}

// EntryIdentities are the identities of decoded managedFields entries
// (without time and fields), as metadata validation reads them and as
// Written gives them for encoded ones; nil for no list.
func EntryIdentities(list []any) []metav1.ManagedFieldsEntry {
	if list == nil {
		return nil
	}
	out := make([]metav1.ManagedFieldsEntry, 0, len(list))
	for _, x := range list {
		e, _ := x.(map[string]any)
		var me metav1.ManagedFieldsEntry
		me.Manager, _ = e["manager"].(string)
		op, _ := e["operation"].(string)
		me.Operation = metav1.ManagedFieldsOperationType(op)
		me.APIVersion, _ = e["apiVersion"].(string)
		me.FieldsType, _ = e["fieldsType"].(string)
		me.Subresource, _ = e["subresource"].(string)
		out = append(out, me)
	}
	return out
}

// Holds reports whether v, an object's managedFields, is w's Raw itself
// (not a copy, nor entries decoded or encoded anew).
func (w *Written) Holds(v any) bool {
	r, ok := v.(codec.Raw)
	return ok && w != nil && len(r) == len(w.Raw) && len(r) > 0 && &r[0] == &w.Raw[0]
}

// updateFastRaw is updateFast on encoded entries: it returns them after
// the write by self that made the changes, encoded (nil when there are
// none left), with their identities in the same order, or false where
// updateFast would, or for an entry it cannot read or splice, or one
// whose members are not of the types a ManagedFieldsEntry has (see
// entryReader).
//
// The changes are looked up in each entry's FieldsV1 as they are: field
// sets are made only for an entry that loses some of them, or for the
// writer's entry when it did not own exactly what the write changed. In
// the usual update neither happens, and the writer's time is all that
// changes.
func updateFastRaw(raw codec.Raw, changes []fieldChange, apiVersion, self string) (codec.Raw, []metav1.ManagedFieldsEntry, bool) {
	var entries []encodedEntry
	updaters := 0
	read := true
	eachEntry(raw, func(e encodedEntry, ok bool) bool {
		if !ok || e.version != apiVersion {
			read = false
			return false
		}
		if e.op == opUpdate {
			updaters++
		}
		e.pos = len(entries)
		entries = append(entries, e)
		return true
	})
	if !read || len(entries) == 0 {
		return nil, nil, false
	}

	cs := newChangeSet(changes)
	out := entries[:0]
	var prev *encodedEntry
	for i := range entries {
		r := entries[i]
		if r.key == self && cs.anyCur {
			prev = &r // a copy: out reuses entries' array
			continue
		}
		if !ownsAnyEncoded(r.fields, cs.paths) {
			out = append(out, r)
			continue
		}
		s, err := decodeEncodedFields(r.fields)
		if err != nil {
			return nil, nil, false
		}
		if s = s.Difference(cs.changed()); s.Empty() {
			continue
		}
		r, ok := withEncodedFields(r, s)
		if !ok {
			return nil, nil, false
		}
		out = append(out, r)
	}
	if cs.anyCur {
		r, ok := mergeSelfEncoded(prev, self, apiVersion, cs)
		if !ok {
			return nil, nil, false
		}
		if prev == nil {
			updaters++
		}
		out = append(out, r)
	}
	if updaters > MaxUpdateManagers {
		return nil, nil, false
	}
	enc, ids := joinSorted(raw, out, len(entries))
	return enc, ids, true
}

// changeSet is a write's changes as the fast path of encoded entries
// reads them.
type changeSet struct {
	// paths are the fields changed, added or removed, each with cur set
	// when the writer owns it after the write (changed or added, and
	// ownable: not in strippedFields).
	paths  []encodedKeyPath
	anyCur bool
	// unkeyed are the changes that cannot be written as FieldsV1 keys
	// (none that a comparison reports): never looked up, but in the sets.
	unkeyed []fieldChange
	// all and cur are the field sets of paths and of those with cur,
	// made on first use.
	all, cur *fieldpath.Set
}

func newChangeSet(changes []fieldChange) *changeSet {
	cs := &changeSet{paths: make([]encodedKeyPath, 0, len(changes))}
	// Every key of every path is written into one buffer, with room for
	// them all unescaped; an escaped one may grow it.
	n, elems := 0, 0
	for _, ch := range changes {
		for _, pe := range ch.path {
			n += len(`"f:"`) + 1 // and room for the quote moved out
			if pe.FieldName != nil {
				n += len(*pe.FieldName)
			}
		}
		elems += len(ch.path)
	}
	buf := make([]byte, 0, n)
	keys := make([][]byte, elems)
	for _, ch := range changes {
		var p encodedKeyPath
		var ok bool
		p, buf, ok = newEncodedKeyPath(ch.path, buf, keys[:len(ch.path):len(ch.path)])
		keys = keys[len(ch.path):]
		cur := ch.kind != removed && !strippedFields.Has(ch.path)
		cs.anyCur = cs.anyCur || cur
		if !ok {
			cs.unkeyed = append(cs.unkeyed, ch) // as keyPaths skips it
			continue
		}
		p.cur = cur
		cs.paths = append(cs.paths, p)
	}
	return cs
}

// changed is the set of every change, changedOnly's changed.
func (cs *changeSet) changed() *fieldpath.Set {
	if cs.all == nil {
		cs.all, cs.cur = cs.sets()
	}
	return cs.all
}

// current is the set of the changes the writer owns after the write.
func (cs *changeSet) current() *fieldpath.Set {
	if cs.cur == nil {
		cs.all, cs.cur = cs.sets()
	}
	return cs.cur
}

func (cs *changeSet) sets() (all, cur *fieldpath.Set) {
	all, cur = &fieldpath.Set{}, &fieldpath.Set{}
	for _, p := range cs.paths {
		all.Insert(p.path)
		if p.cur {
			cur.Insert(p.path)
		}
	}
	for _, ch := range cs.unkeyed {
		all.Insert(ch.path)
		if ch.kind != removed && !strippedFields.Has(ch.path) {
			cur.Insert(ch.path)
		}
	}
	return all, cur
}

// eachEntry reads the encoded entries of raw in turn and calls f with
// each, and whether it reads as an entry (see entryReader.entry), until
// f returns false.
func eachEntry(raw codec.Raw, f func(e encodedEntry, ok bool) bool) {
	var r entryReader
	codec.EachRawObjectMember(raw, func(name, value []byte) bool {
		r.member(name, value)
		return true
	}, func(enc []byte) bool {
		return f(r.entry(enc))
	})
}

// entryReader reads encoded entries' identity, time and fields, one
// member at a time as codec.EachRawObjectMember walks them.
type entryReader struct {
	e          encodedEntry
	fieldsType bool // FieldsV1
	// timeCap is the capacity of the time member's value: the value is a
	// slice of the entry, so their capacities say where it starts.
	timeCap int
	// untyped is set by a member of another type than a
	// ManagedFieldsEntry's (a manager that is no string, a time that is
	// no RFC 3339 time): the handler would drop all managedFields (as
	// decoding them into ObjectMeta fails upstream), which the decoded
	// path settles.
	untyped bool
}

// member reads a member of the entry being read.
func (r *entryReader) member(name, value []byte) {
	// A member of another type reads as absent, as in updateFast.
	e := &r.e
	switch string(name) {
	case "fieldsV1":
		e.fields = value
	case "manager":
		var ok bool
		e.manager, ok = codec.RawString(value)
		r.untyped = r.untyped || !ok
	case "operation":
		switch string(value) {
		case `"` + opApply + `"`:
			e.op = opApply
		case `"` + opUpdate + `"`:
			e.op = opUpdate
		default:
			e.op = "" // neither: the entry is refused
		}
	case "apiVersion":
		var ok bool
		e.version, ok = codec.RawString(value)
		r.untyped = r.untyped || !ok
	case "subresource":
		var ok bool
		e.sub, ok = codec.RawString(value)
		r.untyped = r.untyped || !ok
	case "fieldsType":
		r.fieldsType = string(value) == `"FieldsV1"`
	case "time":
		e.time, e.hasTime = codec.RawString(value)
		if _, err := time.Parse(time.RFC3339, e.time); !e.hasTime || err != nil {
			r.untyped = true
		}
		r.timeCap, e.timeFound = cap(value), true
		e.timeEnd = len(value) // made an offset by entry
	}
}

// entry returns the entry whose members were read, enc, and starts the
// next one; ok is false where updateFast gives up on the decoded entry:
// an operation other than Apply or Update, a fieldsType other than
// FieldsV1, or fieldsV1 missing or not an object; and for a member of
// another type than a ManagedFieldsEntry's.
func (r *entryReader) entry(enc []byte) (e encodedEntry, ok bool) {
	e, fieldsType, timeCap, untyped := r.e, r.fieldsType, r.timeCap, r.untyped
	*r = entryReader{}
	e.enc = enc
	if len(enc) == 0 || enc[0] != '{' || untyped {
		return e, false
	}
	if e.timeFound {
		e.timeAt = cap(enc) - timeCap
		e.timeEnd += e.timeAt
	}
	if (e.op != opApply && e.op != opUpdate) || !fieldsType || len(e.fields) == 0 || e.fields[0] != '{' {
		return e, false
	}
	e.key = managerID{Manager: e.manager, Operation: e.op, APIVersion: e.version, Subresource: e.sub}.String()
	return e, true
}

// encodedKeyPath is a field path as the keys of encoded FieldsV1: its
// elements as keys, as Marshal writes them (without their quotes).
type encodedKeyPath struct {
	path fieldpath.Path
	enc  [][]byte
	// plain is set when no key needed escaping: each is then its decoded
	// name too, which searches compare with the names they pass.
	plain bool
	cur   bool // see changeSet
}

// newEncodedKeyPath is p's encodedKeyPath, its keys appended to buf and
// enc holding them; false when an element of p cannot be written as a
// key.
func newEncodedKeyPath(p fieldpath.Path, buf []byte, enc [][]byte) (encodedKeyPath, []byte, bool) {
	out := encodedKeyPath{path: p, enc: enc, plain: true}
	for i, pe := range p {
		start := len(buf)
		if pe.FieldName != nil {
			// "f:" and the name, as SerializePathElement writes a field
			// name: AppendString's opening quote is moved out.
			buf = append(buf, `"f:`...)
			at := len(buf)
			buf = codec.AppendString(buf, *pe.FieldName)
			buf = buf[:at+copy(buf[at:], buf[at+1:])]
			// Escapes only lengthen what they write.
			out.plain = out.plain && len(buf)-start == len(*pe.FieldName)+4
		} else {
			k, err := fieldpath.SerializePathElement(pe)
			if err != nil {
				return encodedKeyPath{}, buf, false
			}
			buf = codec.AppendString(buf, k)
			out.plain = out.plain && len(buf)-start == len(k)+2
		}
		out.enc[i] = buf[start+1 : len(buf)-1 : len(buf)-1]
	}
	return out, buf, true
}

// encodedMember returns the value of the member of the encoded object f
// named key as written. Members are sorted by their decoded names: when
// key is plain (its decoded name too), the walk stops at a member whose
// name, plain too, sorts after it.
func encodedMember(f, key []byte, plain bool) (v []byte, found bool) {
	codec.EachRawMember(f, func(name, value []byte) bool {
		if bytes.Equal(name, key) {
			v, found = value, true
			return false
		}
		return !plain || bytes.IndexByte(name, '\\') >= 0 || bytes.Compare(name, key) < 0
	})
	return v, found
}

var dotKey = []byte(".")

// hasEncodedMember is hasMember on encoded FieldsV1.
func hasEncodedMember(f []byte, p encodedKeyPath) bool {
	for i, k := range p.enc {
		child, ok := encodedMember(f, k, p.plain)
		if !ok || len(child) == 0 || child[0] != '{' {
			return false
		}
		if i == len(p.enc)-1 {
			if string(child) == "{}" {
				return true
			}
			_, self := encodedMember(child, dotKey, true)
			return self
		}
		f = child
	}
	return false
}

func ownsAnyEncoded(f []byte, paths []encodedKeyPath) bool {
	idx := ownedIn(f)
	for _, p := range paths {
		if idx != nil && idx.has(p) || idx == nil && hasEncodedMember(f, p) {
			return true
		}
	}
	return false
}

// ownsExactlyEncoded is ownsExactly on encoded FieldsV1: f owns, among
// paths, those with cur and no other.
func ownsExactlyEncoded(f []byte, paths []encodedKeyPath) bool {
	idx := ownedIn(f)
	for _, p := range paths {
		owns := idx != nil && idx.has(p) || idx == nil && hasEncodedMember(f, p)
		if owns != p.cur {
			return false
		}
	}
	return true
}

func decodeEncodedFields(f []byte) (*fieldpath.Set, error) {
	v, err := codec.DecodeRaw(f)
	if err != nil {
		return nil, err
	}
	return decodeFields(v)
}

// withEncodedFields is r with its fieldsV1 replaced by s.
func withEncodedFields(r encodedEntry, s *fieldpath.Set) (encodedEntry, bool) {
	v, err := codec.DecodeRaw(r.enc)
	e, _ := v.(map[string]any)
	if err != nil || e == nil {
		return r, false
	}
	f, err := encodeFields(s)
	if err != nil {
		return r, false
	}
	e["fieldsV1"] = f
	return reencoded(r, e)
}

// reencoded is r encoded anew from its decoded form e.
func reencoded(r encodedEntry, e map[string]any) (encodedEntry, bool) {
	enc, err := codec.Marshal(e)
	if err != nil {
		return r, false
	}
	r.enc = enc
	r.fields = nil // no longer read
	r.edited = true
	return r, true
}

// mergeSelfEncoded is mergeSelf on an encoded entry.
func mergeSelfEncoded(prev *encodedEntry, self, apiVersion string, cs *changeSet) (encodedEntry, bool) {
	t := now()
	if prev != nil && ownsExactlyEncoded(prev.fields, cs.paths) {
		// The usual update: the writer owned what it changed already.
		r := *prev
		if r.time != t || !r.hasTime {
			if !r.timeFound {
				return r, false
			}
			// Spliced in as joinSorted writes the entry.
			r.newTime, r.time, r.hasTime = t, t, true
		}
		return r, true
	}
	s := cs.current()
	if prev != nil {
		p, err := decodeEncodedFields(prev.fields)
		if err != nil {
			return encodedEntry{}, false
		}
		s = p.Difference(cs.changed()).Union(s)
	}
	f, err := encodeFields(s)
	if err != nil {
		return encodedEntry{}, false
	}
	id := parseManagerID(self)
	r := encodedEntry{key: self, op: opUpdate, manager: id.Manager, version: apiVersion, sub: id.Subresource, time: t, hasTime: true, pos: -1}
	return reencoded(r, newEntry(self, apiVersion, t, f))
}

// joinSorted encodes the entries rs as a list in upstream's order (see
// sortedEntries), with their identities in that order; nil when there
// are none. raw holds the n entries rs were read from: when rs are all
// of them, unchanged and in the order they were read, raw is the list.
func joinSorted(raw codec.Raw, rs []encodedEntry, n int) (codec.Raw, []metav1.ManagedFieldsEntry) {
	if len(rs) == 0 {
		return nil, nil
	}
	slices.SortFunc(rs, func(a, b encodedEntry) int {
		return compareEntries(a.op, b.op, unixSeconds(a.time), unixSeconds(b.time), a.manager, b.manager, a.version, b.version, a.sub, b.sub)
	})
	ids := make([]metav1.ManagedFieldsEntry, len(rs))
	size, same := 2, len(rs) == n
	for i, r := range rs {
		ids[i] = metav1.ManagedFieldsEntry{Manager: r.manager, Operation: metav1.ManagedFieldsOperationType(r.op), APIVersion: r.version, FieldsType: "FieldsV1", Subresource: r.sub}
		size += len(r.enc) + 1
		if r.newTime != "" {
			size += len(r.newTime) + 2 - (r.timeEnd - r.timeAt)
		}
		same = same && r.pos == i && !r.edited && r.newTime == ""
	}
	if same {
		return raw, ids
	}
	out := make([]byte, 0, size)
	out = append(out, '[')
	for i, r := range rs {
		if i > 0 {
			out = append(out, ',')
		}
		if r.newTime == "" {
			out = append(out, r.enc...)
			continue
		}
		out = append(out, r.enc[:r.timeAt]...)
		out = codec.AppendString(out, r.newTime)
		out = append(out, r.enc[r.timeEnd:]...)
	}
	return codec.Raw(append(out, ']')), ids
}
