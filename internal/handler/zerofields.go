package handler

import (
	"strings"

	"github.com/crdserver/crdserver/internal/apply"
	"github.com/crdserver/crdserver/internal/registry"
)

// disownZeroFields takes from the entry a create just recorded for its
// writer what upstream's field manager does not record for a built-in
// with a Go type: upstream compares the created object with a new object
// of the type (registry.Zeroer), not with nothing, so the writer owns
// neither the "." of a struct that object has already nor a field the
// created object leaves as that object has it. An entry left with no
// fields is dropped, as upstream drops empty ones. Entries recorded
// encoded (c.written) are left alone; a create records them decoded.
func disownZeroFields(c *call, obj map[string]any) {
	z, ok := typedHooks(c).(registry.Zeroer)
	if !ok || c.written != nil {
		return
	}
	md := metadata(obj)
	list, ok := md["managedFields"].([]any)
	if !ok {
		return
	}
	manager := apply.ManagerName(c.r.URL.Query().Get("fieldManager"), c.r.UserAgent())
	if manager == "" {
		manager = "unknown"
	}
	zero := z.ZeroObject()
	kept := list[:0]
	for _, e := range list {
		entry, _ := e.(map[string]any)
		fields, _ := entry["fieldsV1"].(map[string]any)
		if fields != nil && entry["manager"] == manager && entry["operation"] == "Update" && entry["subresource"] == nil {
			disownZero(fields, zero, obj, true)
			if len(fields) == 0 {
				continue
			}
		}
		kept = append(kept, e)
	}
	if len(kept) == 0 {
		delete(md, "managedFields")
		return
	}
	md["managedFields"] = kept
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
