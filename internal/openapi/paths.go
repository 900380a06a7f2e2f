package openapi

import (
	"slices"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/registry"
)

// param is one request parameter. Every query parameter is a string,
// integer or boolean.
type param struct {
	name, in, typ, description string
	required                   bool
}

// The query parameters of each kind of operation, named as the metav1
// option types serialize them.
var (
	paramPretty = param{name: "pretty", in: "query", typ: "string",
		description: "If 'true', the output is pretty printed. By default it is only for clients that look like a browser or a command-line HTTP tool."}
	paramDryRun = param{name: "dryRun", in: "query", typ: "string",
		description: "When present, the request is fully processed (validation, admission) but nothing is persisted. The only valid value is All."}
	paramFieldManager = param{name: "fieldManager", in: "query", typ: "string",
		description: "A name for the actor making the change, recorded in managedFields to track which fields it owns. At most 128 printable characters; required for apply patches."}
	paramFieldValidation = param{name: "fieldValidation", in: "query", typ: "string",
		description: "What the server does with fields of the body that the schema does not know, or that appear twice: Ignore drops them silently, Warn (the default) drops them and returns a warning for each, Strict rejects the request."}
	paramForce = param{name: "force", in: "query", typ: "boolean",
		description: "Apply patches only: take over fields owned by other managers instead of failing with a conflict. Must be unset for other patch types."}

	paramResourceVersionGet = param{name: "resourceVersion", in: "query", typ: "string",
		description: "Which version of the object may be returned: unset for the latest, \"0\" for any (possibly cached) version."}

	listParams = []param{
		{name: "allowWatchBookmarks", in: "query", typ: "boolean",
			description: "Watch only: ask for BOOKMARK events, which carry nothing but the latest resourceVersion. The server may send them at any time, or not at all."},
		{name: "continue", in: "query", typ: "string",
			description: "The token from the metadata.continue field of the previous page, to read the next page of a limited list. It expires with the resourceVersion it was issued for."},
		{name: "fieldSelector", in: "query", typ: "string",
			description: "Restrict the result to objects whose fields match, for example metadata.name=foo. Everything by default."},
		{name: "labelSelector", in: "query", typ: "string",
			description: "Restrict the result to objects whose labels match. Everything by default."},
		{name: "limit", in: "query", typ: "integer",
			description: "The largest number of items to return. When more exist, metadata.continue is set to fetch the rest."},
		{name: "resourceVersion", in: "query", typ: "string",
			description: "Which version of the collection may be returned (or, for a watch, where to start): unset for the latest, \"0\" for any, or a specific version subject to resourceVersionMatch."},
		{name: "resourceVersionMatch", in: "query", typ: "string",
			description: "How resourceVersion applies to a list: NotOlderThan or Exact. Only with resourceVersion set."},
		{name: "sendInitialEvents", in: "query", typ: "boolean",
			description: "Watch only: start with synthetic ADDED events for the current state, followed by a bookmark annotated with k8s.io/initial-events-end. Requires resourceVersionMatch=NotOlderThan and allowWatchBookmarks."},
		{name: "timeoutSeconds", in: "query", typ: "integer",
			description: "How long the list or watch call may last, whether or not there is activity."},
		{name: "watch", in: "query", typ: "boolean",
			description: "Stream changes (added, modified, deleted) instead of returning a list. Use resourceVersion to choose where the stream starts."},
	}
	deleteParams = []param{
		paramDryRun,
		{name: "gracePeriodSeconds", in: "query", typ: "integer",
			description: "Seconds before the object is deleted; zero means immediately. Unset uses the resource's default."},
		{name: "ignoreStoreReadErrorWithClusterBreakingPotential", in: "query", typ: "boolean",
			description: "Delete an object that cannot be read from storage, bypassing finalizers and admission. Dangerous; requires extra permission."},
		{name: "orphanDependents", in: "query", typ: "boolean",
			description: "Deprecated: use propagationPolicy. When true, dependents are orphaned rather than garbage collected."},
		{name: "propagationPolicy", in: "query", typ: "string",
			description: "How dependents are handled: Orphan, Background (the default for most resources) or Foreground."},
	}
	createParams = []param{paramDryRun, paramFieldManager, paramFieldValidation}
	patchParams  = []param{paramDryRun, paramFieldManager, paramFieldValidation, paramForce}
)

// response is one response of an operation; model is empty for none.
type response struct {
	code, description, model string
}

