package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// An "openapi" line compares the models of an OpenAPI document, a v3
// group version's components.schemas or the v2 document's definitions,
// each model whole. The documents' paths are not compared, but they say
// which models are: a document's models are those its paths refer to,
// transitively, and a model that only paths crdserver's documents leave
// out refer to is taken out of the document before it is compared. They
// are
//   - in kube-apiserver's, the paths of what crdserver does not serve
//     (unservedResources and unservedGroups in discovery.go; none now),
//     and the models only they use;
//   - in both, the paths that are not a resource's: the discovery
//     documents' (/apis/<group>/<version>/ and the like), /version/,
//     /logs/ and the service account issuer's, and the deprecated watch
//     paths (/watch/...). crdserver serves the discovery documents and the
//     watch paths but does not list them in its OpenAPI documents, so
//     their models (APIResourceList, APIResource, WatchEvent,
//     RawExtension, APIGroup, ...) are not compared;
//   - in crdserver's, the paths of the group versions it serves beyond
//     upstream (beyondUpstream in discovery.go), which the v2 document
//     holds.
// A model no path refers to stays: one document's orphan is a difference.

// comparableOpenAPI is doc, a decoded OpenAPI document from server,
// reduced to its models without those only left-out paths refer to.
func comparableOpenAPI(server string, doc any) any {
	d, ok := doc.(map[string]any)
	if !ok {
		return doc
	}
	// v2 keeps models in definitions, and parameters that operations
	// share (a delete's DeleteOptions body) in parameters; v3 in
	// components.
	models, _ := d["definitions"].(map[string]any)
	params, _ := d["parameters"].(map[string]any)
	if c, ok := d["components"].(map[string]any); ok {
		models, _ = c["schemas"].(map[string]any)
		params, _ = c["parameters"].(map[string]any)
	}
	paths, _ := d["paths"].(map[string]any)
	var kept, left []any
	for p, item := range paths {
		if leftOut(server, p) {
			left = append(left, item)
		} else {
			kept = append(kept, item)
		}
	}
	keep := reachable(models, params, kept)
	for name := range reachable(models, params, left) {
		if !keep[name] {
			delete(models, name)
		}
	}
	return models
}

// leftOut reports whether path, a path of server's OpenAPI document, is
// one whose models are not compared.
func leftOut(server, path string) bool {
	gv, rest, ok := splitPath(path)
	if !ok || rest == "" || strings.HasPrefix(rest, "watch/") {
		return true
	}
	// rest is <resource>[/{name}[/<subresource>]], after
	// namespaces/{namespace}/ for a namespaced resource.
	segs := strings.Split(strings.TrimPrefix(rest, "namespaces/{namespace}/"), "/")
	name := segs[0]
	if len(segs) > 2 && segs[1] == "{name}" {
		name += "/" + segs[2]
	}
	if slices.Contains(unlistedPaths[gv], name) {
		return true
	}
	if server != "kube-apiserver" {
		return slices.Contains(beyondUpstream, gv)
	}
	group, _, found := strings.Cut(gv, "/")
	if !found {
		group = ""
	}
	return slices.Contains(unservedGroups, group) || unserved(gv, name)
}

// unlistedPaths are the paths, by group/version, that crdserver serves
// and its OpenAPI documents do not describe as upstream's do: the pods'
// connect subresources (upstream describes each verb's query options),
// binding and eviction, and the legacy bindings. Both servers' are left
// out, and the models only they refer to.
var unlistedPaths = map[string][]string{
	"v1": {"bindings", "pods/attach", "pods/binding", "pods/eviction", "pods/exec", "pods/log", "pods/portforward", "pods/proxy"},
}

// splitPath splits a path below a group version, /api/v1/<rest> or
// /apis/<group>/<version>/<rest>, into the group version, as discovery.go
// writes it ("v1", "apps/v1"), and the rest.
func splitPath(path string) (gv, rest string, ok bool) {
	switch {
	case strings.HasPrefix(path, "/api/"):
		return strings.Cut(strings.TrimPrefix(path, "/api/"), "/")
	case strings.HasPrefix(path, "/apis/"):
		parts := strings.SplitN(strings.TrimPrefix(path, "/apis/"), "/", 3)
		if len(parts) == 3 {
			return parts[0] + "/" + parts[1], parts[2], true
		}
	}
	return "", "", false
}

// reachable returns the names of the models that roots refer to, and
// those they refer to, transitively, through shared parameters too.
func reachable(models, params map[string]any, roots []any) map[string]bool {
	seen := map[string]bool{}    // models, by name
	visited := map[string]bool{} // references
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				ref, ok := c.(string)
				if !ok || k != "$ref" {
					walk(c)
					continue
				}
				if visited[ref] {
					continue
				}
				visited[ref] = true
				name := ref[strings.LastIndex(ref, "/")+1:]
				if strings.Contains(ref, "/parameters/") {
					walk(params[name])
				} else if m, ok := models[name]; ok {
					seen[name] = true
					walk(m)
				}
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(roots)
	return seen
}

// modelsDiff describes how two answers of an "openapi" line differ, model
// by model: the models one document has and the other lacks, and for each
// model both have, the first places where they differ.
func modelsDiff(crdserver, upstream string) string {
	var a, b map[string]any
	json.Unmarshal([]byte(strings.TrimPrefix(crdserver, "object ")), &a)
	json.Unmarshal([]byte(strings.TrimPrefix(upstream, "object ")), &b)
	var out strings.Builder
	for _, n := range unionKeys(a, b) {
		x, inA := a[n]
		y, inB := b[n]
		switch {
		case !inB:
			fmt.Fprintf(&out, "  %s: crdserver's alone\n", n)
		case !inA:
			fmt.Fprintf(&out, "  %s: kube-apiserver's alone\n", n)
		case !reflect.DeepEqual(x, y):
			var places []string
			differences(x, y, n, &places)
			for i, p := range places {
				if i == 3 {
					fmt.Fprintf(&out, "  %s: and %d more\n", n, len(places)-3)
					break
				}
				fmt.Fprintf(&out, "  %s\n", p)
			}
		}
	}
	return out.String()
}

// differences appends to places where a and b, decoded JSON, differ below
// path, with their values.
func differences(a, b any, path string, places *[]string) {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		for _, k := range unionKeys(am, bm) {
			differences(am[k], bm[k], path+"/"+k, places)
		}
		return
	}
	if !reflect.DeepEqual(a, b) {
		*places = append(*places, fmt.Sprintf("%s:\n      crdserver:      %s\n      kube-apiserver: %s", path, shortJSON(a), shortJSON(b)))
	}
}

// unionKeys returns the keys of a and b, sorted.
func unionKeys(a, b map[string]any) []string {
	keys := slices.Collect(maps.Keys(a))
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

func shortJSON(v any) string {
	if v == nil {
		return "(none)"
	}
	b, _ := json.Marshal(v)
	if len(b) > 200 {
		return string(b[:200]) + "..."
	}
	return string(b)
}
