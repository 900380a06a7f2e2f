package builtin

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
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

// spec.finalizers are qualified names, and without a "/" one of the
// standard finalizers; a create's or an update's errors name the list,
// a write through /finalize's the item.
func TestNamespaceSpecFinalizers(t *testing.T) {
	const neither = "name is neither a standard finalizer name nor is it fully qualified"
	for _, tc := range []struct {
		name       string
		finalizers []any
		want       []string // the errors of a create, as field: detail
	}{
		{line(), []any{"kubernetes", "orphan", "foregroundDeletion", "example.com/x"}, nil},
		{line(), []any{"bad"}, []string{"spec.finalizers: " + neither}},
		{line(), []any{"kubernetes", "bad", "worse"}, []string{"spec.finalizers: " + neither, "spec.finalizers: " + neither}},
		// Not a qualified name, and no "/" either: both errors.
		{line(), []any{"bad fin"}, []string{"spec.finalizers: name part must consist of", "spec.finalizers: " + neither}},
		// Two "/": not qualified, but not taken for a standard name.
		{line(), []any{"bad/fin/x"}, []string{"spec.finalizers: a valid label key must consist of"}},
	} {
		obj := map[string]any{"metadata": map[string]any{"name": "ns"}, "spec": map[string]any{"finalizers": tc.finalizers}}
		check := func(what string, errs field.ErrorList, indexed bool) {
			t.Helper()
			if len(errs) != len(tc.want) {
				t.Errorf("%s: %s: %v, want %d errors", tc.name, what, errs, len(tc.want))
				return
			}
			for i, e := range errs {
				want := tc.want[i]
				if indexed {
					want = strings.Replace(want, "spec.finalizers", "spec.finalizers["+strconv.Itoa(slices.Index(tc.finalizers, any(e.BadValue)))+"]", 1)
				}
				if got := e.Field + ": " + e.Detail; !strings.HasPrefix(got, want) || e.Type != field.ErrorTypeInvalid {
					t.Errorf("%s: %s: error %d = %v, want %q", tc.name, what, i, e, want)
				}
			}
		}
		h := namespaceHooks{}
		check("create", h.Validate(obj), false)
		check("update", h.ValidateUpdate(obj, obj), false)
		check("finalize", h.ValidateSubresourceUpdate("finalize", obj, obj), true)
	}
}

// A write through namespaces/status is checked as upstream's
// ValidateNamespaceStatusUpdate checks it: the phase follows the
// deletionTimestamp; a missing phase is defaulted to Active first.
func TestNamespaceStatusPhase(t *testing.T) {
	const active, terminating = "may only be 'Active' if `deletionTimestamp` is empty", "may only be 'Terminating' if `deletionTimestamp` is not empty"
	for _, tc := range []struct {
		name     string
		deleting bool
		status   map[string]any
		want     string // the error, as field: value: detail
	}{
		{line(), false, map[string]any{"phase": "Active"}, ""},
		{line(), false, nil, ""},
		{line(), false, map[string]any{"phase": ""}, ""},
		{line(), false, map[string]any{"phase": "Terminating"}, `status.Phase: "Terminating": ` + active},
		{line(), false, map[string]any{"phase": "Bogus"}, `status.Phase: "Bogus": ` + active},
		{line(), true, map[string]any{"phase": "Terminating"}, ""},
		{line(), true, map[string]any{"phase": "Active"}, `status.Phase: "Active": ` + terminating},
		{line(), true, nil, `status.Phase: "Active": ` + terminating},
	} {
		md := map[string]any{"name": "ns"}
		if tc.deleting {
			md["deletionTimestamp"] = "2026-01-01T00:00:00Z"
		}
		obj := map[string]any{"metadata": md}
		if tc.status != nil {
			obj["status"] = tc.status
		}
		h := namespaceHooks{Typed: namespaceTyped}
		h.Default(obj)
		got := ""
		for _, e := range h.ValidateStatusUpdate(obj, obj) {
			got += fmt.Sprintf("%s: %q: %s", e.Field, e.BadValue, e.Detail)
		}
		if got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}
