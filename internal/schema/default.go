package schema

import "k8s.io/apimachinery/pkg/runtime"

// Default fills obj's missing fields that have a default, in place, and
// first removes nulls the schema does not allow: a null in a field that is
// not nullable is replaced by the field's default, or removed when it has
// none (upstream's PruneNonNullableNullsWithoutDefaults then Default).
// Defaults apply per element under items and additionalProperties, and
// every default is deep-copied, so objects never share the schema's values.
func (s *Schema) Default(obj map[string]any) {
	defaultValue(obj, s.root)
}

func defaultValue(x any, n *node) {
	if n == nil {
		return
	}
	switch x := x.(type) {
	case map[string]any:
		for k, v := range x {
			c, ok := n.child(k)
			if !ok {
				continue
			}
			if v == nil && !c.nullable {
				if !c.hasDef {
					delete(x, k)
					continue
				}
				v = runtime.DeepCopyJSONValue(c.def)
				x[k] = v
			}
			defaultValue(v, c)
		}
		for _, k := range n.defaultProps {
			if _, found := x[k]; !found {
				c := n.props[k]
				v := runtime.DeepCopyJSONValue(c.def)
				x[k] = v
				defaultValue(v, c)
			}
		}
	case []any:
		it := n.items
		if it == nil {
			return
		}
		for i, v := range x {
			if v == nil && !it.nullable && it.hasDef {
				x[i] = runtime.DeepCopyJSONValue(it.def)
			}
			defaultValue(x[i], it)
		}
	}
}
