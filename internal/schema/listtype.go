package schema

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateListTypes reports duplicate items of x-kubernetes-list-type set
// lists and duplicate keys of map lists, as upstream's listtype package:
// one Duplicate per value seen again (at its second occurrence), field
// paths with [key] for additionalProperties.
func validateListTypes(p *field.Path, n *node, obj map[string]any) field.ErrorList {
	if n == nil || obj == nil {
		return nil
	}
	var errs field.ErrorList
	for k, v := range obj {
		if c, ok := n.props[k]; ok {
			if c.subtreeHasListType {
				errs = append(errs, listTypesIn(p.Child(k), c, v)...)
			}
		} else if n.addl != nil && n.addl.subtreeHasListType {
			errs = append(errs, listTypesIn(p.Key(k), n.addl, v)...)
		}
	}
	return errs
}

func listTypesIn(p *field.Path, n *node, x any) field.ErrorList {
	switch x := x.(type) {
	case []any:
		var errs field.ErrorList
		switch n.listType {
		case "set":
			nonUnique, err := nonUniqueIndexes(p, x)
			if err != nil {
				errs = append(errs, err)
			} else {
				for _, i := range nonUnique {
					errs = append(errs, field.Duplicate(p.Index(i), x[i]))
				}
			}
		case "map":
			errs = append(errs, validateListMap(p, n, x)...)
		}
		if n.items != nil && n.items.subtreeHasListType {
			for i := range x {
				errs = append(errs, listTypesIn(p.Index(i), n.items, x[i])...)
			}
		}
		return errs
	case map[string]any:
		return validateListTypes(p, n, x)
	}
	return nil
}

// nonUniqueIndexes returns the index of the second occurrence of every
// value that occurs more than once. Objects and lists compare by their
// JSON encoding.
func nonUniqueIndexes(p *field.Path, list []any) ([]int, *field.Error) {
	if len(list) <= 1 {
		return nil, nil
	}
	var seenScalars map[any]int
	var seenCompounds map[string]int
	var out []int
	for i, x := range list {
		switch x.(type) {
		case map[string]any, []any:
			b, err := json.Marshal(x)
			if err != nil {
				return nil, field.Invalid(p.Index(i), x, "internal error")
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

type unspecifiedKey struct{}

func validateListMap(p *field.Path, n *node, list []any) field.ErrorList {
	for i, x := range list {
		if _, ok := x.(map[string]any); x != nil && !ok {
			return field.ErrorList{field.Invalid(p.Index(i), x, "must be an object for an array of list-type map")}
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
		nonUnique, err := nonUniqueIndexes(p, keys)
		if err != nil {
			return field.ErrorList{err}
		}
		var errs field.ErrorList
		for _, i := range nonUnique {
			if keys[i] == (unspecifiedKey{}) {
				errs = append(errs, field.Duplicate(p.Index(i), map[string]any{}))
			} else {
				errs = append(errs, field.Duplicate(p.Index(i), map[string]any{keyField: keys[i]}))
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
	nonUnique, err := nonUniqueIndexes(p, keys)
	if err != nil {
		return field.ErrorList{err}
	}
	var errs field.ErrorList
	for _, i := range nonUnique {
		errs = append(errs, field.Duplicate(p.Index(i), keys[i]))
	}
	return errs
}