// operation is one HTTP method on a path, rendered to v3 and v2 alike.
type operation struct {
	method       string // get, put, post, patch, delete
	action       string // x-kubernetes-action
	id           string
	description  string
	params       []param
	body         string // model of the request body, "" for none
	bodyOptional bool
	consumes     []string
	responses    []response
	gvk          schema.GroupVersionKind
}

// pathItem is one path with its operations.
type pathItem struct {
	path   string
	params []param // path-level: namespace, name, pretty
	ops    []operation
}

var (
	bodyTypes  = []string{"application/json", "application/yaml"}
	patchTypes = []string{"application/apply-patch+yaml", "application/json-patch+json", "application/merge-patch+json"}
	strategic  = "application/strategic-merge-patch+json"
)

// resourcePaths returns the paths a served resource version contributes, as
// upstream lays them out for CRDs: the cross-namespace list for namespaced
// resources, the collection, the object, and its subresources. Operations
// whose verb the definition does not serve are left out.
func resourcePaths(def *registry.Definition, v *registry.Version, gvk schema.GroupVersionKind, model, listModel string) []pathItem {
	serves := func(verb string) bool { return def.Verbs == nil || slices.Contains(def.Verbs, verb) }
	prefix := "/apis/" + gvk.Group + "/" + gvk.Version
	if gvk.Group == "" {
		prefix = "/api/" + gvk.Version
	}
	idPrefix := upperFirst(groupIdentifier(gvk.Group)) + upperFirst(gvk.Version)
	namespaced := ""
	if def.Namespaced() {
		namespaced = "Namespaced"
	}
	kind := def.Kind
	nameParam := param{name: "name", in: "path", typ: "string", required: true, description: "name of the " + kind}
	nsParam := param{name: "namespace", in: "path", typ: "string", required: true,
		description: "object name and auth scope, such as for teams and projects"}

	var items []pathItem
	root := prefix + "/" + def.Resource
	rootParams := []param{paramPretty}
	if def.Namespaced() {
		if serves("list") {
			items = append(items, pathItem{path: root, params: []param{paramPretty}, ops: []operation{{
				method: "get", action: "list", id: "list" + idPrefix + kind + "ForAllNamespaces",
				description: "list or watch objects of kind " + kind, params: listParams,
				responses: []response{{"200", "OK", listModel}}, gvk: gvk,
			}}})
		}
		root = prefix + "/namespaces/{namespace}/" + def.Resource
		rootParams = []param{nsParam, paramPretty}
	}

	collection := pathItem{path: root, params: rootParams}
	if serves("list") {
		collection.ops = append(collection.ops, operation{
			method: "get", action: "list", id: "list" + idPrefix + namespaced + kind,
			description: "list or watch objects of kind " + kind, params: listParams,
			responses: []response{{"200", "OK", listModel}}, gvk: gvk,
		})
	}
	if serves("create") {
		collection.ops = append(collection.ops, operation{
			method: "post", action: "post", id: "create" + idPrefix + namespaced + kind,
			description: "create " + article(kind) + kind, params: createParams,
			body: model, consumes: bodyTypes,
			responses: []response{{"200", "OK", model}, {"201", "Created", model}, {"202", "Accepted", model}}, gvk: gvk,
		})
	}
	if serves("deletecollection") {
		collection.ops = append(collection.ops, operation{
			method: "delete", action: "deletecollection", id: "delete" + idPrefix + "Collection" + namespaced + kind,
			description: "delete collection of " + kind, params: append(slices.Clone(deleteParams), listParams...),
			body: deleteOptionsModel, bodyOptional: true, consumes: bodyTypes,
			responses: []response{{"200", "OK", statusModel}}, gvk: gvk,
		})
	}
	if len(collection.ops) > 0 {
		items = append(items, collection)
	}

	patchConsumes := patchTypes
	if isStrategic(def) {
		patchConsumes = append(slices.Clone(patchTypes), strategic)
	}
	objParams := append(slices.Clone(rootParams[:len(rootParams)-1]), nameParam, paramPretty)
	object := pathItem{path: root + "/{name}", params: objParams}
	if serves("get") {
		object.ops = append(object.ops, operation{
			method: "get", action: "get", id: "read" + idPrefix + namespaced + kind,
			description: "read the specified " + kind, params: []param{paramResourceVersionGet},
			responses: []response{{"200", "OK", model}}, gvk: gvk,
		})
	}
	if serves("update") {
		object.ops = append(object.ops, operation{
			method: "put", action: "put", id: "replace" + idPrefix + namespaced + kind,
			description: "replace the specified " + kind, params: createParams,
			body: model, consumes: bodyTypes,
			responses: []response{{"200", "OK", model}, {"201", "Created", model}}, gvk: gvk,
		})
	}
	if serves("delete") {
		object.ops = append(object.ops, operation{
			method: "delete", action: "delete", id: "delete" + idPrefix + namespaced + kind,
			description: "delete " + article(kind) + kind, params: deleteParams,
			body: deleteOptionsModel, bodyOptional: true, consumes: bodyTypes,
			responses: []response{{"200", "OK", statusModel}, {"202", "Accepted", statusModel}}, gvk: gvk,
		})
	}
	if serves("patch") {
		object.ops = append(object.ops, operation{
			method: "patch", action: "patch", id: "patch" + idPrefix + namespaced + kind,
			description: "partially update the specified " + kind, params: patchParams,
			body: patchModel, consumes: patchConsumes,
			responses: []response{{"200", "OK", model}, {"201", "Created", model}}, gvk: gvk,
		})
	}
	if len(object.ops) > 0 {
		items = append(items, object)
	}

	// Subresources read and write the object (status, and a built-in's
	// others) or autoscaling/v1 Scale. Like upstream's CRD documents, their
	// operations carry the resource's kind.
	subresource := func(name, subModel string, verbs []string) pathItem {
		title := upperFirst(name)
		p := pathItem{path: root + "/{name}/" + name, params: objParams}
		if slices.Contains(verbs, "get") {
			p.ops = append(p.ops, operation{
				method: "get", action: "get", id: "read" + idPrefix + namespaced + kind + title,
				description: "read " + name + " of the specified " + kind,
				responses:   []response{{"200", "OK", subModel}}, gvk: gvk,
			})
		}
		if slices.Contains(verbs, "update") {
			p.ops = append(p.ops, operation{
				method: "put", action: "put", id: "replace" + idPrefix + namespaced + kind + title,
				description: "replace " + name + " of the specified " + kind, params: createParams,
				body: subModel, consumes: bodyTypes,
				responses: []response{{"200", "OK", subModel}, {"201", "Created", subModel}}, gvk: gvk,
			})
		}
		if slices.Contains(verbs, "patch") {
			p.ops = append(p.ops, operation{
				method: "patch", action: "patch", id: "patch" + idPrefix + namespaced + kind + title,
				description: "partially update " + name + " of the specified " + kind, params: patchParams,
				body: patchModel, consumes: patchConsumes,
				responses: []response{{"200", "OK", subModel}, {"201", "Created", subModel}}, gvk: gvk,
			})
		}
		return p
	}
	subVerbs := []string{"get", "update", "patch"}
	if v.Subresources.Status {
		items = append(items, subresource("status", model, subVerbs))
	}
	if v.Subresources.Scale != nil {
		items = append(items, subresource("scale", scaleModel, subVerbs))
	}
	for _, o := range v.Subresources.Other {
		if p := subresource(o.Name, model, o.Verbs); len(p.ops) > 0 {
			items = append(items, p)
		}
	}
	return items
}

// isStrategic reports whether a definition accepts strategic merge patches
// (a built-in with a Go type).
func isStrategic(def *registry.Definition) bool {
	_, ok := def.Hooks.(registry.StrategicMerger)
	return ok
}

// groupIdentifier turns a group into the camel-case word operation IDs
// start with: "" → "core", "stable.example.com" → "stableExampleCom".
func groupIdentifier(group string) string {
	if group == "" {
		return "core"
	}
	var b strings.Builder
	upper := false
	for i, r := range group {
		if r == '.' || r == '-' {
			upper = true
			continue
		}
		if upper && i > 0 {
			r = unicode.ToUpper(r)
		}
		upper = false
		b.WriteRune(r)
	}
	return b.String()
}

// tag is the operation tag upstream groups operations by: "core_v1",
// "stableExampleCom_v1".
func tag(gv schema.GroupVersion) string {
	return groupIdentifier(gv.Group) + "_" + gv.Version
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	r := []rune(s)
	r[0] = unicode.ToUpper(r[0])
	return string(r)
}

// article is "an " before a vowel and "a " otherwise, for descriptions.
func article(noun string) string {
	if noun != "" && strings.ContainsRune("AEIOUaeiou", rune(noun[0])) {
		return "an "
	}
	return "a "
}
