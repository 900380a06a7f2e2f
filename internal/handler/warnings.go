package handler

import (
	"fmt"
	"slices"
	"strings"

	apimachineryvalidation "k8s.io/apimachinery/pkg/util/validation"

	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/registry"
)

// warnValid adds the warnings upstream's strategy gives a write that
// passed validation (old is nil for a create): a built-in's from its
// hooks, a custom resource's for the finalizers it adds.
func warnValid(c *call, obj, old map[string]any, sub string) {
	var warnings []string
	switch w, ok := c.def.Hooks.(registry.Warner); {
	case ok:
		warnings = w.Warnings(obj, old, sub)
	case c.def.Custom() && sub == "":
		warnings = finalizerWarnings(obj, old)
	}
	for _, text := range warnings {
		addWarning(c, text)
	}
}

// standardFinalizers are the finalizers Kubernetes itself uses, which
// need no domain.
var standardFinalizers = []string{"kubernetes", "orphan", "foregroundDeletion"}

// finalizerWarnings warns of each finalizer obj adds (to old's) whose
// name is not a qualified name, or not domain-qualified with a path, in
// upstream's words for custom resources, in name order.
func finalizerWarnings(obj, old map[string]any) []string {
	added := codec.Strings(metadata(obj)["finalizers"])
	if old != nil {
		had := codec.Strings(metadata(old)["finalizers"])
		added = slices.DeleteFunc(added, func(f string) bool { return slices.Contains(had, f) })
	}
	slices.Sort(added)
	added = slices.Compact(added)
	var out []string
	for _, f := range added {
		for _, msg := range apimachineryvalidation.IsQualifiedName(f) {
			out = append(out, fmt.Sprintf("metadata.finalizers: %q: %s", f, msg))
		}
		if strings.Contains(f, "/") || slices.Contains(standardFinalizers, f) {
			continue
		}
		if strings.Contains(f, ".") {
			out = append(out, fmt.Sprintf("metadata.finalizers: %q: prefer a domain-qualified finalizer name including a path (/) to avoid accidental conflicts with other finalizer writers", f))
		} else {
			out = append(out, fmt.Sprintf("metadata.finalizers: %q: prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers", f))
		}
	}
	return out
}
