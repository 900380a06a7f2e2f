package server

import (
	"slices"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
)

// The managedFields of the APF configuration's own writes, written out
// rather than worked out by a field manager, whose types come from the
// built-in OpenAPI library: every server writes these at start, and an
// idle server should not hold the library for them (docs/memory.md).
// TestAPFFieldsWrittenOut holds them to the field manager's.

// apfPointerStructs are the optional (pointer) structs of FlowSchemas and
// PriorityLevelConfigurations, which the field manager records as set
// ("."), beside their fields.
var apfPointerStructs = []string{
	"spec.distinguisherMethod", "spec.exempt", "spec.limited",
	"spec.limited.limitResponse", "spec.limited.limitResponse.queuing",
}

// apfCreateFields is the producer's fieldsV1 for creating obj, a
// FlowSchema or PriorityLevelConfiguration of upstream's configuration:
// its annotations and labels, and its spec (lists are atomic).
func apfCreateFields(obj map[string]any) map[string]any {
	out := map[string]any{}
	md := metadata(obj)
	mdFields := map[string]any{}
	for _, m := range []string{"annotations", "labels"} {
		if kv, ok := md[m].(map[string]any); ok && len(kv) > 0 {
			f := map[string]any{".": map[string]any{}}
			for k := range kv {
				f["f:"+k] = map[string]any{}
			}
			mdFields["f:"+m] = f
		}
	}
	if len(mdFields) > 0 {
		out["f:metadata"] = mdFields
	}
	if spec, ok := obj["spec"].(map[string]any); ok {
		out["f:spec"] = apfStructFields(spec, "spec")
	}
	return out
}

func apfStructFields(m map[string]any, path string) map[string]any {
	out := map[string]any{}
	if slices.Contains(apfPointerStructs, path) {
		out["."] = map[string]any{}
	}
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			out["f:"+k] = apfStructFields(sub, path+"."+k)
			continue
		}
		out["f:"+k] = map[string]any{}
	}
	return out
}

// apfDanglingFields is the consumer's fieldsV1 for applying a FlowSchema's
// Dangling condition.
var apfDanglingFields = map[string]any{"f:status": map[string]any{"f:conditions": map[string]any{
	`k:{"type":"` + string(flowcontrolv1.FlowSchemaConditionDangling) + `"}`: map[string]any{
		".": map[string]any{}, "f:lastTransitionTime": map[string]any{}, "f:message": map[string]any{},
		"f:reason": map[string]any{}, "f:status": map[string]any{}, "f:type": map[string]any{},
	},
}}}

// apfEntry is a managedFields entry of the APF configuration's writes.
func apfEntry(manager, operation, subresource string, fields map[string]any, now time.Time) map[string]any {
	e := map[string]any{
		"apiVersion": flowcontrolv1.SchemeGroupVersion.String(),
		"fieldsType": "FieldsV1",
		"fieldsV1":   fields,
		"manager":    manager,
		"operation":  operation,
		"time":       now.UTC().Format(time.RFC3339),
	}
	if subresource != "" {
		e["subresource"] = subresource
	}
	return e
}
