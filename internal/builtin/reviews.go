package builtin

import (
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/crdserver/crdserver/internal/registry"
)

// reviewDefinition is a create-only v1 resource that stores nothing: the
// authentication and authorization reviews, answered by their Creator
// hooks.
func reviewDefinition(group, resource, kind string, scope registry.Scope, hooks any) *registry.Definition {
	return &registry.Definition{
		Group:    group,
		Resource: resource,
		Singular: strings.ToLower(kind),
		Kind:     kind,
		ListKind: kind + "List",
		Scope:    scope,
		Versions: []registry.Version{{Name: "v1", Served: true, Storage: true}},
		Verbs:    []string{"create"},
		Hooks:    hooks,
	}
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
