package apply

import (
	"math/rand"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// TestCoversMatchesDifference checks covers against what it stands for,
// structured-merge-diff's Difference of a field set and a configuration's
// fields with status reset, on random gadgets: the fields of one
// configuration (status left in now and then), looked up in another that
// is the same, changed, grown or shrunk. covers may answer unknown, never
// wrongly; and it must answer most of them.
func TestCoversMatchesDifference(t *testing.T) {
	m := gadgetManager(t, false)
	version := fieldpath.APIVersion(m.apiVersion())
	reset := m.Reset[version]
	filter := fieldpath.NewExcludeFilterSetMap(m.Reset)[version]
	rng := rand.New(rand.NewSource(1))
	counts := map[coverage]int{}
	for i := range 20000 {
		a := randomGadget(rng)
		b := runtime.DeepCopyJSON(a)
		switch rng.Intn(4) {
		case 0:
			b = randomGadget(rng)
		case 1: // grown
			if spec, ok := b["spec"].(map[string]any); ok {
				if more, ok := randomGadget(rng)["spec"].(map[string]any); ok {
					for k, v := range more {
						if _, had := spec[k]; !had {
							spec[k] = v
						}
					}
				}
			}
		case 2: // shrunk
			if spec, ok := b["spec"].(map[string]any); ok {
				for k := range spec {
					delete(spec, k)
					break
				}
			}
		}
		at, err := m.typed(a)
		if err != nil {
			continue
		}
		bt, err := m.typed(b)
		if err != nil {
			continue
		}
		last, err := at.ToFieldSet()
		if err != nil {
			continue
		}
		if rng.Intn(3) > 0 {
			last = filter.Filter(last)
		}
		set, err := bt.ToFieldSet()
		if err != nil {
			continue
		}
		want := last.Difference(filter.Filter(set)).Empty()
		got := covers(bt.Schema(), bt.TypeRef(), b, last, reset)
		counts[got]++
		if got == covered && !want || got == uncovered && want {
			t.Fatalf("case %d: covers says %v, Difference says covered=%v\nlast:\n%v\nconfig: %v", i, got, want, last, b)
		}
	}
	t.Logf("covered %d, uncovered %d, unknown %d", counts[covered], counts[uncovered], counts[unknown])
	if known := counts[covered] + counts[uncovered]; known < 3*counts[unknown] || counts[covered] < 1000 {
		t.Errorf("covers answered too few: %v", counts)
	}
}

// String names c in the test's failures.
func (c coverage) String() string {
	return [...]string{"uncovered", "covered", "unknown"}[c]
}
