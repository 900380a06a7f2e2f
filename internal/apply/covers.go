package apply

import (
	"slices"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// coverage is what covers found: whether every field of a set is one a
// configuration sets, or that it could not tell.
type coverage uint8

const (
	uncovered coverage = iota
	covered
	unknown
)

// covers reports whether config, an object of the type tr of s, sets
// every field of last as structured-merge-diff would see it: whether
// last.Difference(E(ToFieldSet(config))) is empty, where E drops the
// fields under reset (nil: none). It answers that by looking each of
// last's fields up in config instead of building config's set, which
// costs an apply as much as the lookups save; it answers unknown where
// the lookup would have to redo more of structured-merge-diff than it
// does (list items without all their keys, indexed lists), for the
// caller to build the set.
func covers(s *smdschema.Schema, tr smdschema.TypeRef, config map[string]any, last, reset *fieldpath.Set) coverage {
	out := covered
	// Iterate cannot stop early (and All's iterator breaks when asked
	// to): once the answer is uncovered, the rest is skipped.
	last.Iterate(func(p fieldpath.Path) {
		if out == uncovered {
			return
		}
		// config's fields lose everything under reset.
		c := uncovered
		if reset == nil || !underSet(reset, p) {
			c = coversPath(s, tr, config, p)
		}
		switch c {
		case covered:
		case uncovered:
			// Whatever else is unknown, this field is not set.
			out = uncovered
		default:
			out = unknown
		}
	})
	return out
}

// underSet reports whether p or a field above it is a member of set: a
// path an exclude filter of set removes.
func underSet(set *fieldpath.Set, p fieldpath.Path) bool {
	for _, pe := range p {
		if set.Members.Has(pe) {
			return true
		}
		child, ok := set.Children.Get(pe)
		if !ok {
			return false
		}
		set = child
	}
	return false
}

// coversPath reports whether the field set of config holds p as a
// member. Difference takes nothing else for it: not a member above it,
// which holds only itself.
func coversPath(s *smdschema.Schema, tr smdschema.TypeRef, config map[string]any, p fieldpath.Path) coverage {
	var cur any = config
	for i, pe := range p {
		final := i == len(p)-1
		atom, ok := s.Resolve(tr)
		if !ok {
			return unknown
		}
		switch {
		case pe.FieldName != nil:
			m, ok := cur.(map[string]any)
			if !ok || atom.Map == nil || atom.Map.ElementRelationship == smdschema.Atomic {
				return unknown
			}
			v, present := m[*pe.FieldName]
			if !present {
				return uncovered
			}
			field, declared := atom.Map.FindField(*pe.FieldName)
			tr = atom.Map.ElementType
			if declared {
				tr = field.Type
			}
			if final {
				return memberField(s, tr, v, declared)
			}
			cur = v
		case pe.Key != nil || pe.Value != nil:
			list, ok := cur.([]any)
			if !ok || atom.List == nil || atom.List.ElementRelationship != smdschema.Associative {
				return unknown
			}
			item, c := findItem(atom.List, list, pe)
			if c != covered || final {
				// Every item of an associative list is a member of its
				// set.
				return c
			}
			cur, tr = item, atom.List.ElementType
		default:
			return unknown
		}
	}
	return uncovered
}

// memberField reports whether the field set of a map lists its field of
// type tr and value v as a member, as ToFieldSet does: a null, an empty
// map, a field the map's type does not declare, a scalar, or an atomic
// list or map. A list or map whose items are fields of their own is not
// (uncovered: the walk goes on below it).
func memberField(s *smdschema.Schema, tr smdschema.TypeRef, v any, declared bool) coverage {
	if v == nil || !declared {
		return covered
	}
	atom, ok := s.Resolve(tr)
	if !ok {
		return unknown
	}
	switch x := v.(type) {
	case map[string]any:
		switch {
		case len(x) == 0:
			return covered
		case atom.Map == nil:
			return unknown
		case atom.Map.ElementRelationship == smdschema.Atomic:
			return covered
		}
		return uncovered
	case []any:
		switch {
		case atom.List == nil:
			return unknown
		case atom.List.ElementRelationship == smdschema.Atomic:
			return covered
		}
		return uncovered
	case string, bool, int64, float64:
		if atom.Scalar == nil {
			return unknown
		}
		return covered
	}
	return unknown
}

// findItem looks for the item of list that pe names: it and covered
// when there is one, uncovered when there is none, unknown when an item lacks one of
// the list's keys (structured-merge-diff would then use the schema's
// defaults) or is not what such a list holds.
func findItem(t *smdschema.List, list []any, pe fieldpath.PathElement) (any, coverage) {
	if pe.Value != nil {
		for _, item := range list {
			switch item.(type) {
			case string, bool, int64, float64:
			default:
				return nil, unknown
			}
			if value.Equals(value.NewValueInterface(item), *pe.Value) {
				return item, covered
			}
		}
		return nil, uncovered
	}
	if len(*pe.Key) != len(t.Keys) {
		return nil, unknown
	}
	for _, f := range *pe.Key {
		if !slices.Contains(t.Keys, f.Name) {
			return nil, unknown
		}
	}
	for _, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			return nil, unknown
		}
		match := true
		for _, k := range t.Keys {
			if _, ok := m[k]; !ok {
				return nil, unknown
			}
		}
		for _, f := range *pe.Key {
			v, ok := m[f.Name]
			if !ok || !value.Equals(value.NewValueInterface(v), f.Value) {
				match = false
				break
			}
		}
		if match {
			return item, covered
		}
	}
	return nil, uncovered
}
