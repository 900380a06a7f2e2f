package handler

import (
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/crdserver/crdserver/internal/authn"
	"github.com/crdserver/crdserver/internal/authz"
)

// authorizeCreate checks that the request's user may create the object
// a write found missing and is about to create: the filters authorized
// the request's own verb (patch), not create. Upstream asks the same
// before such a create, and refuses it with the authorizer's reason
// alone (`configmaps "x" is forbidden: ` and the reason, often none).
func (h *Handler) authorizeCreate(c *call) error {
	if h.authz == nil {
		return nil
	}
	u, _ := authn.UserFrom(c.r.Context())
	attrs := authz.AttributesFrom(u, c.info)
	attrs.Verb = "create"
	d, reason, err := h.authz.Authorize(c.r.Context(), attrs)
	switch {
	case d == authz.Allow:
		return nil
	case err != nil:
		return apierrors.NewInternalError(err)
	}
	return apierrors.NewForbidden(c.gr(), c.info.Name, errors.New(reason))
}
