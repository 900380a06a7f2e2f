package watchcache

import (
	"io"
	"math"
	"strings"
	"unique"
	"unsafe"
)

// sharedPart is a part of an item's JSON held once for every item whose
// JSON has it: the field sets of managedFields entries, which are the same
// bytes in every object one manager writes alike, and a third of the
// bytes of an object as small as the load generator's.
type sharedPart struct {
	at   int32 // where it goes in json: before json[at]
	part unique.Handle[string]
}

// minShared is the shortest part worth sharing: a part costs the item
// a handle and an offset, and the canonical copy a map entry.
const minShared = 64

// SetJSON sets the item's encoded object, the object with its
// resourceVersion, and its labels; spans are ranges of it ([start, end),
// in order, not overlapping) whose bytes other items are likely to hold
// too. The item keeps those once for all items and the rest, with its
// packed labels, in one buffer of its own, and may keep b itself when it
// shares nothing. A span too short, out of order or out of b is not
// shared.
func (it *Item) SetJSON(b []byte, spans [][2]int, labels map[string]string) {
	it.setJSON(b, spans, labels, false)
}

// CopyJSON is SetJSON for b in a buffer the caller reuses: the item
// keeps none of b.
func (it *Item) CopyJSON(b []byte, spans [][2]int, labels map[string]string) {
	it.setJSON(b, spans, labels, true)
}

func (it *Item) setJSON(b []byte, spans [][2]int, labels map[string]string, reused bool) {
	n, parts, from := 0, 0, 0
	for _, sp := range spans {
		if sharable(sp, from, len(b)) {
			n += sp[1] - sp[0]
			parts++
			from = sp[1]
		}
	}
	it.shared = nil
	if parts == 0 && !reused {
		it.json, it.Labels = b, NewLabels(labels)
		return
	}
	// Every cached object is an Item, its own bytes and, in most cases,
	// one shared part and a few labels: the labels go at the end of the
	// bytes' buffer and a single part in the item itself, which saves two
	// of an item's allocations (the collector marks each of them).
	keys, ln := labelKeys(labels)
	own := make([]byte, 0, len(b)-n+ln)
	if parts == 1 {
		it.shared = it.inline[:0:1]
	} else if parts > 1 {
		it.shared = make([]sharedPart, 0, parts)
	}
	from = 0
	for _, sp := range spans {
		if !sharable(sp, from, len(b)) {
			continue
		}
		own = append(own, b[from:sp[0]]...)
		part := b[sp[0]:sp[1]]
		// Make clones the string it keeps, so the one it is given may
		// share b's bytes: no copy when the part is known already (were
		// it kept as given, it would keep b, never modified, alive).
		h := unique.Make(unsafe.String(unsafe.SliceData(part), len(part)))
		it.shared = append(it.shared, sharedPart{at: int32(len(own)), part: h})
		from = sp[1]
	}
	own = append(own, b[from:]...)
	end := len(own)
	own = appendLabels(own, keys, labels)
	// The three-index slice keeps appends to json (there are none: items
	// are immutable) off the labels.
	it.json = own[:end:end]
	it.Labels = Labels{packed: unsafe.String(unsafe.SliceData(own[end:]), len(own)-end)}
}

// sharable reports whether SetJSON shares span sp of an object of n
// bytes, the previous shared one ending at from: long enough, in order,
// within the object.
func sharable(sp [2]int, from, n int) bool {
	return sp[1]-sp[0] >= minShared && sp[0] >= from && sp[1] <= n
}

// Len is the length of JSON().
func (it *Item) Len() int {
	n := len(it.json)
	for _, p := range it.shared {
		n += len(p.part.Value())
	}
	return n
}

// JSON returns the encoded object. For an item that shares parts of it
// with others the bytes are put together in a new buffer each call: hot
// paths write them with AppendTo or WriteTo instead.
func (it *Item) JSON() []byte {
	if it.shared == nil {
		return it.json
	}
	return it.AppendTo(make([]byte, 0, it.Len()))
}

// JSONInto returns the encoded object as JSON does, but when the item
// keeps it in parts it puts it together in *buf (grown as needed, and kept
// grown for the next use): for a reader done with it before *buf is used
// again. *buf never holds the item's own bytes.
func (it *Item) JSONInto(buf *[]byte) []byte {
	if it.shared == nil {
		return it.json
	}
	*buf = it.AppendTo((*buf)[:0])
	return *buf
}

// MetadataInto returns the metadata object, JSON()[MetaStart:MetaEnd],
// with each shared part in it written as {}; ok is false when MetaEnd is
// 0 (where metadata is is not known). It is for readers of metadata's own
// members that do not read managedFields' field sets (the garbage
// collector reads every event so): the shared parts, most of
// managedFields, are neither copied nor to be scanned. Each shared part
// must be one JSON value, as the field sets the server's decoders share
// are: the result is then metadata with other values in their place. For
// an item that shares no part the bytes are its own; otherwise they are
// put together in *buf as JSONInto does.
func (it *Item) MetadataInto(buf *[]byte) (metadata []byte, ok bool) {
	start, end := int(it.MetaStart), int(it.MetaEnd)
	if end <= 0 {
		return nil, false
	}
	if it.shared == nil {
		return it.json[start:end], true
	}
	b := (*buf)[:0]
	it.walk(start, end, func(own []byte) { b = append(b, own...) }, func(string) { b = append(b, "{}"...) })
	*buf = b
	return b, true
}

