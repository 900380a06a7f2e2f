package apply

import (
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// scalarChanges compares two objects of the type m, as an update's fast
// path needs them compared, when all that differs between them are
// scalar fields: a value changed, or a field set in one object only
// (their managedFields left out). It returns what structured-merge-diff's
// comparison reports for such a change: those fields as modified, added
// or removed, and nothing else. It reports false for any other change —
// a map or list added or removed, a list or an atomic map changed, a
// value whose type the schema does not expect, a number turned from an
// integer into a float — for the comparison to decide.
//
// Most updates (a controller setting replicas, a status field or an
// annotation; a client leaving out the metadata the server sets) are such
// a change, and one walk of both objects is all it takes: no pruned
// copies of them, no typed comparison.
func scalarChanges(m *mapWalk, a, b map[string]any) (*typed.Comparison, bool) {
	changes, ok := scalarChangeList(m, a, b)
	if !ok {
		return nil, false
	}
	return comparisonOf(changes), true
}

// scalarChangeList is scalarChanges as a list of the changed fields, for
// the fast path of updates, which looks at each of them once and needs
// field sets only when another entry owns one of them.
func scalarChangeList(m *mapWalk, a, b map[string]any) ([]fieldChange, bool) {
	// Room for the depth of most objects, grown one field at a time.
	d := scalarDiff{keys: make([]string, 0, 8)}
	if m == nil || !d.walkMap(m, a, b) {
		return nil, false
	}
	return d.changes, true
}

// changeKind says how a field changed: which of a comparison's sets
// holds it.
type changeKind uint8

const (
	modified changeKind = iota
	added
	removed
)

// fieldChange is one field an update modified, added or removed.
type fieldChange struct {
	path fieldpath.Path
	kind changeKind
}

// comparisonOf is the comparison reporting changes.
func comparisonOf(changes []fieldChange) *typed.Comparison {
	c := &typed.Comparison{Modified: &fieldpath.Set{}, Added: &fieldpath.Set{}, Removed: &fieldpath.Set{}}
	for _, ch := range changes {
		switch ch.kind {
		case modified:
			c.Modified.Insert(ch.path)
		case added:
			c.Added.Insert(ch.path)
		default:
			c.Removed.Insert(ch.path)
		}
	}
	return c
}

// changesOf lists what the comparison c reports.
func changesOf(c *typed.Comparison) []fieldChange {
	var out []fieldChange
	for _, s := range []struct {
		set  *fieldpath.Set
		kind changeKind
	}{{c.Modified, modified}, {c.Added, added}, {c.Removed, removed}} {
		s.set.Iterate(func(p fieldpath.Path) {
			out = append(out, fieldChange{path: p.Copy(), kind: s.kind})
		})
	}
	return out
}

// withoutReset drops from changes the fields in reset or below one of
// its fields, as filtering a comparison with fieldpath's exclude filter
// of reset does. It reuses changes' array.
func withoutReset(changes []fieldChange, reset *fieldpath.Set) []fieldChange {
	if reset == nil {
		return changes
	}
	out := changes[:0]
	for _, ch := range changes {
		if !hasPrefixIn(reset, ch.path) {
			out = append(out, ch)
		}
	}
	return out
}

// hasPrefixIn reports whether s has p or a path p starts with.
func hasPrefixIn(s *fieldpath.Set, p fieldpath.Path) bool {
	for i := 1; i <= len(p); i++ {
		if s.Has(p[:i]) {
			return true
		}
	}
	return false
}

type scalarDiff struct {
	changes []fieldChange
	// keys are the field names down to the map being walked; a path is
	// made of them only for a field that changed, so that the walk
	// allocates nothing for the fields that did not.
	keys []string
	// names hold the names of the changed fields' paths, path after path,
	// which the paths' elements point into. A path's names are never
	// moved: when they do not fit, names start again in a new array.
	names []string
}

// walkMap compares two maps of the separable type m, key by key.
func (d *scalarDiff) walkMap(m *mapWalk, a, b map[string]any) bool {
	// An object's managedFields are left out, as the comparison leaves
	// them out.
	inMetadata := len(d.keys) == 1 && d.keys[0] == "metadata"
	inBoth := 0
	for k, av := range a {
		if inMetadata && k == "managedFields" {
			continue
		}
		bv, ok := b[k]
		if !ok {
			if !d.oneSided(m, k, av, removed) {
				return false
			}
			continue
		}
		inBoth++
		if !d.walkValue(m, k, av, bv) {
			return false
		}
	}
	n := len(b)
	if inMetadata {
		if _, ok := b["managedFields"]; ok {
			n--
		}
	}
	if inBoth == n {
		return true
	}
	for k, bv := range b {
		if inMetadata && k == "managedFields" {
			continue
		}
		if _, ok := a[k]; !ok && !d.oneSided(m, k, bv, added) {
			return false
		}
	}
	return true
}

// walkValue compares the values of the field k of a map of type m.
func (d *scalarDiff) walkValue(m *mapWalk, k string, av, bv any) bool {
	switch x := av.(type) {
	case map[string]any:
		y, ok := bv.(map[string]any)
		if !ok {
			return false
		}
		if len(x) == 0 || len(y) == 0 {
			// The comparison takes empty maps for leaves.
			return len(x) == 0 && len(y) == 0
		}
		child := m.field(k).child
		if child == nil {
			// An atomic map (or one of a type the comparison would
			// fail on) is compared whole, as the comparison would.
			return jsonEqual(x, y)
		}
		return d.descend(child, k, x, y)
	case []any:
		// Lists are compared by the comparison, whatever changed.
		return jsonEqual(av, bv)
	case string:
		y, ok := bv.(string)
		return ok && (x == y || d.changed(m, k, stringKind))
	case int64:
		y, ok := bv.(int64)
		return ok && (x == y || d.changed(m, k, numericKind))
	case float64:
		y, ok := bv.(float64)
		return ok && (x == y || d.changed(m, k, numericKind))
	case bool:
		y, ok := bv.(bool)
		return ok && (x == y || d.changed(m, k, booleanKind))
	case nil:
		return bv == nil
	}
	return false
}

func (d *scalarDiff) descend(m *mapWalk, k string, a, b map[string]any) bool {
	d.keys = append(d.keys, k)
	ok := d.walkMap(m, a, b)
	d.keys = d.keys[:len(d.keys)-1]
	return ok
}

// changed records the field k of a map of type m as modified; see
// record.
func (d *scalarDiff) changed(m *mapWalk, k string, kind scalarKinds) bool {
	return d.record(m, k, kind, modified)
}

// oneSided records the field k of a map of type m, present with the value
// v in one of the objects only, as how (added or removed): the comparison
// reports a scalar field so, and nothing below it. It reports false for
// any other value.
func (d *scalarDiff) oneSided(m *mapWalk, k string, v any, how changeKind) bool {
	switch v.(type) {
	case string:
		return d.record(m, k, stringKind, how)
	case int64, float64:
		return d.record(m, k, numericKind, how)
	case bool:
		return d.record(m, k, booleanKind, how)
	}
	return false
}

// record lists the field k of a map of type m, whose values are of the
// scalar kind, as changed how; it reports false when the schema does not
// declare the field a scalar of that kind (or untyped), as the comparison
// would then report an error or look at the field otherwise.
func (d *scalarDiff) record(m *mapWalk, k string, kind scalarKinds, how changeKind) bool {
	if m.field(k).scalars&kind == 0 {
		return false
	}
	n := len(d.keys) + 1
	if cap(d.names)-len(d.names) < n {
		// Room for another path or two: an update changes few fields.
		d.names = make([]string, 0, max(2*n, 8))
	}
	start := len(d.names)
	d.names = append(d.names, d.keys...)
	d.names = append(d.names, k)
	path := make(fieldpath.Path, n)
	for i := range path {
		path[i] = fieldpath.PathElement{FieldName: &d.names[start+i]}
	}
	d.changes = append(d.changes, fieldChange{path: path, kind: how})
	return true
}

// mapWalk is a separable map type (one the comparison descends into) as
// the walk looks its fields up: what the values of each field the schema
// declares resolve to, and what those of any other field resolve to (the
// map's element type). Resolving them in the schema on every update cost
// two map lookups by name each; a mapWalk is built once per type with
// the types of a definition (see Types) and only read after, by
// concurrent updates.
type mapWalk struct {
	fields map[string]fieldWalk
	other  fieldWalk
}

// field is what the values of the field k resolve to, looked up as the
// comparison looks it up.
func (m *mapWalk) field(k string) fieldWalk {
	if f, ok := m.fields[k]; ok {
		return f
	}
	return m.other
}

// fieldWalk is what a field's values resolve to. A type that does not
// resolve has neither a child nor scalar kinds.
type fieldWalk struct {
	// child is the type of map values, when the comparison descends into
	// them; nil when it takes them whole (an atomic map) or the type has
	// no maps.
	child *mapWalk
	// scalars are the kinds of scalar values the type takes: none, one,
	// or all of them for an untyped scalar.
	scalars scalarKinds
}

// scalarKinds is a set of structured-merge-diff's scalar kinds.
type scalarKinds uint8

const (
	stringKind scalarKinds = 1 << iota
	numericKind
	booleanKind
)

// kindsOf is the set of kinds of scalar values a scalar type s takes.
func kindsOf(s smdschema.Scalar) scalarKinds {
	switch s {
	case smdschema.String:
		return stringKind
	case smdschema.Numeric:
		return numericKind
	case smdschema.Boolean:
		return booleanKind
	case smdschema.Untyped:
		return stringKind | numericKind | booleanKind
	}
	return 0
}

// walkBuilder builds the mapWalks of a schema's types, each once: types
// refer to each other, and to themselves (a deduced type's elements are
// of the same type).
type walkBuilder struct {
	schema *smdschema.Schema
	built  map[*smdschema.Map]*mapWalk
}

// field resolves tr as the comparison resolves a field's type.
func (b *walkBuilder) field(tr smdschema.TypeRef) fieldWalk {
	atom, ok := b.schema.Resolve(tr)
	if !ok {
		return fieldWalk{}
	}
	var f fieldWalk
	if atom.Scalar != nil {
		f.scalars = kindsOf(*atom.Scalar)
	}
	if atom.Map != nil && atom.Map.ElementRelationship != smdschema.Atomic {
		f.child = b.mapOf(atom.Map)
	}
	return f
}

// mapOf is the mapWalk of m. A map type is known by its address, which
// Resolve returns the same for the same type reference (it keeps the
// copies it makes for an overridden element relationship).
func (b *walkBuilder) mapOf(m *smdschema.Map) *mapWalk {
	if w, ok := b.built[m]; ok {
		return w
	}
	w := &mapWalk{fields: make(map[string]fieldWalk, len(m.Fields))}
	// Kept before its fields are resolved, for those that refer back to
	// it.
	b.built[m] = w
	// A later field of the same name wins, as in FindField.
	for _, f := range m.Fields {
		w.fields[f.Name] = b.field(f.Type)
	}
	w.other = b.field(m.ElementType)
	return w
}

// fieldType is the type of the field k of a map of type m, as the
// comparison looks it up.
func fieldType(m *smdschema.Map, k string) smdschema.TypeRef {
	if f, ok := m.FindField(k); ok {
		return f.Type
	}
	return m.ElementType
}
