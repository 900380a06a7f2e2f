package openapi

import (
	"encoding/json"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// referenceGV is how a group version's documents were built before they
// were spliced from per-resource pieces: one map holding everything,
// encoded at once. The spliced documents must equal its output byte for
// byte, so it stays here as the oracle.
func referenceGV(gv schema.GroupVersion, entries []entry) (v3 []byte, v2Paths, v2Defs map[string]any, err error) {
	paths := map[string]any{}
	v2Paths = map[string]any{}
	local := map[string]map[string]any{}
	objects := map[string]entry{} // the custom resources' object models
	l := lib()
	for _, e := range entries {
		gvk := gv.WithKind(e.def.Kind)
		obj, err := objectSchema(e.version, gvk)
		if err != nil {
			continue
		}
		model := modelName(gvk)
		listGVK := gv.WithKind(e.def.ListKind)
		listModel := modelName(listGVK)
		if _, ok := l.models[model]; !ok {
			local[model] = obj
			objects[model] = e
		}
		if _, ok := l.models[listModel]; !ok && serves(e.def, "list") {
			local[listModel] = listSchema(e.def, e.version, listGVK, model)
		}
		for _, p := range resourcePaths(e.def, e.version, gvk, model, listModel) {
			paths[p.path] = p.v3(gv)
			v2Paths[p.path] = p.v2(gv)
		}
	}
	schemas := map[string]any{}
	v2Defs = map[string]any{}
	queue := collectRefs(paths, nil)
	for name := range local {
		queue = append(queue, name)
	}
	for len(queue) > 0 {
		name := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		if _, done := schemas[name]; done {
			continue
		}
		if s, ok := local[name]; ok {
			schemas[name] = s
			if e, ok := objects[name]; ok {
				if v2Defs[name], err = objectSchemaV2(e.version, gv.WithKind(e.def.Kind)); err != nil {
					return nil, nil, nil, err
				}
			} else {
				v2Defs[name] = toV2(s)
			}
			queue = collectRefs(s, queue)
			continue
		}
		if raw, ok := l.v3[name]; ok {
			schemas[name] = raw
			v2Defs[name] = l.v2[name]
			queue = append(queue, l.refs[name]...)
		}
	}
	if _, ok := schemas[deleteOptionsModel]; ok {
		builtin := slices.ContainsFunc(entries, func(e entry) bool { return !e.def.Custom() })
		schemas[deleteOptionsModel] = deleteOptionsV3(gv, builtin)
	}
	doc := map[string]any{
		"openapi": "3.0.0",
		"info":    map[string]any{"title": "Kubernetes", "version": "unversioned"},
		"paths":   paths,
		"components": map[string]any{
			"schemas":         schemas,
			"securitySchemes": bearerScheme(),
		},
	}
	v3, err = json.Marshal(doc)
	return v3, v2Paths, v2Defs, err
}

// referenceV2 merges the group versions' v2 maps (by gvKey) as
// /openapi/v2 was merged before: later keys win.
func referenceV2(gvs map[string][2]map[string]any) ([]byte, error) {
	paths := map[string]any{}
	defs := map[string]any{}
	keys := make([]string, 0, len(gvs))
	for k := range gvs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		for p, item := range gvs[k][0] {
			paths[p] = item
		}
		for name, def := range gvs[k][1] {
			defs[name] = def
		}
	}
	return json.Marshal(map[string]any{
		"swagger":             "2.0",
		"info":                map[string]any{"title": "Kubernetes", "version": "unversioned"},
		"paths":               paths,
		"definitions":         defs,
		"securityDefinitions": bearerScheme(),
		"security":            []any{map[string]any{"BearerToken": []any{}}},
	})
}
