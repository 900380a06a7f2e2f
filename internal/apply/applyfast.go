package apply

import (
	"maps"
	"slices"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// applyAgain is Apply for the commonest apply of all: a manager applying
// again the configuration it applied last, with the same fields and at
// most some values changed (a GitOps tool's periodic apply, a controller
// applying its desired state). structured-merge-diff would merge config
// into live, which then differs from live only in those values; give the
// applier config's field set, the one it had; find no conflict when no
// other manager owns a changed value; and leave every other entry as it
// was. applyAgain finds that out by walking config beside live and the
// applier's last field set, and builds the merged object from live with
// the values replaced. ok is false when the apply is not of that kind,
// or is and it cannot tell (a list whose items moved, a field it would
// have to add, a manager at another version, a set the schema would
// reconcile); Apply then runs structured-merge-diff.
//
// changed reports whether any value changed; obj is live's copy without
// managedFields when none did, as Apply answers a no-op. Either way obj's
// metadata is a map of its own when live has managedFields.
func (m *Manager) applyAgain(pt *typed.ParseableType, live, config map[string]any, mf *managed, id string) (obj map[string]any, changed, ok bool) {
	liveT := typedValue(pt, shallowWithoutManagedFields(live))
	return m.again(pt, live, config, mf.fields, id, func(_ string, s *fieldpath.Set) bool {
		r, err := typed.ReconcileFieldSetWithSchema(s, liveT)
		return err == nil && r == nil
	})
}

// again is applyAgain on the entries' field sets; settled reports whether
// structured-merge-diff's reconciliation with the schema would leave an
// entry's set as it is.
func (m *Manager) again(pt *typed.ParseableType, live, config map[string]any, fields fieldpath.ManagedFields, id string, settled func(key string, s *fieldpath.Set) bool) (obj map[string]any, changed, ok bool) {
	version := fieldpath.APIVersion(m.apiVersion())
	last, found := fields[id]
	if m.slow || !found || !last.Applied() || last.APIVersion() != version {
		return nil, false, false
	}
	for key, vs := range fields {
		// Another version would need conversion, and structured-merge-diff
		// drops an empty entry: both are its work.
		if vs.APIVersion() != version || vs.Set().Empty() || !settled(key, vs.Set()) {
			return nil, false, false
		}
	}
	bare := shallowWithoutManagedFields(live)
	w := againWalk{s: pt.Schema}
	if !w.object(pt.TypeRef, config, bare, last.Set(), m.Reset[version]) {
		return nil, false, false
	}
	// Every field config sets is one last holds, and there are as many:
	// config's set is last.
	if w.members != last.Set().Size() {
		return nil, false, false
	}
	if len(w.changes) == 0 {
		return bare, false, true
	}
	for key, vs := range fields {
		if key == id {
			continue
		}
		for _, c := range w.changes {
			if vs.Set().Has(c.path) {
				// A conflict, or with force a field changing hands.
				return nil, false, false
			}
		}
	}
	obj = bare
	for _, c := range w.changes {
		next, ok := withValueAt(obj, c.at, c.value)
		if !ok {
			return nil, false, false
		}
		obj = next.(map[string]any)
	}
	return obj, true, true
}

// againWalk walks a configuration beside the live object and the field
// set its applier last applied, as structured-merge-diff's ToFieldSet,
// Merge and Compare would walk them.
type againWalk struct {
	s *smdschema.Schema
	// members counts config's field set as ToFieldSet builds it, less
	// the metadata stripMeta removes; each is one of last's.
	members int
	// changes are the values config changes, at the scalars and atomic
	// values that are its leaves.
	changes []againChange
	// at is the current location: map keys (string) and list indexes
	// (int), to reach it again in a copy of live.
	at []any
	// path is the current field path, copied for changes.
	path fieldpath.Path
}

// againChange is a value config gives a field of live.
type againChange struct {
	path  fieldpath.Path
	at    []any
	value any
}

// object walks config and live, values of the granular map type tr whose
// fields' set (children and members) is set; reset is what the endpoint
// does not write (nil: nothing).
func (w *againWalk) object(tr smdschema.TypeRef, config, live map[string]any, set, reset *fieldpath.Set) bool {
	atom, ok := w.s.Resolve(tr)
	if !ok || atom.Map == nil || atom.Map.ElementRelationship == smdschema.Atomic {
		return false
	}
	if set == nil {
		// last holds nothing under here: config may set only what
		// stripMeta removes (the metadata's name and namespace).
		set = noFields
	}
	for k, cv := range config {
		lv, present := live[k]
		if !present {
			// An added field: merging would add it, which is not only a
			// value changing.
			return false
		}
		pe := fieldpath.PathElement{FieldName: &k}
		if reset != nil && reset.Members.Has(pe) {
			return false
		}
		var childReset *fieldpath.Set
		if reset != nil {
			childReset, _ = reset.Children.Get(pe)
		}
		field, declared := atom.Map.FindField(k)
		ftr := atom.Map.ElementType
		if declared {
			ftr = field.Type
		} else if ftr == (smdschema.TypeRef{}) {
			return false // not declared: the typing's error
		}
		stripped := len(w.at) == 0 && (k == "apiVersion" || k == "kind" || k == "metadata") ||
			w.inMetadata() && strippedMeta[k]
		// ToFieldSet makes the field a member when its value is null or
		// an empty map, or the map does not declare it.
		member := !declared
		if m, isMap := cv.(map[string]any); cv == nil || isMap && len(m) == 0 {
			member = true
		}
		if member && !stripped {
			if !set.Members.Has(pe) {
				return false
			}
			w.members++
		}
		child, _ := set.Children.Get(pe)
		w.at = append(w.at, k)
		w.path = append(w.path, pe)
		ok := w.value(ftr, cv, lv, set, child, childReset, stripped, member)
		w.at, w.path = w.at[:len(w.at)-1], w.path[:len(w.path)-1]
		if !ok {
			return false
		}
	}
	return true
}

// noFields is an empty set, never modified.
var noFields = &fieldpath.Set{}

// inMetadata reports whether the walk is in the object's metadata.
func (w *againWalk) inMetadata() bool {
	return len(w.at) == 1 && w.at[0] == "metadata"
}

// strippedMeta are the metadata fields stripMeta removes from an
// applier's set.
var strippedMeta = map[string]bool{
	"name": true, "namespace": true, "creationTimestamp": true, "selfLink": true, "uid": true,
	"clusterName": true, "generation": true, "managedFields": true, "resourceVersion": true,
}

// value walks one field's or item's value cv of type tr beside live's lv.
// parent is the set holding the field as a member, set its own children
// (nil: none); member reports whether the caller counted it already.
// A stripped field must keep its value.
func (w *againWalk) value(tr smdschema.TypeRef, cv, lv any, parent, set, reset *fieldpath.Set, stripped, member bool) bool {
	atom, ok := w.s.Resolve(tr)
	if !ok {
		return false
	}
	switch x := cv.(type) {
	case nil:
		return lv == nil
	case string, bool, int64, float64:
		if atom.Scalar == nil {
			return false
		}
		if !member && !stripped {
			if !parent.Members.Has(w.path[len(w.path)-1]) {
				return false
			}
			w.members++
		}
		return w.leaf(cv, lv, stripped)
	case map[string]any:
		if atom.Map == nil {
			return false
		}
		if atom.Map.ElementRelationship == smdschema.Atomic {
			if !member && !stripped {
				if !parent.Members.Has(w.path[len(w.path)-1]) {
					return false
				}
				w.members++
			}
			return w.leaf(cv, lv, stripped)
		}
		l, ok := lv.(map[string]any)
		if !ok {
			return false
		}
		if len(x) == 0 {
			// A member of its own (counted by the caller); merged, it
			// keeps live's fields.
			return true
		}
		return w.object(tr, x, l, set, reset)
	case []any:
		if atom.List == nil || stripped {
			return false
		}
		switch atom.List.ElementRelationship {
		case smdschema.Atomic:
			if !member {
				if !parent.Members.Has(w.path[len(w.path)-1]) {
					return false
				}
				w.members++
			}
			return w.leaf(cv, lv, false)
		case smdschema.Associative:
			l, ok := lv.([]any)
			if !ok || len(l) != len(x) || reset != nil {
				return false
			}
			if len(x) == 0 {
				// No members; merged, live's empty list stays.
				return true
			}
			return w.items(atom.List, x, l, set)
		}
	}
	return false
}

// items walks the items of an associative list, which must name the same
// items as live's in the same order: merged, its items keep live's order
// only then.
func (w *againWalk) items(t *smdschema.List, config, live []any, set *fieldpath.Set) bool {
	if set == nil {
		return false
	}
	for i, cv := range config {
		pe, ok := itemElement(t, cv)
		if !ok {
			return false
		}
		if lpe, ok := itemElement(t, live[i]); !ok || !lpe.Equals(pe) {
			return false
		}
		// Every item is a member.
		if !set.Members.Has(pe) {
			return false
		}
		w.members++
		if len(t.Keys) == 0 {
			// A set's item is its value: the same as live's, unless
			// only numerically.
			if !jsonEqual(cv, live[i]) {
				return false
			}
			continue
		}
		// The item's key fields are members of its own set: it has one.
		child, _ := set.Children.Get(pe)
		cm, _ := cv.(map[string]any)
		lm, _ := live[i].(map[string]any)
		w.at = append(w.at, i)
		w.path = append(w.path, pe)
		ok = w.object(t.ElementType, cm, lm, child, nil)
		w.at, w.path = w.at[:len(w.at)-1], w.path[:len(w.path)-1]
		if !ok {
			return false
		}
	}
	return true
}

// itemElement is the path element of a list item as structured-merge-diff
// names it, when the item has every key (it would use the schema's
// defaults for a missing one) or is a scalar of a set.
func itemElement(t *smdschema.List, item any) (fieldpath.PathElement, bool) {
	if len(t.Keys) == 0 {
		switch item.(type) {
		case string, bool, int64, float64:
			v := value.NewValueInterface(item)
			return fieldpath.PathElement{Value: &v}, true
		}
		return fieldpath.PathElement{}, false
	}
	m, ok := item.(map[string]any)
	if !ok {
		return fieldpath.PathElement{}, false
	}
	keys := make(value.FieldList, 0, len(t.Keys))
	for _, k := range t.Keys {
		v, ok := m[k]
		switch v.(type) {
		case string, bool, int64, float64:
		default:
			return fieldpath.PathElement{}, false
		}
		if !ok {
			return fieldpath.PathElement{}, false
		}
		keys = append(keys, value.Field{Name: k, Value: value.NewValueInterface(v)})
	}
	keys.Sort()
	return fieldpath.PathElement{Key: &keys}, true
}

// leaf compares a scalar or atomic value of config with live's and notes
// a change; a stripped field, which Apply's bookkeeping leaves alone,
// must not change, nor a scalar change its JSON type (merged, it would
// take config's while Compare finds no change).
func (w *againWalk) leaf(cv, lv any, stripped bool) bool {
	if jsonEqual(cv, lv) {
		return true
	}
	if stripped || !sameKind(cv, lv) {
		return false
	}
	w.changes = append(w.changes, againChange{path: w.path.Copy(), at: slices.Clone(w.at), value: cv})
	return true
}

// sameKind reports whether two decoded JSON values are of one Go type.
func sameKind(a, b any) bool {
	switch a.(type) {
	case string:
		_, ok := b.(string)
		return ok
	case bool:
		_, ok := b.(bool)
		return ok
	case int64:
		_, ok := b.(int64)
		return ok
	case float64:
		_, ok := b.(float64)
		return ok
	case map[string]any:
		_, ok := b.(map[string]any)
		return ok
	case []any:
		_, ok := b.([]any)
		return ok
	}
	return false
}

// withValueAt returns a copy of the decoded JSON value cur with v at
// location at (map keys and list indexes), sharing all it does not
// change: live's values stay as they were.
func withValueAt(cur any, at []any, v any) (any, bool) {
	if len(at) == 0 {
		return v, true
	}
	switch s := at[0].(type) {
	case string:
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		next, ok := withValueAt(m[s], at[1:], v)
		if !ok {
			return nil, false
		}
		m = maps.Clone(m)
		m[s] = next
		return m, true
	case int:
		l, ok := cur.([]any)
		if !ok || s >= len(l) {
			return nil, false
		}
		next, ok := withValueAt(l[s], at[1:], v)
		if !ok {
			return nil, false
		}
		l = slices.Clone(l)
		l[s] = next
		return l, true
	}
	return nil, false
}
