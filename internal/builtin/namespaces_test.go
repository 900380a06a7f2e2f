package builtin

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A namespace's first delete takes the garbage collector's finalizers from
// the options as upstream's namespace storage does: the legacy
// orphanDependents=false asks for foregroundDeletion, and without options
// those it had stay.
func TestNamespaceMarkDeleting(t *testing.T) {
	orphan, foreground, background := metav1.DeletePropagationOrphan, metav1.DeletePropagationForeground, metav1.DeletePropagationBackground
	yes, no := true, false
	for _, tc := range []struct {
		name string
		has  []any
		opts metav1.DeleteOptions
		want []any // nil: no finalizers key
	}{
		{name: "nothing asked"},
		{name: "nothing asked, orphan had", has: []any{"a", "orphan"}, want: []any{"a", "orphan"}},
		{name: "orphan", has: []any{"a"}, opts: metav1.DeleteOptions{PropagationPolicy: &orphan}, want: []any{"a", "orphan"}},
		{name: "foreground", opts: metav1.DeleteOptions{PropagationPolicy: &foreground}, want: []any{"foregroundDeletion"}},
		{name: "background, orphan had", has: []any{"orphan"}, opts: metav1.DeleteOptions{PropagationPolicy: &background}},
		{name: "orphanDependents", opts: metav1.DeleteOptions{OrphanDependents: &yes}, want: []any{"orphan"}},                                        //nolint:staticcheck // the legacy option is still served
		{name: "orphanDependents false", has: []any{"orphan"}, opts: metav1.DeleteOptions{OrphanDependents: &no}, want: []any{"foregroundDeletion"}}, //nolint:staticcheck
	} {
		t.Run(tc.name, func(t *testing.T) {
			md := map[string]any{"name": "ns"}
			if tc.has != nil {
				md["finalizers"] = tc.has
			}
			obj := map[string]any{"metadata": md, "spec": map[string]any{"finalizers": []any{"kubernetes"}}}
			namespaceHooks{}.MarkDeleting(obj, &tc.opts)
			if got := md["finalizers"]; !reflect.DeepEqual(got, anyOrNil(tc.want)) {
				t.Errorf("finalizers = %v, want %v", got, tc.want)
			}
			if phase := obj["status"].(map[string]any)["phase"]; phase != "Terminating" {
				t.Errorf("phase = %v", phase)
			}
		})
	}
}

func anyOrNil(l []any) any {
	if l == nil {
		return nil
	}
	return l
}
