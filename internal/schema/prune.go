package schema

import (
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
// their paths, sorted, in upstream's wording for fieldValidation
// ("spec.foo", "spec.list[0].bar", "metadata.foo"; the caller adds
// `unknown field "…"`). apiVersion, kind and metadata are kept at the root
// and in embedded resources; metadata is pruned to ObjectMeta's fields.
// Nulls are left for Default to handle.
func (s *Schema) Prune(obj map[string]any) []string {
	var buf [16]seg
	p := pruner{segs: buf[:0]}
	p.pruneMetadata(obj, true)
	if !s.keepUnknown {
		p.prune(obj, s.pruneRoot)
	}
	sort.Strings(p.paths)
	return p.paths
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
// not have, reporting them as "<path>.metadata.<field>".
func (p *pruner) pruneMetadata(obj map[string]any, root bool) {
	meta, ok := obj["metadata"].(map[string]any)
	if !ok {
		return
	}
	prefix := "metadata."
	if !root {
		prefix = p.fieldPath() + ".metadata."
	}
	for k, v := range meta {
		if !objectMetaFields[k] {
			p.paths = append(p.paths, prefix+k)
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
					p.paths = append(p.paths, prefix+k+"["+strconv.Itoa(i)+"]."+f)
					delete(m, f)
				}
			}
		}
	}
}
