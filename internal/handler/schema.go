package handler

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/registry"
)

// The schema steps of the request path: prune and default a request
// object with its version's schema, then validate it. Resources without a
// compiled schema (built-ins, preserve-unknown-fields roots) skip them.

func versionSchema(c *call) registry.Schema {
	s, _ := c.version.Schema.(registry.Schema)
	return s
}

// pruneAndDefault prunes fields the schema does not specify — reported as
// unknown fields under fieldValidation — and fills defaults.
func pruneAndDefault(c *call, obj map[string]any) error {
	s := versionSchema(c)
	if s == nil {
		return nil
	}
	mode, err := fieldValidation(c)
	if err != nil {
		return err
	}
	var problems []string
	for _, p := range s.Prune(obj) {
		problems = append(problems, unknownField(p))
	}
	if err := applyFieldValidation(c, mode, problems); err != nil {
		return err
	}
	s.Default(obj)
	return nil
}

// unknownField words a pruned path as upstream's strict decoding does.
func unknownField(p string) string {
	if strings.HasPrefix(p, "unknown field") {
		return p
	}
	return fmt.Sprintf("unknown field %q", strings.TrimPrefix(p, "."))
}

// validateSchema validates obj against its version's schema; on update,
// values unchanged from old do not fail (ratcheting).
func validateSchema(c *call, obj, old map[string]any) field.ErrorList {
	s := versionSchema(c)
	if s == nil {
		return nil
	}
	if old == nil {
		return s.Validate(obj)
	}
	return s.ValidateUpdate(obj, old)
}
