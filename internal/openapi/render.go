package openapi

import (
	"encoding/json"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Parameters are the bulk of every path and the same few dozen throughout,
// so each is encoded once and reused as raw JSON.
var (
	paramCacheV3 sync.Map // param → json.RawMessage
	paramCacheV2 sync.Map
)

func encodedParam(cache *sync.Map, p param, render func(param) map[string]any) json.RawMessage {
	if v, ok := cache.Load(p); ok {
		return v.(json.RawMessage)
	}
	b, err := json.Marshal(render(p))
	if err != nil {
		panic(err) // strings and booleans always encode
	}
	v, _ := cache.LoadOrStore(p, json.RawMessage(b))
	return v.(json.RawMessage)
}

// Rendering of paths into the two document formats. Parameters are written
// out where they apply, never as references to a shared list (upstream's v2
// builder refers to #/parameters/…): the path item's before the
// operations', which hold the rest. kubectl looks for fieldValidation among
// a PATCH operation's own parameters; it stays there as long as the path
// has an operation without it, as every CRD path with PATCH does (GET).

var produces = []string{"application/json", "application/yaml"}

func (p pathItem) v3(gv schema.GroupVersion) map[string]any {
	item := map[string]any{}
	if len(p.params) > 0 {
		item["parameters"] = paramsV3(p.params)
	}
	for _, op := range p.ops {
		item[op.method] = op.v3(gv)
	}
	return item
}

func paramsV3(ps []param) []any {
	out := make([]any, 0, len(ps))
	for _, p := range ps {
		out = append(out, encodedParam(&paramCacheV3, p, paramV3))
	}
	return out
}

func paramV3(p param) map[string]any {
	m := map[string]any{
		"name":        p.name,
		"in":          p.in,
		"description": p.description,
		"schema":      map[string]any{"type": p.typ, "uniqueItems": true},
	}
	if p.required {
		m["required"] = true
	}
	return m
}

func (op operation) v3(gv schema.GroupVersion) map[string]any {
	m := map[string]any{
		"tags":        []any{tag(gv)},
		"description": op.description,
		"operationId": op.id,
		extAction:     op.action,
		extGVK:        map[string]any{"group": op.gvk.Group, "version": op.gvk.Version, "kind": op.gvk.Kind},
	}
	if len(op.params) > 0 {
		m["parameters"] = paramsV3(op.params)
	}
	if op.body != "" {
		content := map[string]any{}
		for _, ct := range op.consumes {
			content[ct] = map[string]any{"schema": map[string]any{"$ref": v3RefPrefix + op.body}}
		}
		body := map[string]any{"content": content}
		if !op.bodyOptional {
			body["required"] = true
		}
		m["requestBody"] = body
	}
	responses := map[string]any{"401": map[string]any{"description": "Unauthorized"}}
	for _, r := range op.responses {
		content := map[string]any{}
		for _, ct := range produces {
			content[ct] = map[string]any{"schema": map[string]any{"$ref": v3RefPrefix + r.model}}
		}
		responses[r.code] = map[string]any{"description": r.description, "content": content}
	}
	m["responses"] = responses
	return m
}

func (p pathItem) v2(gv schema.GroupVersion) map[string]any {
	item := map[string]any{}
	if len(p.params) > 0 {
		item["parameters"] = paramsV2(p.params)
	}
	for _, op := range p.ops {
		item[op.method] = op.v2(gv)
	}
	return item
}

func paramsV2(ps []param) []any {
	out := make([]any, 0, len(ps))
	for _, p := range ps {
		out = append(out, encodedParam(&paramCacheV2, p, paramV2))
	}
	return out
}

func paramV2(p param) map[string]any {
	m := map[string]any{
		"name":        p.name,
		"in":          p.in,
		"description": p.description,
		"type":        p.typ,
		"uniqueItems": true,
	}
	if p.required {
		m["required"] = true
	}
	return m
}

func (op operation) v2(gv schema.GroupVersion) map[string]any {
	consumes := op.consumes
	if consumes == nil {
		consumes = []string{"*/*"}
	}
	m := map[string]any{
		"tags":        []any{tag(gv)},
		"description": op.description,
		"operationId": op.id,
		"consumes":    toAny(consumes),
		"produces":    toAny(produces),
		"schemes":     []any{"https"},
		extAction:     op.action,
		extGVK:        map[string]any{"group": op.gvk.Group, "version": op.gvk.Version, "kind": op.gvk.Kind},
	}
	params := paramsV2(op.params)
	if op.body != "" {
		// In v2 the body is a parameter, sorted among the others by name
		// and location like the rest.
		body := map[string]any{
			"name":   "body",
			"in":     "body",
			"schema": map[string]any{"$ref": v2RefPrefix + op.body},
		}
		if !op.bodyOptional {
			body["required"] = true
		}
		at, _ := slices.BinarySearchFunc(op.params, param{name: "body", in: "body"}, compareParams)
		params = slices.Insert(params, at, any(body))
	}
	if len(params) > 0 {
		m["parameters"] = params
	}
	responses := map[string]any{"401": map[string]any{"description": "Unauthorized"}}
	for _, r := range op.responses {
		responses[r.code] = map[string]any{
			"description": r.description,
			"schema":      map[string]any{"$ref": v2RefPrefix + r.model},
		}
	}
	m["responses"] = responses
	return m
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