// Head returns the encoded object's first bytes, up to its first shared
// part (all of it when it shares none), without copying: enough to read
// what comes before metadata.managedFields, its apiVersion and kind.
func (it *Item) Head() []byte {
	if it.shared == nil {
		return it.json
	}
	return it.json[:it.shared[0].at]
}

// AppendTo appends the encoded object to dst.
func (it *Item) AppendTo(dst []byte) []byte {
	return it.AppendRange(dst, 0, it.Len())
}

// AppendRange appends JSON()[start:end] to dst.
func (it *Item) AppendRange(dst []byte, start, end int) []byte {
	it.walk(start, end, func(b []byte) { dst = append(dst, b...) }, func(s string) { dst = append(dst, s...) })
	return dst
}

// AppendPieces appends the pieces JSON() is made of to dst, in order,
// without copying them: the item's own bytes and the parts it shares,
// which the caller must not modify (they are other items' too).
func (it *Item) AppendPieces(dst [][]byte) [][]byte {
	// To the end, without Len: that would read every shared part's
	// length once more.
	it.walk(0, math.MaxInt, func(b []byte) { dst = append(dst, b) }, func(s string) {
		dst = append(dst, unsafe.Slice(unsafe.StringData(s), len(s)))
	})
	return dst
}

// WriteTo writes the encoded object to w.
func (it *Item) WriteTo(w io.Writer) (int64, error) {
	return it.WriteRange(w, 0, it.Len())
}

// WriteRange writes JSON()[start:end] to w.
func (it *Item) WriteRange(w io.Writer, start, end int) (int64, error) {
	var (
		n   int64
		err error
	)
	it.walk(start, end, func(b []byte) {
		if err == nil {
			k, e := w.Write(b)
			n, err = n+int64(k), e
		}
	}, func(s string) {
		if err == nil {
			k, e := io.WriteString(w, s)
			n, err = n+int64(k), e
		}
	})
	return n, err
}

// walk calls own and shared, in order, with the pieces of JSON()[start:end]
// (end may be past the end: up to the end):
// own with those the item holds, shared with those it shares.
func (it *Item) walk(start, end int, own func([]byte), shared func(string)) {
	pos, from := 0, 0 // json[from] is at JSON()[pos]
	for i := 0; ; i++ {
		to := len(it.json)
		if i < len(it.shared) {
			to = int(it.shared[i].at)
		}
		b := it.json[from:to]
		if lo, hi := max(start-pos, 0), min(end-pos, len(b)); lo < hi {
			own(b[lo:hi])
		}
		pos += len(b)
		if i == len(it.shared) || pos >= end {
			return
		}
		v := it.shared[i].part.Value()
		if lo, hi := max(start-pos, 0), min(end-pos, len(v)); lo < hi {
			shared(v[lo:hi])
		}
		pos, from = pos+len(v), to
	}
}

// OwnString returns a string equal to s that shares the item's own bytes,
// when they hold s (not only in a shared part), and whether they do; s
// itself otherwise. It is for readers that keep a string taken from the
// object for as long as they keep the item, or its successor: the string
// keeps all of the item's own bytes alive, so one kept longer is to be
// cloned.
func (it *Item) OwnString(s string) (string, bool) {
	if s == "" {
		return s, false
	}
	i := strings.Index(unsafe.String(unsafe.SliceData(it.json), len(it.json)), s)
	if i < 0 {
		return s, false
	}
	return unsafe.String(&it.json[i], len(s)), true
}

// ownSize is what the item holds of its encoding itself: its own bytes
// and a handle and offset per shared part.
func (it *Item) ownSize() int {
	return len(it.json) + 16*len(it.shared)
}

// SetRawManagedFields notes that JSON()[start:end] is the object's
// metadata.managedFields, found by the item's decoder in the form
// codec.Decode keeps as a Raw (codec.Indexed.RawManagedFields), so that
// readers decoding JSON() need not check them again. It is set, if at
// all, with the item's JSON, before the item is shared.
func (it *Item) SetRawManagedFields(start, end int) {
	if 0 <= start && start < end && end <= math.MaxInt32 {
		it.rawManagedFields = [2]int32{int32(start), int32(end)}
	}
}

// RawManagedFields returns what SetRawManagedFields noted: [0, 0] when
// nothing.
func (it *Item) RawManagedFields() [2]int {
	return [2]int{int(it.rawManagedFields[0]), int(it.rawManagedFields[1])}
}
