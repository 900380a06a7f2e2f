package watchcache

import (
	"sync"
	"sync/atomic"
	"testing"
)

// A view is built once per key however many callers ask at once, and an
// item keeps the newest maxViews of them.
func TestItemView(t *testing.T) {
	it := &Item{Key: "k"}
	it.SetJSON([]byte(`{}`), nil, nil)
	var builds atomic.Int32
	build := func(v string) func(*Item) any {
		return func(*Item) any { builds.Add(1); return v }
	}
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			if got := it.View("a", build("A")); got != "A" {
				t.Errorf("view a = %v", got)
			}
		})
	}
	wg.Wait()
	if n := builds.Load(); n != 1 {
		t.Errorf("view a built %d times, want once", n)
	}
	if got := it.View("b", build("B")); got != "B" {
		t.Errorf("view b = %v", got)
	}
	if got := it.View("a", build("A2")); got != "A" {
		t.Errorf("view a after b = %v, want the kept A", got)
	}
	// A third key makes room by dropping the oldest (a).
	it.View("c", build("C"))
	if got := it.View("a", build("A3")); got != "A3" {
		t.Errorf("view a after c = %v, want it built again", got)
	}
	if n := len(*it.views.Load()); n != maxViews {
		t.Errorf("%d views kept, want %d", n, maxViews)
	}
}
