package handler

import (
	"slices"
	"testing"
)

func TestFinalizerWarnings(t *testing.T) {
	withFinalizers := func(f ...any) map[string]any {
		return map[string]any{"metadata": map[string]any{"finalizers": f}}
	}
	for _, tc := range []struct {
		name     string
		obj, old map[string]any
		want     []string
	}{
		{name: "none", obj: map[string]any{"metadata": map[string]any{}}},
		{name: "qualified with a path", obj: withFinalizers("example.com/cleanup")},
		{name: "standard", obj: withFinalizers("kubernetes", "orphan", "foregroundDeletion")},
		{name: "no path, in name order, once", obj: withFinalizers("b.example.com", "cleanup", "b.example.com"), want: []string{
			`metadata.finalizers: "b.example.com": prefer a domain-qualified finalizer name including a path (/) to avoid accidental conflicts with other finalizer writers`,
			`metadata.finalizers: "cleanup": prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers`,
		}},
		{name: "not a qualified name", obj: withFinalizers("a b"), want: []string{
			`metadata.finalizers: "a b": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
			`metadata.finalizers: "a b": prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers`,
		}},
		{name: "only the ones an update adds", obj: withFinalizers("old", "new"), old: withFinalizers("old"), want: []string{
			`metadata.finalizers: "new": prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers`,
		}},
	} {
		if got := finalizerWarnings(tc.obj, tc.old); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
