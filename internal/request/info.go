// Package request parses a request's URL and method into the API coordinates
// the rest of the server routes on. It is a leaf: it imports nothing of ours.
package request

import "context"

// Info describes one request. For non-resource paths (/healthz, /openapi/v3,
// /apis discovery) IsResourceRequest is false and Path is set.
type Info struct {
	IsResourceRequest bool
	Path              string

	// Verb is the Kubernetes verb: get, list, watch, create, update, patch,
	// delete, deletecollection (resource requests), or the lower-case HTTP
	// method for non-resource requests.
	Verb string

	APIPrefix   string // "api" or "apis"
	APIGroup    string // "" for the core group
	APIVersion  string
	Namespace   string
	Resource    string
	Subresource string
	Name        string
	// Parts are the path segments after the version, for error messages.
	Parts []string

	// FieldSelector and LabelSelector are the raw selectors of a list,
	// watch or deletecollection that did not name its verb in the path
	// (upstream hands these to authorizers that check selectors).
	FieldSelector string
	LabelSelector string
}

type ctxKey struct{}

// WithInfo returns a context carrying info.
func WithInfo(ctx context.Context, info *Info) context.Context {
	return context.WithValue(ctx, ctxKey{}, info)
}

// InfoFrom returns the Info stored by WithInfo, if any.
func InfoFrom(ctx context.Context) (*Info, bool) {
	info, ok := ctx.Value(ctxKey{}).(*Info)
	return info, ok
}
