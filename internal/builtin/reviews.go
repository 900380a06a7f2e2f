package builtin

import (
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
