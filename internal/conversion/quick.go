package conversion

import (
	"bytes"

	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/registry"
)

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
	if !id.scan(orig.JSON) {
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
// them; what follows is not read, which is why only stored objects (one
// of each field) are scanned.
func (id *identity) scan(b []byte) bool {
	var top [3][]byte
	if !members(b, topFields, top[:]) || len(top[2]) == 0 || top[2][0] != '{' {
		return false
	}
	id.apiVersion, id.kind, id.metadata = top[0], top[1], top[2]
	var md [5][]byte
	if !members(id.metadata, metaFields, md[:]) {
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
// into vals (same order; nil when absent), stopping once it has them all.
// ok is false when b is not compact JSON where it was read, or has one of
// the names twice before that.
func members(b []byte, names []string, vals [][]byte) bool {
	clear(vals)
	dup := false
	found := 0
	ok := codec.EachMember(b, func(name string, v []byte) bool {
		for k, n := range names {
			if n == name {
				if vals[k] != nil {
					dup = true
					return false
				}
				vals[k] = v
				found++
			}
		}
		return found < len(names)
	})
	return ok && !dup
}
