package schema

import (
	"cmp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/crdserver/crdserver/internal/codec"
)

// objectMetaFields are the JSON fields of metav1.ObjectMeta: metadata of
// the object and of embedded resources is pruned to them, as upstream's
// round trip through ObjectMeta does.
var objectMetaFields = map[string]bool{
	"name": true, "generateName": true, "namespace": true, "selfLink": true,
	"uid": true, "resourceVersion": true, "generation": true,
	"creationTimestamp": true, "deletionTimestamp": true,
	"deletionGracePeriodSeconds": true, "labels": true, "annotations": true,
	"ownerReferences": true, "finalizers": true, "managedFields": true,
}

var ownerReferenceFields = map[string]bool{
	"apiVersion": true, "kind": true, "name": true, "uid": true,
	"controller": true, "blockOwnerDeletion": true,
}

var managedFieldsEntryFields = map[string]bool{
	"manager": true, "operation": true, "apiVersion": true, "time": true,
	"fieldsType": true, "fieldsV1": true, "subresource": true,
}

func isTypeOrObjectMeta(k string) bool {
	return k == "apiVersion" || k == "kind" || k == "metadata"
}

// Prune removes the fields of obj the schema does not specify and returns
// their paths in upstream's wording for fieldValidation ("spec.foo",
// "spec.list[0].bar", "metadata.foo"; the caller adds `unknown field
// "…"`). apiVersion, kind and metadata are kept at the root and in
// embedded resources; metadata is pruned to ObjectMeta's fields. Nulls are
// left for Default to handle.
//
// The paths come in the order of upstream's three passes: the root
// metadata's (in the order of its JSON encoding, keys sorted), then the
// rest of the object's, sorted, then the embedded resources' metadata's,
// sorted.
func (s *Schema) Prune(obj map[string]any) []string {
	var buf [16]seg
	p := pruner{segs: buf[:0]}
	p.pruneMetadata(obj, true)
	if !s.keepUnknown {
		p.prune(obj, s.pruneRoot)
	}
	return prunedInOrder(p.meta, p.paths, p.embedded)
}

// prunedInOrder joins the unknown field paths of an object as upstream
// reports them: meta (the root metadata's, already in order), then body
// and embedded (the embedded resources' metadata's), each sorted.
func prunedInOrder(meta, body, embedded []string) []string {
	sort.Strings(body)
	sort.Strings(embedded)
	if len(meta) == 0 && len(embedded) == 0 {
		return body
	}
	out := make([]string, 0, len(meta)+len(body)+len(embedded))
	out = append(out, meta...)
	out = append(out, body...)
	return append(out, embedded...)
}

type segKind uint8

const (
	segProp  segKind = iota // a property: ".k" in both renderings
	segKey                  // an additionalProperties key: ".k", or "[k]" as a field.Path
	segIndex                // a list index: "[i]"
)

type seg struct {
	kind segKind
	key  string
	idx  int
}

// pruner walks an object keeping the current path as segments, so that a
// path string is built only when a field is actually pruned.
type pruner struct {
	segs  []seg
	paths []string
	// meta and embedded are the paths pruned from the root metadata and
	// from embedded resources' metadata, which upstream reports apart.
	meta, embedded []string
}

func (p *pruner) record(k string) {
	var b strings.Builder
	for _, s := range p.segs {
		switch s.kind {
		case segIndex:
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(s.idx))
			b.WriteByte(']')
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.key)
		}
	}
	if b.Len() > 0 {
		b.WriteByte('.')
	}
	b.WriteString(k)
	p.paths = append(p.paths, b.String())
}

// fieldPath renders the current path as a field.Path would
// ("spec.m[k].list[0]"), as upstream words unknown fields of embedded
// metadata.
func (p *pruner) fieldPath() string {
	var b strings.Builder
	for _, s := range p.segs {
		switch s.kind {
		case segIndex:
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(s.idx))
			b.WriteByte(']')
		case segKey:
			b.WriteByte('[')
			b.WriteString(s.key)
			b.WriteByte(']')
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.key)
		}
	}
	return b.String()
}

func (p *pruner) push(kind segKind, key string, idx int) {
	p.segs = append(p.segs, seg{kind: kind, key: key, idx: idx})
}

func (p *pruner) pop() { p.segs = p.segs[:len(p.segs)-1] }

