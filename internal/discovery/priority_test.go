package discovery

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestOrderGroups checks the orders kube-apiserver 1.37 gave for the same
// groups: its /apis list and its aggregated document.
func TestOrderGroups(t *testing.T) {
	versionsOf := map[string][]string{
		"":                             {"v1"},
		"aaa.example.com":              {"v2"},
		"zzz.example.com":              {"v1"},
		"mmm.example.com":              {"v1alpha1"},
		"apps.example.org":             {"v1"},
		"apiextensions.k8s.io":         {"v1"},
		"admissionregistration.k8s.io": {"v1", "v1beta1"},
		"apps":                         {"v1"},
		"events.k8s.io":                {"v1"},
		"apiregistration.k8s.io":       {"v1"},
		"storagemigration.k8s.io":      {"v1"},
	}
	builtin := func(gv schema.GroupVersion) bool {
		_, ok := BuiltinPriority(gv)
		return ok || gv.Group == "apiregistration.k8s.io"
	}
	legacy, aggregated := orderGroups(versionsOf, builtin)
	wantLegacy := []string{
		"apiregistration.k8s.io", "apps", "events.k8s.io", "admissionregistration.k8s.io",
		"apiextensions.k8s.io", "storagemigration.k8s.io",
		"apps.example.org", "zzz.example.com", "mmm.example.com", "aaa.example.com",
	}
	if !slices.Equal(legacy, wantLegacy) {
		t.Errorf("APIGroupList order:\n got %q\nwant %q", legacy, wantLegacy)
	}
	wantAggregated := []string{
		"apiregistration.k8s.io", "apps", "events.k8s.io", "admissionregistration.k8s.io",
		"apiextensions.k8s.io", "storagemigration.k8s.io",
		"aaa.example.com", "apps.example.org", "mmm.example.com", "zzz.example.com",
	}
	if !slices.Equal(aggregated, wantAggregated) {
		t.Errorf("aggregated order:\n got %q\nwant %q", aggregated, wantAggregated)
	}
}
