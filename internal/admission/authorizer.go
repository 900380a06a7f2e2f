package admission

import (
	"context"

	"github.com/crdserver/crdserver/internal/authz"
	"github.com/crdserver/crdserver/internal/cel"
)

// celAuthorizer answers the checks of CEL's authorizer variables with the
// server's authorizer.
type celAuthorizer struct{ authz authz.Authorizer }

var _ cel.Authorizer = celAuthorizer{}

func (c celAuthorizer) Authorize(ctx context.Context, chk cel.AuthzCheck) (bool, string, error) {
	d, reason, err := c.authz.Authorize(ctx, authz.Attributes{
		User: chk.User, Verb: chk.Verb, ResourceRequest: chk.ResourceRequest,
		APIGroup: chk.APIGroup, APIVersion: chk.APIVersion, Resource: chk.Resource, Subresource: chk.Subresource,
		Namespace: chk.Namespace, Name: chk.Name, Path: chk.Path,
	})
	return d == authz.Allow, reason, err
}

// requestAuthz binds the authorizer variables of at's expressions: the
// requesting user's checks, and the request's resource. Nil without an
// authorizer.
func (a *Admission) requestAuthz(at *Attributes) *cel.RequestAuthz {
	if a.authorizer == nil {
		return nil
	}
	return &cel.RequestAuthz{
		Authorizer: a.authorizer, User: at.User,
		Resource: at.Resource, Subresource: at.Subresource, Namespace: at.Namespace, Name: at.Name,
	}
}