func (p *pruner) prune(x any, n *node) {
	if n != nil && n.preserveUnknown {
		p.skipPrune(x, n)
		return
	}
	switch x := x.(type) {
	case map[string]any:
		if n == nil {
			for k := range x {
				p.record(k)
				delete(x, k)
			}
			return
		}
		p.pruneFields(x, n, true)
	case []any:
		var items *node
		if n != nil {
			items = n.items
		}
		for i, v := range x {
			p.push(segIndex, "", i)
			p.prune(v, items)
			p.pop()
		}
	}
}

// skipPrune walks a preserve-unknown-fields node: unknown fields stay, but
// pruning resumes below the properties and additionalProperties it does
// specify.
func (p *pruner) skipPrune(x any, n *node) {
	if n == nil {
		return
	}
	switch x := x.(type) {
	case map[string]any:
		p.pruneFields(x, n, false)
	case []any:
		for i, v := range x {
			p.push(segIndex, "", i)
			p.skipPrune(v, n.items)
			p.pop()
		}
	}
}

// pruneFields prunes below the fields of x that n specifies, in
// properties or additionalProperties, and drops the others when
// dropUnknown (a node that does not preserve unknown fields).
func (p *pruner) pruneFields(x map[string]any, n *node, dropUnknown bool) {
	for k, v := range x {
		if n.embedded && isTypeOrObjectMeta(k) {
			continue
		}
		switch c, ok := n.props[k]; {
		case ok:
			p.push(segProp, k, 0)
			p.prune(v, c)
			p.pop()
		case n.addlSet:
			p.push(segKey, k, 0)
			p.prune(v, n.addl)
			p.pop()
		case dropUnknown:
			// apiVersion, kind and metadata go silently at the root only,
			// as upstream reports them nowhere else.
			if !isTypeOrObjectMeta(k) || len(p.segs) > 0 {
				p.record(k)
			}
			delete(x, k)
		}
	}
	if n.embedded && len(p.segs) > 0 {
		p.pruneMetadata(x, false)
	}
}

// knownMembersOnly reports whether every element of raw, an array kept
// encoded (a client's managedFields), is an object of known members only.
func knownMembersOnly(raw codec.Raw, known map[string]bool) bool {
	only := true
	codec.EachRawObjectMember(raw, func(name, _ []byte) bool {
		only = known[string(name)]
		return only
	}, func([]byte) bool { return only })
	return only
}

// pruneMetadata drops the fields of obj's metadata that ObjectMeta does
// not have, reporting them as "<path>.metadata.<field>" in the order
// upstream's strict decoding of the re-encoded metadata finds them: by
// key, then list index, then member name.
func (p *pruner) pruneMetadata(obj map[string]any, root bool) {
	meta, ok := obj["metadata"].(map[string]any)
	if !ok {
		return
	}
	var found []metaField
	for k, v := range meta {
		if !objectMetaFields[k] {
			found = append(found, metaField{key: k, idx: -1})
			delete(meta, k)
			continue
		}
		var known map[string]bool
		switch k {
		case "ownerReferences":
			known = ownerReferenceFields
		case "managedFields":
			known = managedFieldsEntryFields
			if raw, ok := v.(codec.Raw); ok {
				if knownMembersOnly(raw, known) {
					continue
				}
				// Decoded to be pruned; an undecodable Raw is left as
				// it is, for metadata validation to refuse.
				if d, err := codec.DecodeRaw(raw); err == nil {
					meta[k], v = d, d
				}
			}
		default:
			continue
		}
		list, _ := v.([]any)
		for i, e := range list {
			m, _ := e.(map[string]any)
			for f := range m {
				if !known[f] {
					found = append(found, metaField{key: k, idx: i, member: f})
					delete(m, f)
				}
			}
		}
	}
	if len(found) == 0 {
		return
	}
	slices.SortFunc(found, func(a, b metaField) int {
		return cmp.Or(strings.Compare(a.key, b.key), cmp.Compare(a.idx, b.idx), strings.Compare(a.member, b.member))
	})
	prefix := "metadata."
	if !root {
		prefix = p.fieldPath() + ".metadata."
	}
	for _, f := range found {
		path := prefix + f.key
		if f.idx >= 0 {
			path += "[" + strconv.Itoa(f.idx) + "]." + f.member
		}
		if root {
			p.meta = append(p.meta, path)
		} else {
			p.embedded = append(p.embedded, path)
		}
	}
}

// metaField is a field pruned from metadata: a member of it (idx -1), or
// a member of one of its lists' objects.
type metaField struct {
	key    string
	idx    int
	member string
}
