package request

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/api/validate/content"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ErrNoResource is returned (wrapped) by Parse for a path that names a verb
// in the path (/api/v1/watch) but no resource after it. Upstream fails such
// requests before routing; callers answer 404.
var ErrNoResource = errors.New("unable to determine kind and namespace from url")

// namespaceSubresources are the path segments that, after
// /namespaces/<name>/, address the namespace object itself rather than a
// namespaced resource of that name. Upstream keeps the same list; a
// namespaced resource called "status" or "finalize" cannot be served.
func isNamespaceSubresource(s string) bool { return s == "status" || s == "finalize" }

// pathVerb reports whether a segment after the version is a verb spelled in
// the path (the deprecated /watch/ and /proxy/ forms).
func pathVerb(s string) bool { return s == "watch" || s == "proxy" }

// Parse classifies a request by its method, URL path and query, following
// upstream's RequestInfoFactory rules with the prefixes "api" (no group) and
// "apis". It is pure: it looks nothing up, so /apis/<group>/<version>/<x>
// is a resource request whether or not <x> exists.
//
// Resource paths:
//
//	/api/<v>/<resource>[/<name>[/<subresource>]]
//	/api/<v>/namespaces/<ns>/<resource>[/<name>[/<subresource>]]
//	/apis/<g>/<v>/... the same
//	/api/<v>/watch/... and /apis/<g>/<v>/watch/... (verb "watch")
//
// /api/v1/namespaces/<name>[/status|/finalize] address the namespace object:
// Resource "namespaces", Name <name>, and — as upstream, so that authorizers
// see the namespace — Namespace <name> too.
//
// Everything else (/healthz, /version, /openapi/v3, /api, /api/v1, /apis,
// /apis/<g>, /apis/<g>/<v>) is a non-resource request whose Verb is the
// lower-case method. On error the returned Info holds what was known.
func Parse(method, path string, query url.Values) (*Info, error) {
	info := &Info{Path: path, Verb: strings.ToLower(method)}

	parts := splitPath(path)
	if len(parts) < 3 || (parts[0] != "api" && parts[0] != "apis") {
		return info, nil
	}
	info.APIPrefix = parts[0]
	parts = parts[1:]
	if info.APIPrefix == "apis" {
		// /apis/<group>/<version> is discovery; a resource needs a fourth part.
		if len(parts) < 3 {
			return info, nil
		}
		info.APIGroup = parts[0]
		parts = parts[1:]
	}
	info.IsResourceRequest = true
	info.APIVersion = parts[0]
	parts = parts[1:]

	viaPath := pathVerb(parts[0])
	if viaPath {
		if len(parts) < 2 {
			return info, fmt.Errorf("%w, %s", ErrNoResource, path)
		}
		info.Verb = parts[0]
		parts = parts[1:]
	} else {
		info.Verb = methodVerb(method)
	}

	if parts[0] == "namespaces" && len(parts) > 1 {
		info.Namespace = parts[1]
		if len(parts) > 2 && !isNamespaceSubresource(parts[2]) {
			parts = parts[2:]
		}
	}
	info.Parts = parts

	// resource/name/subresource/anything-else-is-not-interpreted
	if len(parts) >= 3 && info.Verb != "proxy" {
		info.Subresource = parts[2]
	}
	if len(parts) >= 2 {
		info.Name = parts[1]
	}
	info.Resource = parts[0]

	if info.Name == "" && info.Verb == "get" {
		watch, name := listOptions(query)
		info.Verb = "list"
		if watch {
			info.Verb = "watch"
		}
		info.Name = name
	}
	if info.Name == "" && info.Verb == "delete" {
		info.Verb = "deletecollection"
	}

	if !viaPath && (info.Verb == "list" || info.Verb == "watch" || info.Verb == "deletecollection") {
		if v := query["fieldSelector"]; len(v) > 0 {
			info.FieldSelector = v[0]
		}
		if v := query["labelSelector"]; len(v) > 0 {
			info.LabelSelector = v[0]
		}
	}
	return info, nil
}

func methodVerb(method string) string {
	switch method {
	case http.MethodPost:
		return "create"
	case http.MethodGet, http.MethodHead:
		return "get"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	}
	return ""
}

// listOptions reads what a collection GET's query says about its verb and
// target: whether it is a watch, and the name a fieldSelector of
// metadata.name=<x> pins it to. As upstream, the whole query is decoded as
// ListOptions; when any option fails to decode, only watch is honoured and
// no name is taken.
func listOptions(query url.Values) (watch bool, name string) {
	var opts metainternalversion.ListOptions
	if err := metainternalversionscheme.ParameterCodec.DecodeParameters(query, metav1.SchemeGroupVersion, &opts); err != nil {
		return QueryBool(query, "watch"), ""
	}
	if opts.FieldSelector != nil {
		if n, ok := opts.FieldSelector.RequiresExactMatch("metadata.name"); ok && len(content.IsPathSegmentName(n)) == 0 {
			name = n
		}
	}
	return opts.Watch, name
}

func splitPath(path string) []string {
	path = strings.Trim(path, "/")
	if path == "" {
		return nil
	}
	return strings.Split(path, "/")
}

// QueryBool reads a boolean query parameter as upstream's parameter codec
// does: absent is false, and so are "0" and "false" (in any case); any
// other value, the empty one too, is true.
func QueryBool(q url.Values, name string) bool {
	v := q[name]
	return len(v) > 0 && v[0] != "0" && !strings.EqualFold(v[0], "false")
}
