package handler

import "github.com/crdserver/crdserver/internal/registry"

// checkWrite asks the definition's WriteChecker, when it has one, whether
// the caller may write obj (old is nil on create): RBAC's escalation
// prevention. It runs after mutating admission and before validation,
// where upstream's storage runs it.
func checkWrite(c *call, obj, old map[string]any) error {
	wc, ok := c.def.Hooks.(registry.WriteChecker)
	if !ok {
		return nil
	}
	return wc.CheckWrite(c.r.Context(), obj, old)
}
