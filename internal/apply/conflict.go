package apply

import (
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/merge"
)

// conflictError is upstream's 409 for an apply that conflicts: one cause
// per field and manager, and a message that lists them by manager.
func conflictError(conflicts merge.Conflicts) error {
	causes := make([]metav1.StatusCause, 0, len(conflicts))
	for _, c := range conflicts {
		causes = append(causes, metav1.StatusCause{
			Type:    metav1.CauseTypeFieldManagerConflict,
			Message: "conflict with " + printManager(c.Manager),
			Field:   c.Path.String(),
		})
	}
	return apierrors.NewApplyConflict(causes, conflictMessage(conflicts))
}

func conflictMessage(conflicts merge.Conflicts) string {
	if len(conflicts) == 1 {
		return fmt.Sprintf("Apply failed with 1 conflict: conflict with %s: %v", printManager(conflicts[0].Manager), conflicts[0].Path)
	}
	byManager := map[string][]fieldpath.Path{}
	var managers []string
	for _, c := range conflicts {
		if _, ok := byManager[c.Manager]; !ok {
			managers = append(managers, c.Manager)
		}
		byManager[c.Manager] = append(byManager[c.Manager], c.Path)
	}
	sort.Slice(managers, func(i, j int) bool { return printedKey(managers[i]) < printedKey(managers[j]) })
	var lines []string
	for _, m := range managers {
		lines = append(lines, fmt.Sprintf("conflicts with %s:", printManager(m)))
		for _, p := range byManager[m] {
			lines = append(lines, fmt.Sprintf("- %v", p))
		}
	}
	return fmt.Sprintf("Apply failed with %d conflicts: %s", len(conflicts), strings.Join(lines, "\n"))
}

// printedKey orders managers as upstream does, by their identifier's JSON
// form ({"manager":...,"operation":...,"apiVersion":...}).
func printedKey(key string) string {
	id := parseManagerID(key)
	return id.Manager + "\x00" + id.Operation + "\x00" + id.APIVersion + "\x00" + id.Subresource
}

// printManager names a manager in a conflict: "kubectl", with its
// subresource, and for updates the version it used.
func printManager(key string) string {
	id := parseManagerID(key)
	s := fmt.Sprintf("%q", id.Manager)
	if id.Subresource != "" {
		s += fmt.Sprintf(" with subresource %q", id.Subresource)
	}
	if id.Operation == opUpdate {
		return s + " using " + id.APIVersion
	}
	return s
}
