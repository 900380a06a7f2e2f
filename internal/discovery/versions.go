package discovery

import (
	"slices"

	"k8s.io/apimachinery/pkg/version"
)

// SortVersions sorts version names in place by Kubernetes version priority,
// highest first: names that follow the Kubernetes pattern (v<N>, v<N>beta<M>,
// v<N>alpha<M>) before any other, GA before beta before alpha, larger numbers
// first; names that do not follow the pattern come last, alphabetically. The
// first element is the group's preferred version.
func SortVersions(versions []string) {
	slices.SortStableFunc(versions, func(a, b string) int {
		// CompareKubeAwareVersionStrings is positive when a has the higher
		// priority; higher priority sorts first.
		return -version.CompareKubeAwareVersionStrings(a, b)
	})
}
