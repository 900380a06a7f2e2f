package apply

import (
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestUpdateFastMatchesUpdater runs random sequences of updates by a few
// managers through the fast path and through structured-merge-diff's
// updater, and wants the same entries (times aside).
func TestUpdateFastMatchesUpdater(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	managers := []string{"a", "b", "c"}
	mutations := []func(o map[string]any, n int){
		func(o map[string]any, n int) { o["spec"].(map[string]any)["color"] = fmt.Sprint("c", n) },
		func(o map[string]any, n int) { o["spec"].(map[string]any)["replicas"] = int64(n) },
		// The decoded objects' numbers are float64: a value change
		// alone, which the fast comparison decides.
		func(o map[string]any, n int) { o["spec"].(map[string]any)["replicas"] = float64(n % 3) },
		func(o map[string]any, n int) {
			if l, ok := o["metadata"].(map[string]any)["labels"].(map[string]any); ok {
				l["a"] = fmt.Sprint("v", n%3)
			}
		},
		func(o map[string]any, _ int) { delete(o["spec"].(map[string]any), "color") },
		func(o map[string]any, n int) {
			o["spec"].(map[string]any)["tags"] = []any{"x", fmt.Sprint("t", n%3)}
		},
		func(o map[string]any, n int) {
			o["spec"].(map[string]any)["ports"] = []any{map[string]any{"name": "http", "port": int64(n)}, map[string]any{"name": fmt.Sprint("p", n%2)}}
		},
		func(o map[string]any, n int) {
			md := o["metadata"].(map[string]any)
			md["labels"] = map[string]any{"a": "b", fmt.Sprint("l", n%4): "x"}
		},
		func(o map[string]any, n int) {
			o["spec"].(map[string]any)["selector"] = map[string]any{"k": fmt.Sprint(n % 2)}
		},
		func(o map[string]any, n int) { o["status"] = map[string]any{"phase": fmt.Sprint(n)} },
		func(o map[string]any, _ int) { o["spec"].(map[string]any)["selector"] = map[string]any{} },
		func(o map[string]any, _ int) { o["spec"].(map[string]any)["tags"] = []any{} },
		func(o map[string]any, _ int) { o["metadata"].(map[string]any)["annotations"] = map[string]any{} },
	}
	for seq := range 30 {
		fast, slow := manager(t, "v1", ""), manager(t, "v1", "")
		slow.slow = true
		start := w1
		if seq%2 == 1 {
			start = `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","labels":{}},"spec":{"tags":[],"selector":{},"ports":[]}}`
		}
		lf, ls := obj(t, start), obj(t, start)
		fast.Update(nil, lf, "creator")
		slow.Update(nil, ls, "creator")
		for step := range 12 {
			mut := mutations[rng.Intn(len(mutations))]
			who := managers[rng.Intn(len(managers))]
			n := rng.Intn(100)
			nf, ns := deepCopyJSON(t, lf), deepCopyJSON(t, ls)
			mut(nf, n)
			mut(ns, n)
			fast.Update(lf, nf, who)
			slow.Update(ls, ns, who)
			// Entries are sorted by time too, and the two paths may
			// straddle a second: compare them as sets.
			f, s := summary(nf), summary(ns)
			slices.Sort(f)
			slices.Sort(s)
			if !reflect.DeepEqual(f, s) {
				t.Fatalf("sequence %d step %d (%s): fast path\n  %s\nupdater\n  %s", seq, step, who, strings.Join(f, "\n  "), strings.Join(s, "\n  "))
			}
			lf, ls = nf, ns
		}
	}
}
