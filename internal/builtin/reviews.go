package builtin

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/crdserver/crdserver/internal/registry"
)

// reviewDefinition is a create-only v1 resource that stores nothing: the
// authentication and authorization reviews, answered by their Creator
// hooks.
func reviewDefinition(group, resource, kind string, scope registry.Scope, hooks any) *registry.Definition {
	d := v1Definition(group, resource, kind, scope, hooks)
	d.Verbs = []string{"create"}
	return d
}

// encodeReview encodes a review of group's v1 for the client, with its
// apiVersion and kind.
func encodeReview(obj any, group, kind string) (map[string]any, error) {
	out, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	out["apiVersion"], out["kind"] = group+"/v1", kind
	return out, nil
}
