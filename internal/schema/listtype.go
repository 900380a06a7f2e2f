package schema

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateListTypes reports duplicate items of x-kubernetes-list-type set
// lists and duplicate keys of map lists, as upstream's listtype package:
// one Duplicate per value seen again (at its second occurrence), field
// paths with [key] for additionalProperties. It walks only the parts of
// the schema that hold such lists.
func validateListTypes(n *node, obj map[string]any) field.ErrorList {
	if n == nil || obj == nil {
		return nil
	}
	var buf [16]seg
	w := listWalker{segs: buf[:0]}
	w.object(n, obj)
	return w.errs
}

type listWalker struct {
	segs []seg
	errs field.ErrorList
}

// path builds the field.Path of the current position; only errors need it.
func (w *listWalker) path() *field.Path {
	var p *field.Path
	for _, s := range w.segs {
		switch s.kind {
		case segProp:
			p = p.Child(s.key)
		case segKey:
			p = p.Key(s.key)
		default:
			p = p.Index(s.idx)
		}
	}
	return p
}

func (w *listWalker) object(n *node, obj map[string]any) {
	for k, v := range obj {
		if c, ok := n.props[k]; ok {
			if c.subtreeHasListType {
				w.segs = append(w.segs, seg{kind: segProp, key: k})
				w.value(c, v)
				w.segs = w.segs[:len(w.segs)-1]
			}
		} else if n.addl != nil && n.addl.subtreeHasListType {
			w.segs = append(w.segs, seg{kind: segKey, key: k})
			w.value(n.addl, v)
			w.segs = w.segs[:len(w.segs)-1]
		}
	}
}

func (w *listWalker) value(n *node, x any) {
	switch x := x.(type) {
	case []any:
		switch n.listType {
		case "set":
			if nonUnique, err := nonUniqueIndexes(w.path, x); err != nil {
				w.errs = append(w.errs, err)
			} else {
				for _, i := range nonUnique {
					w.errs = append(w.errs, field.Duplicate(w.path().Index(i), x[i]))
				}
			}
		case "map":
			w.errs = append(w.errs, validateListMap(w.path, n, x)...)
		}
		if n.items != nil && n.items.subtreeHasListType {
			for i := range x {
				w.segs = append(w.segs, seg{kind: segIndex, idx: i})
				w.value(n.items, x[i])
				w.segs = w.segs[:len(w.segs)-1]
			}
		}
	case map[string]any:
		w.object(n, x)
	}
}

// nonUniqueIndexes returns the index of the second occurrence of every
// value that occurs more than once. Objects and lists compare by their
// JSON encoding.
func nonUniqueIndexes(path func() *field.Path, list []any) ([]int, *field.Error) {
	if len(list) <= 1 {
		return nil, nil
	}
	if out, ok := nonUniqueSmall(list); ok {
		return out, nil
	}
	var seenScalars map[any]int
	var seenCompounds map[string]int
	var out []int
	for i, x := range list {
		switch x.(type) {
		case map[string]any, []any:
			b, err := json.Marshal(x)
			if err != nil {
				return nil, field.Invalid(path().Index(i), x, "internal error")
			}
			if seenCompounds == nil {
				seenCompounds = make(map[string]int, len(list))
			}
			seenCompounds[string(b)]++
			if seenCompounds[string(b)] == 2 {
				out = append(out, i)
			}
		default:
			if seenScalars == nil {
				seenScalars = make(map[any]int, len(list))
			}
			seenScalars[x]++
			if seenScalars[x] == 2 {
				out = append(out, i)
			}
		}
	}
	return out, nil
}

// nonUniqueSmall is nonUniqueIndexes for short lists of scalars, without
// allocating unless there are duplicates. ok is false when it does not
// apply.
func nonUniqueSmall(list []any) (out []int, ok bool) {
	if len(list) > 16 {
		return nil, false
	}
	for _, x := range list {
		switch x.(type) {
		case map[string]any, []any:
			return nil, false
		}
	}
	for i := 1; i < len(list); i++ {
		seen := 0
		for j := 0; j < i; j++ {
			if list[j] == list[i] {
				seen++
			}
		}
		if seen == 1 {
			out = append(out, i)
		}
	}
	return out, true
}

type unspecifiedKey struct{}

func validateListMap(path func() *field.Path, n *node, list []any) field.ErrorList {
	for i, x := range list {
		if _, ok := x.(map[string]any); x != nil && !ok {
			return field.ErrorList{field.Invalid(path().Index(i), x, "must be an object for an array of list-type map")}
		}
	}
	if len(list) <= 1 {
		return nil
	}
	if len(n.listMapKeys) == 1 {
		keyField := n.listMapKeys[0]
		keys := make([]any, 0, len(list))
		for _, x := range list {
			m, _ := x.(map[string]any)
			k, ok := m[keyField]
			if !ok {
				keys = append(keys, unspecifiedKey{})
				continue
			}
			keys = append(keys, k)
		}
		nonUnique, err := nonUniqueIndexes(path, keys)
		if err != nil {
			return field.ErrorList{err}
		}
		var errs field.ErrorList
		for _, i := range nonUnique {
			if keys[i] == (unspecifiedKey{}) {
				errs = append(errs, field.Duplicate(path().Index(i), map[string]any{}))
			} else {
				errs = append(errs, field.Duplicate(path().Index(i), map[string]any{keyField: keys[i]}))
			}
		}
		return errs
	}
	keys := make([]any, 0, len(list))
	for _, x := range list {
		key := map[string]any{}
		m, _ := x.(map[string]any)
		for _, kf := range n.listMapKeys {
			if k, ok := m[kf]; ok {
				key[kf] = k
			}
		}
		keys = append(keys, key)
	}
	nonUnique, err := nonUniqueIndexes(path, keys)
	if err != nil {
		return field.ErrorList{err}
	}
	var errs field.ErrorList
	for _, i := range nonUnique {
		errs = append(errs, field.Duplicate(path().Index(i), keys[i]))
	}
	return errs
}
