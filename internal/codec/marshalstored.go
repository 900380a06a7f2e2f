package codec

import (
	"bytes"
	"strings"
)

// Stored is an object encoded by MarshalStored, with what writing it
// noted.
type Stored struct {
	JSON []byte
	// RV is where the metadata's resourceVersion member is or goes, when
	// HasRV (the object has a metadata object).
	RV    RVSplice
	HasRV bool
	// JSON[ManagedFrom:ManagedTo] is metadata.managedFields's value; empty
	// when it has none.
	ManagedFrom, ManagedTo int
}

// MarshalStored is Marshal of an object, noting where its metadata's
// resourceVersion member goes and where its managedFields are: what
// FindResourceVersion finds in the result, noted while the metadata is
// written instead of found by a scan of the bytes, which on an update's
// object (managedFields first) skips a few kilobytes. It also finds one
// where that scan gives up (keys whose escaped order is not their order,
// nesting deeper than it scans): the splice is where Marshal would have
// written the member.
func MarshalStored(obj map[string]any) (Stored, error) {
	e := encoders.Get().(*encoder)
	defer e.release()
	out := Stored{JSON: make([]byte, 0, 4096)}
	b := out.JSON
	members := e.push(obj)
	var mm metaMarks
	b = append(b, '{')
	for i, mb := range members {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, mb.key)
		b = append(b, ':')
		var err error
		if md, isMap := mb.value.(map[string]any); isMap && mb.key == "metadata" {
			b, mm, err = e.appendMetadata(b, md)
		} else {
			b, err = e.appendValue(b, mb.value)
		}
		if err != nil {
			return Stored{}, err
		}
	}
	e.pop(members)
	out.JSON = append(b, '}')
	if mm.found {
		out.RV = RVSplice{stored: out.JSON, at: mm.at, to: mm.to, comma: mm.comma}
		out.HasRV = true
		out.ManagedFrom, out.ManagedTo = mm.managedFrom, mm.managedTo
	}
	return out, nil
}

// metaMarks are what appendMetadata notes: where the resourceVersion
// member is, or goes, as metadataRV reads it (the member's bytes [at, to),
// or an empty span where it goes, followed (comma 1) or preceded (comma
// -1) by a comma when other members are there), and the managedFields
// value's bytes.
type metaMarks struct {
	found                  bool
	at, to, comma          int
	managedFrom, managedTo int
}

// appendMetadata is appendObject for a metadata object, noting its marks.
func (e *encoder) appendMetadata(b []byte, m map[string]any) (_ []byte, mm metaMarks, _ error) {
	members := e.push(m)
	mm.found, mm.at = true, -1
	b = append(b, '{')
	for i, mb := range members {
		if i > 0 {
			b = append(b, ',')
		}
		start := len(b)
		c := strings.Compare(mb.key, "resourceVersion")
		if mm.at < 0 && c > 0 {
			mm.at, mm.to, mm.comma = start, start, 1
		}
		b = appendString(b, mb.key)
		b = append(b, ':')
		vstart := len(b)
		var err error
		if b, err = e.appendValue(b, mb.value); err != nil {
			return nil, metaMarks{}, err
		}
		switch {
		case c == 0:
			mm.at, mm.to = start, len(b)
		case mb.key == "managedFields":
			mm.managedFrom, mm.managedTo = vstart, len(b)
		}
	}
	if mm.at < 0 {
		mm.at, mm.to = len(b), len(b)
		if len(members) > 0 {
			mm.comma = -1
		}
	}
	e.pop(members)
	return append(b, '}'), mm, nil
}

// timeMember is how an entry's time member starts, as Marshal writes it.
var timeMember = []byte(`"time":"`)

// SameButTimes reports whether a and b, two stored objects, differ only
// in the values of "time" members in a[from:to] (a's managedFields, which
// b has at the same place when the rest is the same), each as long in
// both: a write that changes nothing but its writer's time, which
// upstream does not store.
func SameButTimes(a, b []byte, from, to int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; ; {
		d := mismatch(a[i:], b[i:])
		if d < 0 {
			return true
		}
		i += d
		if i < from || i >= to {
			return false
		}
		// In a time value: both strings began alike after the last
		// `"time":"` before i (a string of no quote or backslash), and
		// end at the same place.
		start := bytes.LastIndex(a[from:i], timeMember)
		if start < 0 {
			return false
		}
		start += from + len(timeMember)
		if bytes.ContainsAny(a[start:i], `"\`) {
			return false
		}
		ea, eb := bytes.IndexByte(a[i:], '"'), bytes.IndexByte(b[i:], '"')
		if ea < 0 || ea != eb || bytes.IndexByte(a[i:i+ea], '\\') >= 0 || bytes.IndexByte(b[i:i+eb], '\\') >= 0 || i+ea >= to {
			return false
		}
		i += ea + 1
	}
}

// mismatch is the index of the first byte where a and b, of one length,
// differ; -1 when they do not.
func mismatch(a, b []byte) int {
	// Long equal runs compare a chunk at a time.
	const chunk = 64
	i := 0
	for i+chunk <= len(a) && bytes.Equal(a[i:i+chunk], b[i:i+chunk]) {
		i += chunk
	}
	for ; i < len(a); i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}
