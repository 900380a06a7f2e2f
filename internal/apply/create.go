package apply

import (
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// The fast path of a create. A create's manager owns every field the new
// object sets, less strippedFields and the endpoint's reset fields.
// Structured-merge-diff finds them by comparing the object with an empty
// one, building a field set, and the set is then written as FieldsV1: on
// a 2 KB object that was half of the create's own work. Here one walk of
// the object writes the FieldsV1 directly, as encodeFields would write
// the set the comparison finds. The walk takes what it is sure of —
// scalars, maps, atomic lists and maps, associative lists with scalar
// keys, sets of scalars, and deduced types taken as the kind of their
// value — and reports false on anything else (a null, a value of a kind
// its type does not allow, a field the type does not know, a key missing
// or repeated, a list of another kind), for the comparison to decide.

// createdFields returns the FieldsV1 of a create of obj, of the type tr
// in s, with the top-level fields reset left out; false when the walk
// does not apply (see above).
func createdFields(s *smdschema.Schema, tr smdschema.TypeRef, obj map[string]any, reset *fieldpath.Set) (map[string]any, bool) {
	w := createWalk{schema: s}
	m := w.mapType(tr)
	if m == nil {
		return nil, false
	}
	skip, ok := topLevelNames(reset)
	if !ok {
		return nil, false
	}
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		if strippedTop[k] || skip[k] {
			continue
		}
		if k == "metadata" {
			md, ok := w.metadata(m, v)
			if !ok {
				return nil, false
			}
			if md != nil {
				out["f:metadata"] = md
			}
			continue
		}
		f, ok := w.value(fieldType(m, k), v)
		if !ok {
			return nil, false
		}
		out["f:"+k] = f
	}
	return out, true
}

// topLevelNames are the field names of reset, which must all be top-level
// fields (as the endpoints' reset fields are); false otherwise.
func topLevelNames(reset *fieldpath.Set) (map[string]bool, bool) {
	if reset == nil || reset.Empty() {
		return nil, true
	}
	names := map[string]bool{}
	ok := true
	reset.Iterate(func(p fieldpath.Path) {
		if len(p) != 1 || p[0].FieldName == nil {
			ok = false
			return
		}
		names[*p[0].FieldName] = true
	})
	return names, ok
}

// strippedTop and strippedMetadata are the top-level fields and the
// members of metadata in strippedFields, which strips metadata itself too:
// its FieldsV1 holds its other members only.
var strippedTop, strippedMetadata = func() (top, md map[string]bool) {
	top, md = map[string]bool{}, map[string]bool{}
	strippedFields.Iterate(func(p fieldpath.Path) {
		switch {
		case len(p) == 1 && p[0].FieldName != nil && *p[0].FieldName != "metadata":
			top[*p[0].FieldName] = true
		case len(p) == 2 && p[0].FieldName != nil && *p[0].FieldName == "metadata" && p[1].FieldName != nil:
			md[*p[1].FieldName] = true
		}
	})
	return top, md
}()

// metadata is the FieldsV1 of the object's metadata v, of a field of m:
// nil when nothing in it is owned.
func (w *createWalk) metadata(m *smdschema.Map, v any) (map[string]any, bool) {
	md, ok := v.(map[string]any)
	if !ok {
		return nil, false
	}
	mt := w.mapType(fieldType(m, "metadata"))
	if mt == nil {
		return nil, false
	}
	var out map[string]any
	for k, v := range md {
		if strippedMetadata[k] {
			continue
		}
		f, ok := w.value(fieldType(mt, k), v)
		if !ok {
			return nil, false
		}
		if out == nil {
			out = map[string]any{}
		}
		out["f:"+k] = f
	}
	return out, true
}

type createWalk struct {
	schema *smdschema.Schema
}

