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
	if s.keepUnknown {
		return false
	}
	t := codec.MakeTokens(encoded)
	w := unchangedWalker{t: &t}
	return t.Peek() == '{' && w.object(s.pruneRoot, pruning, s.root, true) && t.End()
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

type unchangedWalker struct{ t *codec.Tokens }

// value reads one value along pn, the node Prune reads it with in mode
// pm, and dn, the node Default reads it with (nil: none).
func (w *unchangedWalker) value(pn *node, pm pruneMode, dn *node) bool {
	switch w.t.Peek() {
	case '{':
		return w.object(pn, pm, dn, false)
	case '[':
		return w.array(pn, pm, dn)
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
			if _, ok := w.t.Value(); !ok {
				return false
			}
			continue
		}
		cpn, cpm := (*node)(nil), untouched
		if pm != untouched {
			switch c, ok := pn.props[string(k)]; {
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
		if dn != nil {
			cdn, _ = dn.child(string(k))
		}
		if !w.value(cpn, cpm, cdn) {
			return false
		}
	}
	return len(defaults) == 0
}
