package openapi

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"unicode"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/registry"
)

// param is one request parameter. Every query parameter is a string,
// integer, number or boolean.
type param struct {
	name, in, typ, description string
	required                   bool
}

// paramPretty is on every operation. Its text, like the name and namespace
// path parameters', is a literal in upstream's builders, not in any type's
// documentation, so the wording here is our own.
var paramPretty = param{name: "pretty", in: "query", typ: "string",
	description: "If 'true', the output is pretty printed. By default it is only for clients that look like a browser or a command-line HTTP tool."}

// The query parameters of each kind of operation, made from the metav1
// option types the way upstream makes them, sorted as upstream publishes
// them. Their descriptions are the types' SwaggerDoc, so they follow the
// apimachinery version.
var (
	getParams    = optionParams(metav1.GetOptions{})
	listParams   = optionParams(metav1.ListOptions{})
	createParams = optionParams(metav1.CreateOptions{})
	updateParams = optionParams(metav1.UpdateOptions{})
	patchParams  = optionParams(metav1.PatchOptions{})
	deleteParams = optionParams(metav1.DeleteOptions{})
	// A built-in's deletecollection takes DeleteOptions and ListOptions
	// without watch and allowWatchBookmarks (kube-apiserver's installer); a
	// custom resource's only ListOptions, all of them (the CRD builder).
	builtinDeleteCollectionParams = sortParams(append(slices.Clone(deleteParams),
		optionParams(metav1.ListOptions{}, "watch", "allowWatchBookmarks")...))
)

// optionParams returns the query parameters an options type stands for:
// one per top-level field with a JSON name whose type is a scalar or a
// slice of scalars (TypeMeta and Preconditions are left out), described by
// the type's SwaggerDoc entry for that name, minus the excluded names,
// sorted by name. It panics on a field type it cannot map, which the
// package's tests would meet first.
func optionParams(opts interface{ SwaggerDoc() map[string]string }, exclude ...string) []param {
	docs := opts.SwaggerDoc()
	t := reflect.TypeOf(opts)
	var out []param
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || slices.Contains(exclude, name) {
			continue
		}
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Slice {
			ft = ft.Elem()
		}
		var typ string
		switch ft.Kind() {
		case reflect.Struct, reflect.Interface:
			continue
		case reflect.Bool:
			typ = "boolean"
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			typ = "integer"
		case reflect.Float32, reflect.Float64:
			typ = "number"
		case reflect.String:
			typ = "string"
		default:
			panic(fmt.Sprintf("openapi: %s.%s: no query parameter type for %s", t.Name(), f.Name, f.Type))
		}
		out = append(out, param{name: name, in: "query", typ: typ, description: docs[name]})
	}
	return sortParams(out)
}

// sortParams sorts parameters by name, then location, as kube-openapi's
// builders order them.
func sortParams(ps []param) []param {
	slices.SortFunc(ps, compareParams)
	return ps
}

func compareParams(a, b param) int {
	if c := strings.Compare(a.name, b.name); c != 0 {
		return c
	}
	return strings.Compare(a.in, b.in)
}

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
	params []param // those every operation takes, listed once
	ops    []operation
}

// newPathItem is the path with its operations, each of which takes the
// base parameters (pretty and the path's own) besides those set on it.
// Like kube-openapi's builders, it lists the parameters every operation
// takes (by name and location, with the last operation's description) on
// the path item instead of on the operations, and sorts both lists. So a
// path with one operation has all of its parameters on the path item.
func newPathItem(path string, base []param, ops []operation) pathItem {
	if len(ops) == 0 {
		return pathItem{path: path}
	}
	all := make([][]param, len(ops))
	for i, op := range ops {
		all[i] = sortParams(append(slices.Clone(base), op.params...))
	}
	type key struct{ name, in string }
	has := func(ps []param, k key) bool {
		return slices.ContainsFunc(ps, func(p param) bool { return p.name == k.name && p.in == k.in })
	}
	var shared []param
	isShared := map[key]bool{}
	for _, p := range all[len(all)-1] {
		k := key{p.name, p.in}
		if !slices.ContainsFunc(all, func(ps []param) bool { return !has(ps, k) }) {
			shared = append(shared, p)
			isShared[k] = true
		}
	}
	for i := range ops {
		ops[i].params = slices.DeleteFunc(all[i], func(p param) bool { return isShared[key{p.name, p.in}] })
	}
	return pathItem{path: path, params: shared, ops: ops}
}

