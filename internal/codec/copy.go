package codec

import (
	"maps"
	"slices"
)

// DeepCopy copies a decoded object (see Decode): its maps and lists, not
// the scalars in them, which nothing changes in place (strings, numbers,
// and the encoded managedFields a Raw holds). maps.Clone copies a map's
// table whole, in a third less time than inserting each member anew as
// runtime.DeepCopyJSON does; every PUT copies the object it decoded.
func DeepCopy(obj map[string]any) map[string]any {
	out := maps.Clone(obj)
	for k, v := range out {
		if c, ok := copyContainer(v); ok {
			out[k] = c
		}
	}
	return out
}

// copyContainer copies v when it is a map or a list.
func copyContainer(v any) (any, bool) {
	switch x := v.(type) {
	case map[string]any:
		return DeepCopy(x), true
	case []any:
		out := slices.Clone(x)
		for i, e := range out {
			if c, ok := copyContainer(e); ok {
				out[i] = c
			}
		}
		return out, true
	}
	return nil, false
}

// Strings returns the strings of a decoded JSON list, leaving out
// elements of other types; nil or a non-list gives an empty slice.
func Strings(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, x := range l {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
