package cel

import (
	"context"

	"github.com/google/cel-go/cel"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/cel/library"

	"github.com/crdserver/crdserver/internal/authn"
)

// The authorizer variables of admission expressions (webhook match
// conditions, and policies' conditions, variables, validations, audit
// annotations and mutations): authorizer checks what a user may do,
// through the server's authorizer, as upstream's authz library builds the
// checks (authorizer.group(g).resource(r).namespace(n).name(x).check(verb),
// .path(p).check(verb), .serviceAccount(ns, name)), and
// authorizer.requestResource is the check of the request's own resource.

// AuthzCheck is one check an expression asks for: may User do Verb on a
// resource (ResourceRequest) or on the non-resource Path.
type AuthzCheck struct {
	User            *authn.User
	Verb            string
	ResourceRequest bool
	// APIVersion is "*" for the checks expressions build.
	APIGroup, APIVersion, Resource, Subresource, Namespace, Name string
	Path                                                         string
}

// Authorizer answers the checks of the authorizer variable: allowed is
// the authorizer's Allow decision; reason and err are what .reason() and
// .error() return.
type Authorizer interface {
	Authorize(ctx context.Context, c AuthzCheck) (allowed bool, reason string, err error)
}

// AuthorizerFunc adapts a function to Authorizer.
type AuthorizerFunc func(ctx context.Context, c AuthzCheck) (bool, string, error)

// Authorize calls f(ctx, c).
func (f AuthorizerFunc) Authorize(ctx context.Context, c AuthzCheck) (bool, string, error) {
	return f(ctx, c)
}

var _ Authorizer = AuthorizerFunc(nil)

// RequestAuthz is what the authorizer variables need of a request: the
// authorizer, the requesting user, and the resource the request
// addresses (in the request's version).
type RequestAuthz struct {
	Authorizer  Authorizer
	User        *authn.User
	Resource    schema.GroupVersionResource
	Subresource string
	Namespace   string
	Name        string
}

const (
	authorizerVar      = "authorizer"
	requestResourceVar = "authorizer.requestResource"
)

// authorizerVars declare the authorizer variables.
var authorizerVars = []cel.EnvOption{
	cel.Variable(authorizerVar, library.AuthorizerType),
	cel.Variable(requestResourceVar, library.ResourceCheckType),
}

// authorizerVal is the authorizer variable's value.
func (r *RequestAuthz) authorizerVal() any {
	return library.NewAuthorizerVal(upstreamUser(r.User), upstreamAuthorizer{r.Authorizer})
}

// resourceVal is authorizer.requestResource's value.
func (r *RequestAuthz) resourceVal() any {
	return library.NewResourceAuthorizerVal(upstreamUser(r.User), upstreamAuthorizer{r.Authorizer}, requestResource{r})
}

// requestResource is the request's resource as the library reads it.
type requestResource struct{ r *RequestAuthz }

func (q requestResource) GetName() string                          { return q.r.Name }
func (q requestResource) GetNamespace() string                     { return q.r.Namespace }
func (q requestResource) GetResource() schema.GroupVersionResource { return q.r.Resource }
func (q requestResource) GetSubresource() string                   { return q.r.Subresource }

var _ library.Resource = requestResource{}

// upstreamAuthorizer is an Authorizer as the library calls it.
type upstreamAuthorizer struct{ a Authorizer }

var _ authorizer.UnconditionalAuthorizer = upstreamAuthorizer{}

func (u upstreamAuthorizer) Authorize(ctx context.Context, at authorizer.Attributes) (authorizer.Decision, string, error) {
	c := AuthzCheck{
		Verb: at.GetVerb(), ResourceRequest: at.IsResourceRequest(),
		APIGroup: at.GetAPIGroup(), APIVersion: at.GetAPIVersion(), Resource: at.GetResource(), Subresource: at.GetSubresource(),
		Namespace: at.GetNamespace(), Name: at.GetName(), Path: at.GetPath(),
	}
	if info := at.GetUser(); info != nil {
		c.User = &authn.User{Name: info.GetName(), UID: info.GetUID(), Groups: info.GetGroups(), Extra: info.GetExtra()}
	}
	allowed, reason, err := u.a.Authorize(ctx, c)
	if allowed {
		return authorizer.DecisionAllow, reason, err
	}
	return authorizer.DecisionNoOpinion, reason, err
}

func upstreamUser(u *authn.User) user.Info {
	if u == nil {
		return &user.DefaultInfo{}
	}
	return &user.DefaultInfo{Name: u.Name, UID: u.UID, Groups: u.Groups, Extra: u.Extra}
}
