package controllers

import (
	"fmt"
	"runtime"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// step is one change the graph is told of: a node observed, or (remove set)
// the object of that uid gone.
type step struct {
	node   *gcNode
	remove types.UID
}

var widgets = schema.GroupResource{Group: "example.com", Resource: "widgets"}

// obj is a node in namespace "ns" named for its uid, owned by owners.
func obj(uid string, owners ...metav1.OwnerReference) *gcNode {
	return &gcNode{Resource: widgets, Namespace: "ns", Name: uid, UID: types.UID(uid), Owners: owners}
}

func owned(uid string, block bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Widget", Name: uid, UID: types.UID(uid), BlockOwnerDeletion: &block}
}

func deleting(n *gcNode, finalizer string) *gcNode {
	n.Deleting = true
	n.Foreground = finalizer == metav1.FinalizerDeleteDependents
	n.Orphan = finalizer == metav1.FinalizerOrphanDependents
	return n
}

func in(namespace string, n *gcNode) *gcNode { n.Namespace = namespace; return n }

func observed(n *gcNode) step    { return step{node: n} }
func removed(uid types.UID) step { return step{remove: uid} }

// The graph decides which objects the workers look at; each case feeds it
// changes and checks what the last one queued ("o:" marks orphaning).
func TestGraphQueues(t *testing.T) {
	cases := []struct {
		name  string
		steps []step
		want  []string
		line  int
	}{
		{name: "dependent of an owner never seen", line: line(),
			steps: []step{observed(obj("d", owned("o", false)))}, want: []string{"d"}},
		{name: "dependent of a seen owner", line: line(),
			steps: []step{observed(obj("o")), observed(obj("d", owned("o", false)))}},
		{name: "unchanged dependent again", line: line(),
			steps: []step{observed(obj("d", owned("o", false))), observed(obj("d", owned("o", false)))}},
		{name: "owner gone", line: line(),
			steps: []step{observed(obj("o")), observed(obj("d1", owned("o", false))), observed(obj("d2", owned("o", true))), removed("o")},
			want:  []string{"d1", "d2"}},
		{name: "dependent gone, owner not deleting", line: line(),
			steps: []step{observed(obj("o")), observed(obj("d", owned("o", true))), removed("d")}},
		{name: "owner deleting in the background", line: line(),
			steps: []step{observed(obj("o")), observed(obj("d", owned("o", false))), observed(deleting(obj("o"), "example.com/hold"))}},
		{name: "owner starts a foreground deletion", line: line(),
			steps: []step{observed(obj("o")), observed(obj("d", owned("o", false))), observed(deleting(obj("o"), metav1.FinalizerDeleteDependents))},
			want:  []string{"d", "o"}},
		{name: "owner starts orphaning", line: line(),
			steps: []step{observed(obj("o")), observed(obj("d", owned("o", false))), observed(deleting(obj("o"), metav1.FinalizerOrphanDependents))},
			want:  []string{"o:o"}},
		{name: "new dependent of a deleting owner", line: line(),
			steps: []step{observed(deleting(obj("o"), metav1.FinalizerDeleteDependents)), observed(obj("d", owned("o", true)))},
			want:  []string{"d"}},
		{name: "blocking dependent gone", line: line(),
			steps: []step{observed(obj("o")), observed(obj("d", owned("o", true))), observed(deleting(obj("o"), metav1.FinalizerDeleteDependents)), removed("d")},
			want:  []string{"o"}},
		{name: "blocking reference dropped", line: line(),
			steps: []step{observed(obj("o")), observed(obj("d", owned("o", true))), observed(deleting(obj("o"), metav1.FinalizerDeleteDependents)), observed(obj("d"))},
			want:  []string{"o"}},
		{name: "reference stops blocking", line: line(),
			steps: []step{observed(obj("o")), observed(obj("d", owned("o", true))), observed(deleting(obj("o"), metav1.FinalizerDeleteDependents)), observed(obj("d", owned("o", false)))},
			want:  []string{"d", "o"}},
		{name: "owner seen in another namespace", line: line(),
			steps: []step{observed(in("other", obj("o"))), observed(obj("d", owned("o", false)))}, want: []string{"d"}},
		{name: "cluster-scoped owner", line: line(),
			steps: []step{observed(in("", obj("o"))), observed(obj("d", owned("o", false)))}},
		{name: "reference names another object", line: line(),
			steps: []step{observed(obj("o")), observed(obj("d", metav1.OwnerReference{Name: "x", UID: "o"}))}, want: []string{"d"}},
		{name: "reference to a gone owner removed", line: line(),
			steps: []step{observed(obj("d", owned("o", false))), observed(obj("d")), removed("o")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := newGCGraph()
			var work []gcWork
			for _, s := range c.steps {
				if s.node != nil {
					work = g.observe(s.node)
				} else {
					work = g.remove(s.remove)
				}
			}
			var got []string
			for _, w := range work {
				if w.Orphan {
					got = append(got, "o:"+string(w.UID))
				} else {
					got = append(got, string(w.UID))
				}
			}
			slices.Sort(got)
			got = slices.Compact(got)
			if !slices.Equal(got, c.want) {
				t.Errorf("line %d: queued %q, want %q", c.line, got, c.want)
			}
		})
	}
}

// dependentsOf with blocking keeps only the references that block.
func TestGraphDependents(t *testing.T) {
	g := newGCGraph()
	g.observe(obj("a", owned("o", true)))
	g.observe(obj("b", owned("o", false)))
	g.observe(obj("c", owned("p", true)))
	names := func(ns []*gcNode) string {
		var s []string
		for _, n := range ns {
			s = append(s, n.Name)
		}
		slices.Sort(s)
		return fmt.Sprint(s)
	}
	if got := names(g.dependentsOf("o", false)); got != "[a b]" {
		t.Errorf("dependents of o: %s", got)
	}
	if got := names(g.dependentsOf("o", true)); got != "[a]" {
		t.Errorf("blocking dependents of o: %s", got)
	}
	g.remove("a")
	if got := names(g.dependentsOf("o", true)); got != "[]" {
		t.Errorf("blocking dependents of o after a went: %s", got)
	}
}

func line() int {
	_, _, l, _ := runtime.Caller(1)
	return l
}
