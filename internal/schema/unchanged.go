package schema

import (
	"bytes"

	"github.com/crdserver/crdserver/internal/codec"
)

// Unchanged reports whether Prune and then Default would leave the object
// encoded as it is — its top-level metadata aside, which the caller
// replaces and which is not read — and whether encoded is written exactly
// as codec.Marshal writes what it decodes to (keys sorted and unique,
// strings without escapes, numbers in Marshal's form; no nulls, which
// Default may drop).
// The bytes then stand for the decoded, pruned, defaulted and re-encoded
// object, and nothing need be decoded. false says only that: decode the
// object and run them. It reads encoded once and allocates nothing.
func (s *Schema) Unchanged(encoded []byte) bool {
	_, _, ok := s.UnchangedSpan(encoded, nil)
	return ok
}

// UnchangedSpan is Unchanged, also saying where the top-level metadata
// value is in encoded: encoded[start:end], both 0 when there is none.
// Callers that compare metadata need not read the object again to find
// it. With member set and metadata an object, each of its members is
// read rather than skipped, and member called with its name and encoded
// value, in order: member's false, or a name that is not plain (escaped,
// or not ASCII), makes ok false. Metadata is still neither pruned nor
// defaulted here.
func (s *Schema) UnchangedSpan(encoded []byte, member func(name, value []byte) bool) (start, end int, ok bool) {
	t := codec.MakeTokens(encoded)
	start, end, ok = s.UnchangedAt(&t, member)
	return start, end, ok && t.End()
}

// UnchangedAt is UnchangedSpan for the value at t, in a longer document
// (a webhook's answer, say): when ok, t has read the object, and start
// and end are where its metadata is in t's input (both 0: none). When
// not, t has read up to an unknown point; a caller reading on must go
// back to where it was (t is a value: copy it first).
func (s *Schema) UnchangedAt(t *codec.Tokens, member func(name, value []byte) bool) (start, end int, ok bool) {
	if s.keepUnknown {
		return 0, 0, false
	}
	w := unchangedWalker{t: t, member: member}
	if t.Peek() != '{' || !w.object(s.pruneRoot, pruning, s.root, true) {
		return 0, 0, false
	}
	return w.metaStart, w.metaEnd, true
}

// pruneMode is how Prune treats the value being read: as p.prune does
// (unknown fields go), as p.skipPrune does (under
// x-kubernetes-preserve-unknown-fields they stay), or not at all (below
// a field that no schema reaches).
type pruneMode uint8

const (
	pruning pruneMode = iota
	skipping
	untouched
)

// maxUnchangedDepth bounds the nesting Unchanged reads, as decoding bounds
// it: an answer read in place, before anything else checked it, cannot
// make the walk recurse without end.
const maxUnchangedDepth = codec.DefaultMaxDepth

type unchangedWalker struct {
	t     *codec.Tokens
	depth int // objects and arrays open
	// member, when set, is given the members of the root's metadata.
	member func(name, value []byte) bool
	// metaStart and metaEnd delimit the root's metadata value, once read.
	metaStart, metaEnd int
}

// metadata reads the root's metadata value: skipped, or member by member
// for w.member.
func (w *unchangedWalker) metadata() bool {
	if w.member == nil || w.t.Peek() != '{' {
		_, ok := w.t.Value()
		return ok
	}
	w.t.Consume('{')
	for first := true; !w.t.Consume('}'); first = false {
		if !first && !w.t.Consume(',') {
			return false
		}
		k, plain, ok := w.t.Key()
		if !ok || !plain {
			return false
		}
		v, ok := w.t.Value()
		if !ok || !w.member(k, v) {
			return false
		}
	}
	return true
}

// value reads one value along pn, the node Prune reads it with in mode
// pm, and dn, the node Default reads it with (nil: none).
func (w *unchangedWalker) value(pn *node, pm pruneMode, dn *node) bool {
	switch w.t.Peek() {
	case '{', '[':
		if w.depth >= maxUnchangedDepth {
			return false
		}
		w.depth++
		var ok bool
		if w.t.Peek() == '{' {
			ok = w.object(pn, pm, dn, false)
		} else {
			ok = w.array(pn, pm, dn)
		}
		w.depth--
		return ok
	case '"':
		text, plain, ok := w.t.String()
		return ok && plain && codec.MarshalPlain(text)
	case 't', 'f':
		_, ok := w.t.Literal()
		return ok
	case 'n':
		return false // Default may drop or replace it
	default:
		lit, ok := w.t.Number()
		return ok && codec.MarshalNumber(lit)
	}
}

func (w *unchangedWalker) array(pn *node, pm pruneMode, dn *node) bool {
	w.t.Consume('[')
	// prune: a preserve-unknown-fields node skips into its items;
	// skipPrune without a node stops.
	var items *node
	if pn != nil {
		items = pn.items
		if pm == pruning && pn.preserveUnknown {
			pm = skipping
		}
	} else if pm == skipping {
		pm = untouched
	}
	var ditems *node
	if dn != nil {
		ditems = dn.items
	}
	for first := true; !w.t.Consume(']'); first = false {
		if !first && !w.t.Consume(',') {
			return false
		}
		if !w.value(items, pm, ditems) {
			return false
		}
	}
	return true
}

func (w *unchangedWalker) object(pn *node, pm pruneMode, dn *node, root bool) bool {
	w.t.Consume('{')
	// As prune, skipPrune and pruneFields: drop says unknown fields go.
	drop := false
	switch {
	case pm == untouched:
	case pn == nil && pm == pruning:
		// Every field goes: only {} is unchanged, if nothing is defaulted.
		return w.t.Consume('}') && (dn == nil || len(dn.defaultProps) == 0)
	case pn == nil:
		pm = untouched
	case pm == pruning && !pn.preserveUnknown:
		drop = true
	}
	if pm != untouched && pn.embedded && !root {
		return false // its metadata is pruned to ObjectMeta's fields
	}
	var defaults []string
	if dn != nil {
		defaults = dn.defaultProps
	}
	var prev []byte
	for first := true; !w.t.Consume('}'); first = false {
		if !first && !w.t.Consume(',') {
			return false
		}
		k, plain, ok := w.t.Key()
		if !ok || !plain || !codec.MarshalPlain(k) || !first && bytes.Compare(prev, k) >= 0 {
			return false
		}
		prev = k
		// Defaults are sorted, as keys are: one missing sorts before a key.
		for len(defaults) > 0 && defaults[0] <= string(k) {
			if defaults[0] != string(k) {
				return false
			}
			defaults = defaults[1:]
		}
		if root && string(k) == "metadata" {
			w.metaStart = w.t.Offset()
			if !w.metadata() {
				return false
			}
			w.metaEnd = w.t.Offset()
			continue
		}
		cpn, cpm := (*node)(nil), untouched
		var prop *node // pn's property k, when looked up
		looked := false
		if pm != untouched {
			c, ok := pn.props[string(k)]
			prop, looked = c, true
			switch {
			case pn.embedded && isTypeOrObjectMeta(string(k)):
			case ok:
				cpn, cpm = c, pruning
			case pn.addlSet:
				cpn, cpm = pn.addl, pruning
			case drop:
				return false
			}
		}
		var cdn *node
		switch {
		case dn == nil:
		case looked && dn == pn:
			// Below the root, Prune and Default read one schema: one
			// lookup serves both (child, without a second map access).
			if cdn = prop; cdn == nil {
				cdn = dn.addl
			}
		default:
			cdn, _ = dn.child(string(k))
		}
		if !w.value(cpn, cpm, cdn) {
			return false
		}
	}
	return len(defaults) == 0
}
