package handler

import (
	"fmt"
	"math"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
// unknown fields under fieldValidation — unless decoding or patching did,
// and fills defaults.
func pruneAndDefault(c *call, obj map[string]any) error {
	if err := pruneAndDefaultSchema(c, obj); err != nil {
		return err
	}
	if goTyped(c.def) {
		dropUnknownMetadata(obj)
	}
	if d, ok := c.def.Hooks.(registry.Defaulter); ok {
		d.Default(obj)
	}
	return nil
}

// dropUnknownMetadata drops the members of a built-in's metadata that
// ObjectMeta does not have, as upstream's typed decoding drops them
// (decoding reported them under fieldValidation), before the writer's
// fields are recorded: its field manager never sees them.
func dropUnknownMetadata(obj map[string]any) {
	md, _ := obj["metadata"].(map[string]any)
	for k := range md {
		if _, known := metaFields[k]; !known {
			delete(md, k)
		}
	}
}

// pruneAndDefaultSchema is pruneAndDefault by the version's schema.
func pruneAndDefaultSchema(c *call, obj map[string]any) error {
	s := versionSchema(c)
	if s == nil {
		return nil
	}
	if c.bodyPruned {
		s.Default(obj)
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

// unknownField words a pruned path as upstream's decoder of custom
// resources does: the path as it is between quotes, not escaped.
func unknownField(p string) string {
	if strings.HasPrefix(p, "unknown field") {
		return p
	}
	return `unknown field "` + strings.TrimPrefix(p, ".") + `"`
}

// validateSchema validates obj against its version's schema; on update,
// values unchanged from old do not fail (ratcheting). A status write (sub
// "status") validates the status alone, as upstream's status strategy.
func validateSchema(c *call, obj, old map[string]any, sub string) field.ErrorList {
	s := versionSchema(c)
	switch {
	case s == nil:
		return nil
	case old == nil:
		return s.Validate(obj)
	case sub == "status":
		return s.ValidateStatusUpdate(obj, old)
	}
	return s.ValidateUpdate(obj, old)
}

// validateRules runs the version's CEL rules after every other check
// (whose errors, in errs, may keep them from running) and returns errs
// with the rules' errors added; failures the update did not cause (in
// unchanged values) become Warning headers.
func validateRules(c *call, obj, old map[string]any, errs field.ErrorList) field.ErrorList {
	s := versionSchema(c)
	if s == nil {
		return errs
	}
	ruleErrs, warnings := s.ValidateRules(c.r.Context(), obj, old, errs)
	for _, w := range warnings {
		addWarning(c, w)
	}
	return append(errs, ruleErrs...)
}

// validateScale checks the replica counts (and selector) the scale
// subresource reads from a custom resource, as upstream's validator does
// on every write: values of the wrong type, negative or over the int32
// range are invalid. A status write checks only the status paths. The
// fields are named by the JSONPaths as the version declares them
// (".spec.replicas").
func validateScale(c *call, obj map[string]any, sub string) field.ErrorList {
	sc := c.version.Subresources.Scale
	if sc == nil || goTyped(c.def) {
		return nil // built-ins validate their replicas and selector themselves
	}
	var errs field.ErrorList
	if sub != "status" {
		errs = append(errs, validateReplicas(obj, sc.SpecReplicasPath)...)
	}
	errs = append(errs, validateReplicas(obj, sc.StatusReplicasPath)...)
	if sc.LabelSelectorPath != "" {
		sel, _, err := unstructured.NestedString(obj, splitPath(sc.LabelSelectorPath)...)
		if err != nil {
			errs = append(errs, field.Invalid(field.NewPath(sc.LabelSelectorPath), sel, err.Error()))
		}
	}
	return errs
}

func validateReplicas(obj map[string]any, path string) field.ErrorList {
	n, _, err := unstructured.NestedInt64(obj, splitPath(path)...)
	switch {
	case err != nil:
		return field.ErrorList{field.Invalid(field.NewPath(path), n, err.Error())}
	case n < 0:
		return field.ErrorList{field.Invalid(field.NewPath(path), n, "should be a non-negative integer")}
	case n > math.MaxInt32:
		return field.ErrorList{field.Invalid(field.NewPath(path), n, fmt.Sprintf("should be less than or equal to %v", math.MaxInt32))}
	}
	return nil
}

// splitPath splits a simple JSONPath (".spec.replicas") into its fields.
func splitPath(path string) []string {
	return strings.Split(strings.TrimPrefix(path, "."), ".")
}
