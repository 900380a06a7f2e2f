package apply

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

// TestSharedSetsConcurrent reads field sets from many goroutines at once,
// past the cache's bound, and wants each one the set its bytes decode to,
// with the schema's verdict on it.
func TestSharedSetsConcurrent(t *testing.T) {
	m := gadgetManager(t, false)
	pt, err := m.Types.Version(m.GroupVersion.Version)
	if err != nil {
		t.Fatal(err)
	}
	fields := func(i int) []byte {
		switch i % 3 {
		case 0: // spec.selector is atomic: a field under it is reconciled away
			return fmt.Appendf(nil, `{"f:spec":{"f:selector":{"f:k%d":{}}}}`, i)
		case 1:
			return fmt.Appendf(nil, `{"f:metadata":{"f:labels":{"f:l%d":{}}}}`, i)
		}
		return fmt.Appendf(nil, `{"f:spec":{"f:tags":{"v:\"t%d\"":{}}}}`, i)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 2 * maxSharedSets {
				f := fields((i + g*7) % (maxSharedSets + 100))
				set, settled, ok := sharedSets.get(pt, f)
				want, err := decodeEncodedFields(f)
				if !ok || err != nil || !set.Equals(want) {
					t.Errorf("%s: got %v (ok %v), want %v (%v)", f, set, ok, want, err)
					return
				}
				if wantSettled := (i+g*7)%(maxSharedSets+100)%3 != 0; settled != wantSettled {
					t.Errorf("%s: settled %v, want %v", f, settled, wantSettled)
					return
				}
			}
		})
	}
	wg.Wait()
	if sharedSets.n > maxSharedSets {
		t.Errorf("the cache holds %d sets, more than %d", sharedSets.n, maxSharedSets)
	}
}

// TestApplyAgainLeavesReconciliation has an entry hold a field under an
// atomic map (as one recorded before the schema made it atomic would):
// structured-merge-diff reconciles that entry on the next apply, so an
// applier applying again must go its way, from decoded entries and from
// encoded ones alike.
func TestApplyAgainLeavesReconciliation(t *testing.T) {
	slow := gadgetManager(t, true)
	config := map[string]any{"apiVersion": "example.com/v1", "kind": "Gadget",
		"metadata": map[string]any{"name": "g", "namespace": "ns"},
		"spec":     map[string]any{"name": "a", "count": int64(1)}}
	live, err := slow.Apply(map[string]any{"apiVersion": "example.com/v1", "kind": "Gadget",
		"metadata": map[string]any{"name": "g", "namespace": "ns", "uid": "u"},
		"spec":     map[string]any{"selector": map[string]any{"k": "v"}}}, runtime.DeepCopyJSON(config), "applier", false)
	if err != nil {
		t.Fatal(err)
	}
	live = redecode(t, live, false)
	for _, x := range managedFieldsOf(live) {
		e := x.(map[string]any)
		if e["manager"] == "before-first-apply" {
			e["fieldsV1"] = map[string]any{"f:spec": map[string]any{"f:selector": map[string]any{"f:k": map[string]any{}}}}
		}
	}
	config["spec"].(map[string]any)["count"] = int64(2)

	want, err := slow.Apply(runtime.DeepCopyJSON(live), runtime.DeepCopyJSON(config), "applier", false)
	if err != nil {
		t.Fatal(err)
	}
	fast := gadgetManager(t, false)
	for _, raw := range []bool{false, true} {
		got, err := fast.Apply(redecode(t, live, raw), runtime.DeepCopyJSON(config), "applier", false)
		if err != nil {
			t.Fatal(err)
		}
		got = redecode(t, got, false)
		if g, w := summary(got), summary(redecode(t, want, false)); !reflect.DeepEqual(g, w) {
			t.Errorf("raw %v: entries\n%v\nwant\n%v", raw, g, w)
		}
	}
	// What the test stands on: reconciliation changed the entry.
	if s := strings.Join(summary(want), " "); !strings.Contains(s, `{"f:spec":{"f:selector":{}}}`) {
		t.Errorf("structured-merge-diff did not reconcile the entry: %s", s)
	}
}
