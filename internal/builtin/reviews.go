package builtin

import (
	"strings"

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