var (
	bodyTypes  = []string{"application/json", "application/yaml"}
	patchTypes = []string{"application/apply-patch+yaml", "application/json-patch+json", "application/merge-patch+json"}
	strategic  = "application/strategic-merge-patch+json"
)

// resourcePaths returns the paths a served resource version contributes, as
// upstream lays them out for CRDs: the cross-namespace list for namespaced
// resources, the collection, the object, and its subresources. Operations
// whose verb the definition does not serve are left out. Parameters are as
// upstream's CRD builder has them; a built-in's deletecollection takes
// those of kube-apiserver's installer.
func resourcePaths(def *registry.Definition, v *registry.Version, gvk schema.GroupVersionKind, model, listModel string) []pathItem {
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
		if serves(def, "list") {
			items = append(items, newPathItem(root, rootParams, []operation{{
				method: "get", action: "list", id: "list" + idPrefix + kind + "ForAllNamespaces",
				description: "list or watch objects of kind " + kind, params: listParams,
				responses: []response{{"200", "OK", listModel}}, gvk: gvk,
			}}))
		}
		root = prefix + "/namespaces/{namespace}/" + def.Resource
		rootParams = []param{nsParam, paramPretty}
	}

	var collection []operation
	if serves(def, "list") {
		collection = append(collection, operation{
			method: "get", action: "list", id: "list" + idPrefix + namespaced + kind,
			description: "list or watch objects of kind " + kind, params: listParams,
			responses: []response{{"200", "OK", listModel}}, gvk: gvk,
		})
	}
	if serves(def, "create") {
		collection = append(collection, operation{
			method: "post", action: "post", id: "create" + idPrefix + namespaced + kind,
			description: "create " + article(kind) + kind, params: createParams,
			body: model, consumes: bodyTypes,
			responses: []response{{"200", "OK", model}, {"201", "Created", model}, {"202", "Accepted", model}}, gvk: gvk,
		})
	}
	if serves(def, "deletecollection") {
		op := operation{
			method: "delete", action: "deletecollection", id: "delete" + idPrefix + "Collection" + namespaced + kind,
			description: "delete collection of " + kind, params: listParams, consumes: bodyTypes,
			responses: []response{{"200", "OK", statusModel}}, gvk: gvk,
		}
		if isStrategic(def) {
			op.params, op.body, op.bodyOptional = builtinDeleteCollectionParams, deleteOptionsModel, true
		}
		collection = append(collection, op)
	}
	if len(collection) > 0 {
		items = append(items, newPathItem(root, rootParams, collection))
	}

	patchConsumes := patchTypes
	if isStrategic(def) {
		patchConsumes = append(slices.Clone(patchTypes), strategic)
	}
	objParams := append(slices.Clone(rootParams), nameParam)
	var object []operation
	if serves(def, "get") {
		object = append(object, operation{
			method: "get", action: "get", id: "read" + idPrefix + namespaced + kind,
			description: "read the specified " + kind, params: getParams,
			responses: []response{{"200", "OK", model}}, gvk: gvk,
		})
	}
	if serves(def, "update") {
		object = append(object, operation{
			method: "put", action: "put", id: "replace" + idPrefix + namespaced + kind,
			description: "replace the specified " + kind, params: updateParams,
			body: model, consumes: bodyTypes,
			responses: []response{{"200", "OK", model}, {"201", "Created", model}}, gvk: gvk,
		})
	}
	if serves(def, "delete") {
		object = append(object, operation{
			method: "delete", action: "delete", id: "delete" + idPrefix + namespaced + kind,
			description: "delete " + article(kind) + kind, params: deleteParams,
			body: deleteOptionsModel, bodyOptional: true, consumes: bodyTypes,
			responses: []response{{"200", "OK", statusModel}, {"202", "Accepted", statusModel}}, gvk: gvk,
		})
	}
	if serves(def, "patch") {
		object = append(object, operation{
			method: "patch", action: "patch", id: "patch" + idPrefix + namespaced + kind,
			description: "partially update the specified " + kind, params: patchParams,
			body: patchModel, consumes: patchConsumes,
			responses: []response{{"200", "OK", model}, {"201", "Created", model}}, gvk: gvk,
		})
	}
	if len(object) > 0 {
		items = append(items, newPathItem(root+"/{name}", objParams, object))
	}

	// Subresources read and write the object (status, and a built-in's
	// others) or autoscaling/v1 Scale. Like upstream's CRD documents, their
	// operations carry the resource's kind, except a create that takes
	// another kind (serviceaccounts/token): subGVK is that kind.
	subGVK := gvk
	subresource := func(name, subModel string, verbs []string) pathItem {
		title := upperFirst(name)
		var ops []operation
		if slices.Contains(verbs, "get") {
			ops = append(ops, operation{
				method: "get", action: "get", id: "read" + idPrefix + namespaced + kind + title,
				description: "read " + name + " of the specified " + kind, params: getParams,
				responses: []response{{"200", "OK", subModel}}, gvk: gvk,
			})
		}
		if slices.Contains(verbs, "update") {
			ops = append(ops, operation{
				method: "put", action: "put", id: "replace" + idPrefix + namespaced + kind + title,
				description: "replace " + name + " of the specified " + kind, params: updateParams,
				body: subModel, consumes: bodyTypes,
				responses: []response{{"200", "OK", subModel}, {"201", "Created", subModel}}, gvk: gvk,
			})
		}
		if slices.Contains(verbs, "patch") {
			ops = append(ops, operation{
				method: "patch", action: "patch", id: "patch" + idPrefix + namespaced + kind + title,
				description: "partially update " + name + " of the specified " + kind, params: patchParams,
				body: patchModel, consumes: patchConsumes,
				responses: []response{{"200", "OK", subModel}, {"201", "Created", subModel}}, gvk: gvk,
			})
		}
		if slices.Contains(verbs, "create") {
			// serviceaccounts/token: a TokenRequest in, a TokenRequest out.
			ops = append(ops, operation{
				method: "post", action: "post", id: "create" + idPrefix + namespaced + kind + title,
				description: "create " + name + " of " + article(kind) + kind, params: createParams,
				body: subModel, consumes: bodyTypes,
				responses: []response{{"200", "OK", subModel}, {"201", "Created", subModel}, {"202", "Accepted", subModel}}, gvk: subGVK,
			})
		}
		return newPathItem(root+"/{name}/"+name, objParams, ops)
	}
	subVerbs := []string{"get", "update", "patch"}
	if v.Subresources.Status {
		items = append(items, subresource("status", model, subVerbs))
	}
	if v.Subresources.Scale != nil {
		items = append(items, subresource("scale", scaleModel, subVerbs))
	}
	for _, o := range v.Subresources.Other {
		if o.Connect {
			continue
		}
		if o.Kind != nil {
			if _, ok := lib().byGVK[*o.Kind]; !ok {
				// A pod's connect subresources take query options
				// that have no model: they are not described.
				continue
			}
		}
		m := model
		subGVK = gvk
		if o.Kind != nil {
			m, subGVK = modelName(*o.Kind), *o.Kind
		}
		if p := subresource(o.Name, m, o.Verbs); len(p.ops) > 0 {
			items = append(items, p)
		}
	}
	return items
}

// isStrategic reports whether a definition accepts strategic merge patches
// (a built-in with a Go type).
// serves reports whether def serves verb; a definition without a list of
// verbs (a custom resource's) serves them all.
func serves(def *registry.Definition, verb string) bool {
	return def.Verbs == nil || slices.Contains(def.Verbs, verb)
}

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
