package apply

import (
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
)

// changedOnly returns copies of the objects a and b without the fields
// they share. The comparison of an update walks both objects whole, and
// fields equal on both sides add nothing to what it finds; most updates
// change a few fields of a large object, and a plain equality check is
// far cheaper than the typed walk. Only maps the schema makes granular
// are pruned inside: an atomic map, a list or a scalar that differs is
// kept whole on both sides, as the comparison must see it.
func changedOnly(s *smdschema.Schema, tr smdschema.TypeRef, a, b map[string]any) (map[string]any, map[string]any) {
	atom, ok := s.Resolve(tr)
	if !ok || atom.Map == nil {
		return a, b
	}
	m := atom.Map
	outA, outB := map[string]any{}, map[string]any{}
	for k, av := range a {
		bv, inB := b[k]
		if !inB {
			outA[k] = av
			continue
		}
		if jsonEqual(av, bv) {
			continue
		}
		am, aok := av.(map[string]any)
		bm, bok := bv.(map[string]any)
		if aok && bok && len(am) > 0 && len(bm) > 0 {
			child := m.ElementType
			if f, ok := m.FindField(k); ok {
				child = f.Type
			}
			if c, ok := s.Resolve(child); ok && c.Map != nil && c.Map.ElementRelationship != smdschema.Atomic {
				outA[k], outB[k] = changedOnly(s, child, am, bm)
				continue
			}
		}
		outA[k], outB[k] = av, bv
	}
	for k, bv := range b {
		if _, inA := a[k]; !inA {
			outB[k] = bv
		}
	}
	return outA, outB
}
