package apply

import (
	"fmt"
	"maps"
	"math/rand"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

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
	// Each step's changes take a time of their own, the same both ways:
	// entries whose time changes, and those whose does not, must match.
	defer func(f func() string) { now = f }(now)
	var clock time.Time
	config := func() map[string]any {
		c := randomGadget(rng)
		delete(c["metadata"].(map[string]any), "managedFields")
		return c
	}
	shortcuts, agains, raws, applies := 0, 0, 0, 0
	for i := range 400 {
		var liveF, liveS map[string]any
		last := map[string]map[string]any{}
		for step := range 6 {
			manager := []string{"a", "b", kubectlManager}[rng.Intn(3)]
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
				case 3: // changed: what it applied, with other values
					c = runtime.DeepCopyJSON(prev)
					for range 1 + rng.Intn(3) {
						changeLeaf(rng, c)
					}
				}
			}
			if liveF != nil && manager == "a" {
				if shortcut(t, fast, liveF, c, manager) {
					shortcuts++
				}
			}
			if liveF != nil && appliesAgain(t, fast, liveF, c, manager) {
				agains++
			}
			applies++
			clock = clock.Add(time.Minute)
			now = func() string { return clock.Format(time.RFC3339) }
			inF := runtime.DeepCopyJSON(liveF)
			if liveF != nil && rng.Intn(2) == 0 {
				// As the handler reads it: entries kept encoded.
				inF = redecode(t, liveF, true)
				if _, ok, _ := fast.applyAgainRaw(redecode(t, liveF, true), runtime.DeepCopyJSON(c), manager); ok {
					raws++
				}
			}
			of, errF := fast.Apply(inF, runtime.DeepCopyJSON(c), manager, force)
			os, errS := slow.Apply(runtime.DeepCopyJSON(liveS), runtime.DeepCopyJSON(c), manager, force)
			if errF == nil && errS == nil {
				// Both as stored and read back.
				of, os = redecode(t, of, false), redecode(t, os, false)
			}
			if (errF == nil) != (errS == nil) || errF != nil && !sameLines(errF.Error(), errS.Error()) {
				t.Fatalf("run %d step %d: errors differ:\nshortcut %v\nprune    %v", i, step, errF, errS)
			}
			if errF != nil {
				continue
			}
			// Entries are sorted by time (in seconds) before names, and the
			// two ways ran at different instants: compare them as sets.
			f, s := timedSummary(of), timedSummary(os)
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
	t.Logf("%d of %d applies took the shortcut, %d applyAgain, %d applyAgainRaw", shortcuts, applies, agains, raws)
	if shortcuts < applies/20 {
		t.Errorf("%d of %d applies took the shortcut", shortcuts, applies)
	}
	if agains < applies/20 || raws < applies/40 {
		t.Errorf("%d of %d applies took applyAgain, %d applyAgainRaw", agains, applies, raws)
	}
}

// timedSummary is summary with each entry's time.
func timedSummary(o map[string]any) []string {
	out := summary(o)
	for i, x := range managedFieldsOf(o) {
		out[i] += fmt.Sprint(" at ", x.(map[string]any)["time"])
	}
	return out
}

// appliesAgain reports whether applying config to live by manager takes
// applyAgain's way.
func appliesAgain(t *testing.T, m *Manager, live, config map[string]any, manager string) bool {
	mf, err := decodeManaged(managedFieldsOf(live))
	if err != nil {
		t.Fatal(err)
	}
	pt, err := m.Types.Version(m.GroupVersion.Version)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.typed(config); err != nil {
		return false
	}
	id := managerID{Manager: manager, Operation: opApply, Subresource: m.Subresource}.String()
	l := runtime.DeepCopyJSON(live)
	_, _, ok := m.applyAgain(pt, l, runtime.DeepCopyJSON(config), mf, id)
	if !reflect.DeepEqual(l, live) {
		t.Fatalf("applyAgain changed the live object:\nbefore %v\nafter  %v", live, l)
	}
	return ok
}

// changeLeaf gives one scalar of obj's spec, found by a random descent,
// another value of its kind (or of another kind, now and then), or
// reverses a list on the way.
func changeLeaf(rng *rand.Rand, obj map[string]any) {
	var cur any = obj["spec"]
	for {
		switch x := cur.(type) {
		case map[string]any:
			if len(x) == 0 {
				return
			}
			keys := slices.Sorted(maps.Keys(x))
			k := keys[rng.Intn(len(keys))]
			if next, ok := changed(rng, x[k]); ok {
				x[k] = next
				return
			}
			cur = x[k]
		case []any:
			if len(x) == 0 {
				return
			}
			if len(x) > 1 && rng.Intn(4) == 0 {
				// The same items in another order.
				slices.Reverse(x)
				return
			}
			i := rng.Intn(len(x))
			if next, ok := changed(rng, x[i]); ok {
				x[i] = next
				return
			}
			cur = x[i]
		default:
			return
		}
	}
}

// changed is another value for a scalar v.
func changed(rng *rand.Rand, v any) (any, bool) {
	if rng.Intn(20) == 0 {
		return float64(rng.Intn(3)), true
	}
	switch x := v.(type) {
	case string:
		return x + "x", true
	case int64:
		if rng.Intn(4) == 0 {
			return float64(x), true // the same number, as a float
		}
		return x + 1 + int64(rng.Intn(2)), true
	case float64:
		return x + 0.5, true
	case bool:
		return !x, true
	case nil:
		return "n", true
	}
	return nil, false
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
