package metrics

import (
	"net/http"
	"strings"

	"github.com/crdserver/crdserver/internal/request"
)

// verbs are the verbs upstream reports, by request.Info verb. A
// deletecollection is a DELETE to upstream's metrics (only its scope tells
// it from a delete), and anything unknown is "other", so that odd methods
// add no series.
var verbs = map[string]string{
	"get":              "GET",
	"list":             "LIST",
	"watch":            "WATCH",
	"create":           "POST",
	"update":           "PUT",
	"patch":            "PATCH",
	"delete":           "DELETE",
	"deletecollection": "DELETE",
}

// applyPatch is the content type of server-side apply; upstream reports
// those patches as APPLY when the header is exactly this.
const applyPatch = "application/apply-patch+yaml"

// RequestOf returns the labels of a resource request. known says whether
// the request's group, version, resource and subresource are served:
// when not, they are left empty, so that requests for made-up resources
// all fall into one series per verb and code.
func RequestOf(r *http.Request, info *request.Info, known bool) Request {
	verb, ok := verbs[info.Verb]
	switch {
	case !ok:
		verb = "other"
	case verb == "PATCH" && r.Header.Get("Content-Type") == applyPatch:
		verb = "APPLY"
	}
	m := Request{Verb: verb, DryRun: dryRun(r), Scope: scope(info)}
	if known {
		m.Group, m.Version, m.Resource, m.Subresource = info.APIGroup, info.APIVersion, info.Resource, info.Subresource
	}
	return m
}

// scope is upstream's scope label (its CleanScope, as the custom resource
// handler reports it): "resource" for a request on one object, a create,
// or a list pinned to one name by a field selector; else "namespace" or
// "cluster" by where the collection is.
func scope(info *request.Info) string {
	switch {
	case info.Name != "" || info.Verb == "create":
		return "resource"
	case info.Namespace != "":
		return "namespace"
	}
	return "cluster"
}

// dryRun is upstream's dry_run label: empty without the parameter, "All"
// when every value says All, "invalid" otherwise (such requests are
// refused, and must not add a series per value).
func dryRun(r *http.Request) string {
	if !strings.Contains(r.URL.RawQuery, "dryRun") {
		return ""
	}
	vals := r.URL.Query()["dryRun"]
	if len(vals) == 0 {
		return ""
	}
	for _, v := range vals {
		if v != "All" {
			return "invalid"
		}
	}
	return "All"
}
