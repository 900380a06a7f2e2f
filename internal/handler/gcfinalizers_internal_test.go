package handler

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A delete's garbage-collector finalizer: the options decide, then one
// the object has, then the resource's default (a batch/v1 Job orphans).
func TestGCFinalizers(t *testing.T) {
	orphan, background := metav1.DeletePropagationOrphan, metav1.DeletePropagationBackground
	yes := true
	for _, tc := range []struct {
		name            string
		has             []any
		opts            metav1.DeleteOptions
		orphanByDefault bool
		want            []any
	}{
		{"nothing asked", nil, metav1.DeleteOptions{}, false, []any{}},
		{"orphaning by default", nil, metav1.DeleteOptions{}, true, []any{"orphan"}},
		{"background asked, orphaning by default", nil, metav1.DeleteOptions{PropagationPolicy: &background}, true, []any{}},
		{"orphan asked", []any{"a"}, metav1.DeleteOptions{PropagationPolicy: &orphan}, false, []any{"a", "orphan"}},
		{"legacy orphanDependents", nil, metav1.DeleteOptions{OrphanDependents: &yes}, false, []any{"orphan"}}, //nolint:staticcheck // the legacy option is still served
		{"foreground already, orphaning by default", []any{"foregroundDeletion"}, metav1.DeleteOptions{}, true, []any{"foregroundDeletion"}},
	} {
		md := map[string]any{}
		if tc.has != nil {
			md["finalizers"] = tc.has
		}
		got, _ := gcFinalizers(md, &tc.opts, tc.orphanByDefault)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: finalizers %v, want %v", tc.name, got, tc.want)
		}
	}
}
