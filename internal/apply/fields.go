package apply

import (
	"fmt"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// FieldsV1 is a field set as a JSON object: each key a path element
// ("f:spec", `k:{"name":"http"}`, `v:"x"`, "i:0"), each value the set
// below it, with "." marking the element itself a member. The walks below
// convert between that form, as decoded objects hold it, and
// structured-merge-diff's sets, without a JSON round trip: every write
// decodes the object's entries and encodes those that changed.

// decodeFields parses a FieldsV1 value ({"f:spec":{"f:replicas":{}}}).
func decodeFields(v any) (*fieldpath.Set, error) {
	set := &fieldpath.Set{}
	if v == nil {
		return set, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("fields are %T, not an object", v)
	}
	return set, fillSet(set, m)
}

func fillSet(set *fieldpath.Set, m map[string]any) error {
	for k, v := range m {
		if k == "." {
			continue
		}
		pe, err := fieldpath.DeserializePathElement(k)
		if err != nil {
			return fmt.Errorf("parsing key %q: %w", k, err)
		}
		child, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("value of %q is %T, not an object", k, v)
		}
		if _, self := child["."]; self || len(child) == 0 {
			set.Members.Insert(pe)
		}
		if len(child) > 1 || (len(child) == 1 && child["."] == nil) {
			if err := fillSet(set.Children.Descend(pe), child); err != nil {
				return err
			}
		}
	}
	return nil
}

// encodeFields returns set in its FieldsV1 form.
func encodeFields(set *fieldpath.Set) (map[string]any, error) {
	out := make(map[string]any, set.Members.Size()+set.Children.Size())
	for pe := range set.Members.All() {
		k, err := fieldpath.SerializePathElement(pe)
		if err != nil {
			return nil, err
		}
		out[k] = map[string]any{}
	}
	for pe := range set.Children.All() {
		k, err := fieldpath.SerializePathElement(pe)
		if err != nil {
			return nil, err
		}
		child, _ := set.Children.Get(pe)
		m, err := encodeFields(child)
		if err != nil {
			return nil, err
		}
		if _, member := out[k]; member {
			m["."] = map[string]any{}
		}
		out[k] = m
	}
	return out, nil
}
