package apply

import "strings"

// disownZeroFields takes from the entry a create just recorded for
// manager what upstream's field manager does not record when it compares
// the created object with m.Zero rather than with nothing: the "." of a
// struct m.Zero has already, and a field the created object leaves as
// m.Zero has it. Recording the create against m.Zero itself would do the
// same at the price of the comparison the create's walk avoids. An entry
// left with no fields is dropped, as upstream drops empty ones.
func (m *Manager) disownZeroFields(obj map[string]any, manager string) {
	list, ok := metadata(obj)["managedFields"].([]any)
	if !ok {
		return
	}
	if manager == "" {
		manager = "unknown"
	}
	kept := list[:0]
	for _, e := range list {
		entry, _ := e.(map[string]any)
		fields, _ := entry["fieldsV1"].(map[string]any)
		if fields != nil && entry["manager"] == manager && entry["operation"] == opUpdate && entry["subresource"] == nil {
			disownZero(fields, m.Zero, obj, true)
			if len(fields) == 0 {
				continue
			}
		}
		kept = append(kept, e)
	}
	if len(kept) == 0 {
		setManagedFields(obj, nil)
		return
	}
	setManagedFields(obj, kept)
}

// disownZero removes from fields, the FieldsV1 of a struct of obj, what
// comparing zero (the same struct of the zero object) with obj finds
// unchanged: the "." of a field zero has (null included), and a leaf
// equal to zero's. Below a field zero has no struct for, everything is
// new. Metadata is the field manager's own business at the top.
func disownZero(fields, zero, obj map[string]any, top bool) {
	for k, f := range fields {
		name, ok := strings.CutPrefix(k, "f:")
		if !ok || (top && name == "metadata") {
			continue
		}
		z, inZero := zero[name]
		if !inZero {
			continue
		}
		sub, _ := f.(map[string]any)
		if len(sub) == 0 {
			if jsonEqual(z, obj[name]) {
				delete(fields, k)
			}
			continue
		}
		delete(sub, ".")
		if zm, ok := z.(map[string]any); ok {
			om, _ := obj[name].(map[string]any)
			disownZero(sub, zm, om, false)
		}
		if len(sub) == 0 {
			delete(fields, k)
		}
	}
}
