package watchcache

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/labels"
)

// Packed labels answer selectors exactly as the map they were made from.
func TestLabelsMatchLikeSet(t *testing.T) {
	long := strings.Repeat("v", 300) // a length of two uvarint bytes
	sets := []labels.Set{
		nil,
		{},
		{"app": "x"},
		{"": "", "a": "", "b": "1"},
		{"app.kubernetes.io/name": "widget", "tier": "frontend", "z": long, "bench.crdserver.io/run": "r1"},
	}
	selectors := []string{"", "app=x", "app!=x", "app", "!app", "a", "b in (1,2)", "b notin (1)", "tier=frontend,z=" + long[:63], "z", "zz", "!z", "''=''"}
	for _, set := range sets {
		l := NewLabels(set)
		if l.Len() != len(set) {
			t.Errorf("%v: Len %d", set, l.Len())
		}
		if got := l.Set(); len(set) > 0 && !labels.Equals(got, set) {
			t.Errorf("%v: Set() = %v", set, got)
		}
		if l.String() != set.String() {
			t.Errorf("%v: String() = %q, want %q", set, l.String(), set.String())
		}
		for k, v := range set {
			if got, ok := l.Lookup(k); !ok || got != v {
				t.Errorf("%v: Lookup(%q) = %q, %v", set, k, got, ok)
			}
		}
		for _, s := range selectors {
			sel, err := labels.Parse(s)
			if err != nil {
				continue // not every string parses; those that do are compared
			}
			if got, want := sel.Matches(&l), sel.Matches(set); got != want {
				t.Errorf("%v: %q matches %v, want %v", set, s, got, want)
			}
		}
	}
}

// Packing keeps one allocation per object, whatever its number of labels.
func TestLabelsAllocations(t *testing.T) {
	set := labels.Set{"app.kubernetes.io/name": "widget", "app.kubernetes.io/instance": "w-1", "tier": "frontend", "team": "a"}
	if n := testing.AllocsPerRun(100, func() { NewLabels(set) }); n > 2 {
		t.Errorf("NewLabels: %v allocations, want at most 2 (sorted keys, packed)", n)
	}
	l := NewLabels(set)
	sel, err := labels.Parse("tier=frontend,team")
	if err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { sel.Matches(&l) }); n != 0 {
		t.Errorf("Matches: %v allocations, want 0", n)
	}
}
