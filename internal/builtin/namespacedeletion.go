package builtin

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// NamespaceDeletion is what one pass over a terminating namespace's contents
// left behind. The namespace controller reports it in the namespace's
// conditions, as upstream's does, so that `kubectl describe namespace` says
// what holds a namespace in Terminating.
type NamespaceDeletion struct {
	// Remaining counts the objects not gone yet by "<resource>.<group>".
	Remaining map[string]int
	// Finalizers counts the remaining objects that carry each finalizer.
	Finalizers map[string]int
	// Failures are the errors of resources whose deletion failed.
	Failures []string
	// Undiscovered maps the group/versions whose objects could not be
	// listed (a resource served without a store yet) to the reason.
	Undiscovered map[string]string
}

// The condition types upstream's namespace controller keeps, in its order.
var namespaceDeletionConditions = []string{
	"NamespaceDeletionDiscoveryFailure",
	"NamespaceDeletionGroupVersionParsingFailure",
	"NamespaceDeletionContentFailure",
	"NamespaceContentRemaining",
	"NamespaceFinalizersRemaining",
}

// SetDeletionConditions writes d into ns's status.conditions and reports
// whether they changed. Each type is True while something is wrong or
// remains, and False with upstream's "ok" reason and message otherwise; a
// condition's lastTransitionTime moves only when its status does.
func SetDeletionConditions(ns map[string]any, d NamespaceDeletion, now time.Time) bool {
	status, _ := ns["status"].(map[string]any)
	if status == nil {
		status = map[string]any{}
		ns["status"] = status
	}
	conds, _ := status["conditions"].([]any)
	changed := false
	for _, typ := range namespaceDeletionConditions {
		st, reason, message := d.condition(typ)
		i := slices.IndexFunc(conds, func(c any) bool { m, _ := c.(map[string]any); return m["type"] == typ })
		if i < 0 {
			conds = append(conds, map[string]any{
				"type": typ, "status": st, "reason": reason, "message": message,
				"lastTransitionTime": now.UTC().Format(time.RFC3339),
			})
			changed = true
			continue
		}
		old, _ := conds[i].(map[string]any)
		if old["status"] == st && old["reason"] == reason && old["message"] == message {
			continue
		}
		c := maps.Clone(old)
		if c["status"] != st {
			c["lastTransitionTime"] = now.UTC().Format(time.RFC3339)
		}
		c["status"], c["reason"], c["message"] = st, reason, message
		conds[i] = c
		changed = true
	}
	status["conditions"] = conds
	return changed
}

// condition is one condition's status, reason and message, with upstream's
// texts.
func (d NamespaceDeletion) condition(typ string) (status, reason, message string) {
	switch typ {
	case "NamespaceDeletionDiscoveryFailure":
		if len(d.Undiscovered) > 0 {
			// Upstream words it around client-go's ErrGroupDiscoveryFailed.
			return "True", "DiscoveryFailed", fmt.Sprintf("Discovery failed for some groups, %d failing: unable to retrieve the complete list of server APIs: %s",
				len(d.Undiscovered), counts(d.Undiscovered, "%s: %s"))
		}
		return "False", "ResourcesDiscovered", "All resources successfully discovered"
	case "NamespaceDeletionGroupVersionParsingFailure":
		// Upstream fails to parse the group/versions discovery lists;
		// crdserver's come from its own registry and always parse.
		return "False", "ParsedGroupVersions", "All legacy kube types successfully parsed"
	case "NamespaceDeletionContentFailure":
		if len(d.Failures) > 0 {
			return "True", "ContentDeletionFailed", fmt.Sprintf("Failed to delete all resource types, %d remaining: %s",
				len(d.Failures), strings.Join(slices.Sorted(slices.Values(d.Failures)), ", "))
		}
		return "False", "ContentDeleted", "All content successfully deleted, may be waiting on finalization"
	case "NamespaceContentRemaining":
		if len(d.Remaining) > 0 {
			return "True", "SomeResourcesRemain", "Some resources are remaining: " + counts(d.Remaining, "%s has %d resource instances")
		}
		return "False", "ContentRemoved", "All content successfully removed"
	case "NamespaceFinalizersRemaining":
		if len(d.Finalizers) > 0 {
			return "True", "SomeFinalizersRemain", "Some content in the namespace has finalizers remaining: " + counts(d.Finalizers, "%s in %d resource instances")
		}
		return "False", "ContentHasNoFinalizers", "All content-preserving finalizers finished"
	}
	return "", "", ""
}

// counts renders each key and its value with format, sorted, comma-separated.
func counts[V any](m map[string]V, format string) string {
	parts := make([]string, 0, len(m))
	for k, n := range m {
		parts = append(parts, fmt.Sprintf(format, k, n))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}
