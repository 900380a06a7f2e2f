package apply

import (
	"fmt"
	"maps"
	"math/rand"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

// TestApplyKeepingAllMatches applies random configurations in turn, by
// two managers, each again, changed, grown or shrunk now and then, once
// with keepingAll's shortcut of structured-merge-diff's prune and once
// without, and wants the same answers: objects, entries and errors.
func TestApplyKeepingAllMatches(t *testing.T) {
	for seed := range int64(4) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) { applyKeepingAllMatches(t, seed) })
	}
}

func applyKeepingAllMatches(t *testing.T, seed int64) {
	rng := rand.New(rand.NewSource(seed))
	fast, slow := gadgetManager(t, false), gadgetManager(t, true)
	config := func() map[string]any {
		c := randomGadget(rng)
		delete(c["metadata"].(map[string]any), "managedFields")
		return c
	}
	shortcuts, applies := 0, 0
	for i := range 400 {
		var liveF, liveS map[string]any
		last := map[string]map[string]any{}
		for step := range 6 {
			manager := []string{"a", "b"}[rng.Intn(2)]
			force := rng.Intn(2) == 0
			c := config()
			if prev, ok := last[manager]; ok {
				switch rng.Intn(4) {
				case 0: // the same again
					c = runtime.DeepCopyJSON(prev)
				case 1: // grown: what it applied, with more
					grown := runtime.DeepCopyJSON(prev)
					if spec, ok := c["spec"].(map[string]any); ok {
						if old, ok := grown["spec"].(map[string]any); ok {
							maps.Copy(spec, old)
						}
						grown["spec"] = spec
					}
					c = grown
				case 2: // shrunk: without a field it applied
					c = runtime.DeepCopyJSON(prev)
					if spec, ok := c["spec"].(map[string]any); ok {
						for k := range spec {
							delete(spec, k)
							break
						}
					}
				}
			}
			if liveF != nil && manager == "a" {
				if shortcut(t, fast, liveF, c, manager) {
					shortcuts++
				}
			}
			applies++
			of, errF := fast.Apply(runtime.DeepCopyJSON(liveF), runtime.DeepCopyJSON(c), manager, force)
			os, errS := slow.Apply(runtime.DeepCopyJSON(liveS), runtime.DeepCopyJSON(c), manager, force)
			if (errF == nil) != (errS == nil) || errF != nil && !sameLines(errF.Error(), errS.Error()) {
				t.Fatalf("run %d step %d: errors differ:\nshortcut %v\nprune    %v", i, step, errF, errS)
			}
			if errF != nil {
				continue
			}
			// Entries are sorted by time (in seconds) before names, and the
			// two ways ran at different instants: compare them as sets.
			f, s := summary(of), summary(os)
			slices.Sort(f)
			slices.Sort(s)
			if !reflect.DeepEqual(f, s) {
				t.Fatalf("run %d step %d, %s applying %v:\nshortcut %v\nprune    %v", i, step, manager, c, f, s)
			}
			if f, s := shallowWithoutManagedFields(of), shallowWithoutManagedFields(os); !reflect.DeepEqual(f, s) {
				t.Fatalf("run %d step %d, %s applying %v:\nshortcut %v\nprune    %v", i, step, manager, c, f, s)
			}
			liveF, liveS, last[manager] = of, os, c
		}
	}
	t.Logf("%d of %d applies took the shortcut", shortcuts, applies)
	if shortcuts < applies/20 {
		t.Errorf("%d of %d applies took the shortcut", shortcuts, applies)
	}
}

// shortcut reports whether applying config to live by manager leaves its
// last entry out of structured-merge-diff's prune.
func shortcut(t *testing.T, m *Manager, live, config map[string]any, manager string) bool {
	mf, err := decodeManaged(managedFieldsOf(live))
	if err != nil {
		t.Fatal(err)
	}
	pt, err := m.typed(config)
	if err != nil {
		return false
	}
	id := managerID{Manager: manager, Operation: opApply, Subresource: m.Subresource}.String()
	return len(m.keepingAll(m.updater(), pt, mf.fields, id)) < len(mf.fields)
}

// sameLines reports whether errors a and b say the same. A configuration
// that does not fit the schema fails before the paths part, and
// structured-merge-diff words that in map order, listing some of its
// faults or all: those need only both fail so.
func sameLines(a, b string) bool {
	const misfit = "failed to create typed patch object"
	if strings.HasPrefix(a, misfit) && strings.HasPrefix(b, misfit) {
		return true
	}
	return a == b
}