// mapType is the map type tr resolves to, nil when it is anything else
// (or deduced: a map and a list and a scalar at once).
func (w *createWalk) mapType(tr smdschema.TypeRef) *smdschema.Map {
	a, ok := w.schema.Resolve(tr)
	if !ok || a.Map == nil || a.List != nil || a.Scalar != nil {
		return nil
	}
	return a.Map
}

// value is the FieldsV1 of a field or item holding v, of the type tr:
// empty for a leaf, else "." and the FieldsV1 of what v holds. As
// structured-merge-diff does, a type that may be several kinds (deduced,
// or int-or-string) is taken as the kind of v.
func (w *createWalk) value(tr smdschema.TypeRef, v any) (map[string]any, bool) {
	a, ok := w.schema.Resolve(tr)
	if !ok {
		return nil, false
	}
	switch x := v.(type) {
	case map[string]any:
		if a.Map == nil {
			return nil, false
		}
		if len(x) == 0 || a.Map.ElementRelationship == smdschema.Atomic {
			return map[string]any{}, true
		}
		out := make(map[string]any, len(x)+1)
		out["."] = map[string]any{}
		for k, y := range x {
			f, ok := w.value(fieldType(a.Map, k), y)
			if !ok {
				return nil, false
			}
			out["f:"+k] = f
		}
		return out, true
	case []any:
		if a.List == nil {
			return nil, false
		}
		if len(x) == 0 || a.List.ElementRelationship == smdschema.Atomic {
			return map[string]any{}, true
		}
		if a.List.ElementRelationship != smdschema.Associative {
			return nil, false
		}
		if len(a.List.Keys) == 0 {
			return w.set(x)
		}
		return w.listMap(a.List, x)
	}
	return map[string]any{}, a.Scalar != nil && isScalar(v)
}

// set is the FieldsV1 of a set of scalars: each value, once.
func (w *createWalk) set(l []any) (map[string]any, bool) {
	out := make(map[string]any, len(l)+1)
	out["."] = map[string]any{}
	for _, x := range l {
		if !isScalar(x) {
			return nil, false
		}
		val := value.NewValueInterface(x)
		k, err := fieldpath.SerializePathElement(fieldpath.PathElement{Value: &val})
		if _, dup := out[k]; err != nil || dup {
			return nil, false
		}
		out[k] = map[string]any{}
	}
	return out, true
}

// listMap is the FieldsV1 of an associative list with keys: each item
// under its key, with "." and its fields.
func (w *createWalk) listMap(lt *smdschema.List, l []any) (map[string]any, bool) {
	it := w.mapType(lt.ElementType)
	if it == nil {
		return nil, false
	}
	out := make(map[string]any, len(l)+1)
	out["."] = map[string]any{}
	for _, x := range l {
		item, ok := x.(map[string]any)
		if !ok {
			return nil, false
		}
		key := make(value.FieldList, 0, len(lt.Keys))
		for _, name := range lt.Keys {
			kv, ok := item[name]
			if !ok || !isScalar(kv) {
				return nil, false
			}
			key = append(key, value.Field{Name: name, Value: value.NewValueInterface(kv)})
		}
		key.Sort()
		k, err := fieldpath.SerializePathElement(fieldpath.PathElement{Key: &key})
		if _, dup := out[k]; err != nil || dup {
			return nil, false
		}
		if it.ElementRelationship == smdschema.Atomic {
			// An atomic item (an owner reference) is owned whole.
			out[k] = map[string]any{}
			continue
		}
		fields := make(map[string]any, len(item)+1)
		fields["."] = map[string]any{}
		for name, fv := range item {
			f, ok := w.value(fieldType(it, name), fv)
			if !ok {
				return nil, false
			}
			fields["f:"+name] = f
		}
		out[k] = fields
	}
	return out, true
}

// isScalar reports whether v is a decoded JSON scalar other than null.
func isScalar(v any) bool {
	switch v.(type) {
	case string, bool, int64, float64:
		return true
	}
	return false
}
