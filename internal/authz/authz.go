// Package authz decides whether a user may do what a request asks. The
// Authorizer interface is what the filter chain calls; AllowAll allows
// everything and Privileged keeps the server's internals to its admins.
// RBAC comes later behind the same interface.
package authz

import (
	"context"
	"slices"
	"strings"

	"github.com/crdserver/crdserver/internal/authn"
	"github.com/crdserver/crdserver/internal/request"
)

// Attributes are what an authorizer decides on: who, which verb, and on
// what (a resource, or a non-resource path).
type Attributes struct {
	User *authn.User

	Verb        string
	APIGroup    string
	APIVersion  string
	Resource    string
	Subresource string
	Namespace   string
	Name        string
	// Path is the URL path; authorizers use it for non-resource requests.
	Path string

	ResourceRequest bool
}

// AttributesFrom builds the attributes of a parsed request.
func AttributesFrom(u *authn.User, info *request.Info) Attributes {
	return Attributes{
		User:            u,
		Verb:            info.Verb,
		APIGroup:        info.APIGroup,
		APIVersion:      info.APIVersion,
		Resource:        info.Resource,
		Subresource:     info.Subresource,
		Namespace:       info.Namespace,
		Name:            info.Name,
		Path:            info.Path,
		ResourceRequest: info.IsResourceRequest,
	}
}

// Decision is an authorizer's answer.
type Decision int

const (
	// NoOpinion means the authorizer neither allows nor denies; a chain of
	// authorizers asks the next one, and a request nobody allows is denied.
	NoOpinion Decision = iota
	Allow
	Deny
)

func (d Decision) String() string {
	switch d {
	case Allow:
		return "Allow"
	case Deny:
		return "Deny"
	}
	return "NoOpinion"
}

// Authorizer decides on a request. reason, when not empty, is appended to
// the Forbidden message the client reads. An error means the authorizer
// could not decide; the request is then refused with a 500 unless the
// decision is Allow.
type Authorizer interface {
	Authorize(ctx context.Context, a Attributes) (d Decision, reason string, err error)
}

// AuthorizerFunc adapts a function to Authorizer.
type AuthorizerFunc func(ctx context.Context, a Attributes) (Decision, string, error)

// Authorize calls f(ctx, a).
func (f AuthorizerFunc) Authorize(ctx context.Context, a Attributes) (Decision, string, error) {
	return f(ctx, a)
}

var _ Authorizer = AuthorizerFunc(nil)

// Named is a, the authorizer name of upstream's chain of authorizers
// ("rbac" for RBAC), as that chain words its decisions: a reason given
// with a decision that does not allow is prefixed with "name: " (the
// chain collects such reasons from each authorizer it asks); an Allow's
// reason is passed as it is.
func Named(name string, a Authorizer) Authorizer {
	return AuthorizerFunc(func(ctx context.Context, attrs Attributes) (Decision, string, error) {
		d, reason, err := a.Authorize(ctx, attrs)
		return d, NamedReason(name, d, reason), err
	})
}

// NamedReason is reason, given by the authorizer name with d, as Named
// words it.
func NamedReason(name string, d Decision, reason string) string {
	if d == Allow || reason == "" {
		return reason
	}
	return name + ": " + reason
}

// AllowAll allows every request.
var AllowAll Authorizer = AuthorizerFunc(func(context.Context, Attributes) (Decision, string, error) {
	return Allow, "", nil
})

// monitoring is the group upstream's default RBAC lets read /metrics and
// the component pages (ClusterRole system:monitoring).
const monitoring = "system:monitoring"

// Privileged guards the non-resource paths that show the server's insides
// or cost it work: /metrics, /debug/pprof, and the component pages
// /flagz and /statusz (which name the files the server was started
// with). Only system:masters may read them, and system:monitoring all but
// the profiles, as upstream's default RBAC has it (cluster-admin holds
// every non-resource URL); everyone else is denied. Every other request
// is next's to decide. Until RBAC comes, next is AllowAll, and without
// this any user with a certificate could profile the server.
func Privileged(next Authorizer) Authorizer {
	return AuthorizerFunc(func(ctx context.Context, a Attributes) (Decision, string, error) {
		if a.ResourceRequest {
			return next.Authorize(ctx, a)
		}
		watched := under(a.Path, "/metrics") || under(a.Path, "/flagz") || under(a.Path, "/statusz")
		if !watched && !under(a.Path, "/debug/pprof") {
			return next.Authorize(ctx, a)
		}
		if a.User != nil && (slices.Contains(a.User.Groups, authn.Masters) || watched && slices.Contains(a.User.Groups, monitoring)) {
			return Allow, "", nil
		}
		return Deny, "", nil
	})
}

func under(path, root string) bool {
	return path == root || strings.HasPrefix(path, root+"/")
}
