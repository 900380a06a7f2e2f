package apply

import (
	"fmt"
	"strings"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// MergeApplyConfiguration merges patch, what a MutatingAdmissionPolicy's
// ApplyConfiguration expression built, into obj as upstream does: typed as
// pt, without field ownership, and refusing a patch that sets any atomic
// list, map or struct (merging would replace it whole, which a policy
// writing one field rarely means). The errors are upstream's words.
func MergeApplyConfiguration(pt *typed.ParseableType, obj, patch map[string]any) (map[string]any, error) {
	p, err := pt.FromUnstructured(patch)
	if err != nil {
		return nil, fmt.Errorf("failed to convert patch object to typed object: %w", err)
	}
	if atomics := findAtomics(nil, p.Schema(), p.TypeRef(), p.AsValue()); len(atomics) > 0 {
		return nil, fmt.Errorf("invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: %v", strings.Join(atomics, ", "))
	}
	live, err := pt.FromUnstructured(obj, typed.AllowDuplicates)
	if err != nil {
		return nil, fmt.Errorf("failed to convert original object to typed object: %w", err)
	}
	merged, err := live.Merge(p)
	if err != nil {
		return nil, fmt.Errorf("failed to merge patch: %w", err)
	}
	out, ok := merged.AsValue().Unstructured().(map[string]any)
	if !ok {
		return nil, fmt.Errorf("failed to merge patch: the result is not an object")
	}
	return out, nil
}

// findAtomics lists the paths under v that are atomic lists, maps or
// structs.
func findAtomics(path []fieldpath.PathElement, s *schema.Schema, tr schema.TypeRef, v value.Value) []string {
	a, ok := s.Resolve(tr)
	if !ok {
		return nil
	}
	var atomics []string
	switch {
	case v.IsMap() && a.Map != nil:
		if a.Map.ElementRelationship == schema.Atomic {
			atomics = append(atomics, pathString(path))
		}
		v.AsMap().Iterate(func(key string, val value.Value) bool {
			// Like upstream, only named fields are searched, not the
			// values of maps.
			if sf, ok := a.Map.FindField(key); ok {
				atomics = append(atomics, findAtomics(append(path, fieldpath.PathElement{FieldName: &key}), s, sf.Type, val)...)
			}
			return true
		})
	case v.IsList() && a.List != nil:
		if a.List.ElementRelationship == schema.Atomic {
			atomics = append(atomics, pathString(path))
		}
		list := v.AsList()
		for i := 0; i < list.Length(); i++ {
			atomics = append(atomics, findAtomics(append(path, fieldpath.PathElement{Index: &i}), s, a.List.ElementType, list.At(i))...)
		}
	}
	return atomics
}

func pathString(path []fieldpath.PathElement) string {
	var sb strings.Builder
	for _, p := range path {
		sb.WriteString(p.String())
	}
	return sb.String()
}
