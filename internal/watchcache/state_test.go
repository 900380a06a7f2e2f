package watchcache

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
)

// The window drops its oldest changes when it holds too many or too many
// bytes, and starts at the revision of the last one dropped.
func TestWindowBounds(t *testing.T) {
	tests := []struct {
		name      string
		size      int
		maxBytes  int64
		floor     int
		sizes     []int64 // of changes at revs 1, 2, ...
		wantRevs  []int64
		wantStart int64
	}{
		{name: "under both", size: 4, maxBytes: 100, sizes: []int64{10, 10, 10}, wantRevs: []int64{1, 2, 3}, wantStart: 0},
		{name: "count", size: 2, maxBytes: 100, sizes: []int64{10, 10, 10}, wantRevs: []int64{2, 3}, wantStart: 1},
		{name: "bytes", size: 10, maxBytes: 25, sizes: []int64{10, 10, 10, 10}, wantRevs: []int64{3, 4}, wantStart: 2},
		{name: "bytes exact", size: 10, maxBytes: 30, sizes: []int64{10, 10, 10}, wantRevs: []int64{1, 2, 3}, wantStart: 0},
		{name: "big one evicts many", size: 10, maxBytes: 30, sizes: []int64{10, 10, 10, 25}, wantRevs: []int64{4}, wantStart: 3},
		{name: "oversized alone", size: 10, maxBytes: 30, sizes: []int64{10, 40}, wantRevs: nil, wantStart: 2},
		{name: "after oversized", size: 10, maxBytes: 30, sizes: []int64{40, 10}, wantRevs: []int64{2}, wantStart: 1},
		{name: "floor keeps big ones", size: 10, maxBytes: 30, floor: 3, sizes: []int64{40, 40, 40, 40}, wantRevs: []int64{2, 3, 4}, wantStart: 1},
		{name: "floor under bytes", size: 10, maxBytes: 30, floor: 1, sizes: []int64{10, 10, 10, 10}, wantRevs: []int64{2, 3, 4}, wantStart: 1},
		{name: "ring grows to size", size: 100, maxBytes: 1000, sizes: slices.Repeat([]int64{1}, 150), wantRevs: seq(51, 150), wantStart: 50},
		{name: "ring grows to an odd size", size: 130, maxBytes: 1000, sizes: slices.Repeat([]int64{1}, 150), wantRevs: seq(21, 150), wantStart: 20},
		// rev 1 (50 bytes) leaves at rev 23, so the ring has wrapped when it
		// fills at rev 66 and grows.
		{name: "ring grows when wrapped", size: 1000, maxBytes: 120,
			sizes:    slices.Concat([]int64{50}, slices.Repeat([]int64{1}, 20), []int64{50}, slices.Repeat([]int64{1}, 44)),
			wantRevs: seq(2, 66), wantStart: 1},
		{name: "bytes while growing", size: 1000, maxBytes: 100, sizes: slices.Repeat([]int64{1}, 300), wantRevs: seq(201, 300), wantStart: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWindow(tt.size, tt.maxBytes)
			w.floor = tt.floor
			for i, n := range tt.sizes {
				w.push(&change{rev: int64(i + 1), size: n})
			}
			var revs []int64
			var bytes int64
			for i := range w.count {
				revs = append(revs, w.at(i).rev)
				bytes += w.at(i).size
			}
			if !slices.Equal(revs, tt.wantRevs) || w.start != tt.wantStart {
				t.Errorf("holds %v from %d, want %v from %d", revs, w.start, tt.wantRevs, tt.wantStart)
			}
			if w.bytes != bytes || (w.bytes > tt.maxBytes && w.count > tt.floor) {
				t.Errorf("bytes %d, held changes sum to %d, bound %d beyond the newest %d", w.bytes, bytes, tt.maxBytes, tt.floor)
			}
		})
	}
}

func seq(from, to int64) []int64 {
	var out []int64
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

// Taking a snapshot charges the change it is kept with, and may push old
// changes out.
func TestWindowChargeTrims(t *testing.T) {
	w := newWindow(10, 30)
	for i := range 3 {
		w.push(&change{rev: int64(i + 1), size: 10})
	}
	w.charge(w.at(2), 15)
	if w.count != 1 || w.at(0).rev != 3 || w.start != 2 || w.bytes != 25 {
		t.Fatalf("count %d start %d bytes %d, want only rev 3 from 2 with 25 bytes", w.count, w.start, w.bytes)
	}
}

// A watch from a revision the byte bound has pushed out of the window is
// told 410 Expired; one from the window's start gets every later change.
func TestWatchWindowBytes(t *testing.T) {
	r := newMemRig(t, Options{})
	// One update's charge: the superseded object plus the change.
	first := r.create("a", "x", "v", "0")
	r.waitRev(first)
	prev, _ := r.cache.Get(context.Background(), key("a", "x"), GetOptions{ResourceVersion: "0"})
	perUpdate := changeBytes(&change{cur: prev, prev: prev})

	r = newMemRig(t, Options{WindowBytes: 3*perUpdate + perUpdate/2})
	r.cache.mu.Lock()
	r.cache.win.floor = 0 // the byte bound alone
	r.cache.mu.Unlock()
	var revs []int64
	revs = append(revs, r.create("a", "x", "v", "0"))
	for i := 1; i <= 6; i++ {
		revs = append(revs, r.update("a", "x", "v", strconv.Itoa(i)))
	}
	r.waitRev(revs[len(revs)-1])

	r.cache.mu.RLock()
	start, count, bytes := r.cache.win.start, r.cache.win.count, r.cache.win.bytes
	r.cache.mu.RUnlock()
	if count != 3 || start != revs[3] {
		t.Fatalf("window holds %d changes from %d, want 3 from %d", count, start, revs[3])
	}
	if bytes > r.cache.opts.WindowBytes {
		t.Fatalf("window holds %d bytes, bound %d", bytes, r.cache.opts.WindowBytes)
	}

	w, err := r.cache.Watch(context.Background(), WatchOptions{ResourceVersion: strconv.FormatInt(revs[2], 10)})
	if err != nil {
		t.Fatal(err)
	}
	evs := closed(t, w)
	if len(evs) != 1 || evs[0].Type != Error || !apierrors.IsResourceExpired(evs[0].Err) {
		t.Fatalf("watch from %d: got %v, want 410 Expired", revs[2], evs)
	}

	w, err = r.cache.Watch(context.Background(), WatchOptions{ResourceVersion: strconv.FormatInt(revs[3], 10)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for _, want := range revs[4:] {
		if ev := next(t, w); ev.Type != Modified || ev.Item.Revision != want {
			t.Fatalf("got %s, want MODIFIED at %d", evString(ev), want)
		}
	}
}

// Exact lists at revisions nobody listed before are rebuilt from the
// window's changes, without storage, and the rebuilt state is kept for the
// next page.
func TestListExactRebuilt(t *testing.T) {
	r := newMemRig(t, Options{})
	revs := history(r)
	calls := r.listCalls()
	want := map[int64][]string{
		revs[1]: {"a/x1"},
		revs[2]: {"a/x1", "a/y1"},
		revs[3]: {"a/x1", "a/y1", "b/x2"},
		revs[4]: {"a/x1", "a/y1", "b/x2"},
		revs[5]: {"a/x1", "b/x2"},
	}
	// Newest first, then oldest first: rebuilding from the live tree and
	// from a kept snapshot.
	for _, i := range []int{5, 3, 1, 2, 4} {
		rev := revs[i]
		res, err := r.cache.List(context.Background(), ListOptions{ResourceVersion: strconv.FormatInt(rev, 10), ResourceVersionMatch: MatchExact})
		if err != nil {
			t.Fatalf("list at %d: %v", rev, err)
		}
		if got := names(res.Items); !slices.Equal(got, want[rev]) || res.ResourceVersion != rev {
			t.Errorf("list at %d: got %v at %d, want %v", rev, got, res.ResourceVersion, want[rev])
		}
		if i == 4 {
			// a/x1 as updated at revs[4], not its earlier state.
			if it := res.Items[0]; it.Revision != revs[4] {
				t.Errorf("list at %d: a/x1 at %d, want %d", rev, it.Revision, revs[4])
			}
		}
		a, _ := r.cache.snapshotAt(rev)
		b, _ := r.cache.snapshotAt(rev)
		if a != b {
			t.Errorf("snapshot at %d not kept", rev)
		}
	}
	if got := r.listCalls(); got != calls {
		t.Errorf("storage lists: %d, want none", got-calls)
	}
	checkCharges(t, r.cache)
}

// checkCharges checks that the window charges each held change once for
// itself and once for its snapshot, if one is kept.
func checkCharges(t *testing.T, c *Cache) {
	t.Helper()
	c.mu.RLock()
	defer c.mu.RUnlock()
	var sum int64
	for i := range c.win.count {
		ch := c.win.at(i)
		want := changeBytes(ch)
		if ch.snap != nil {
			want += snapshotBytes(ch.snap.Len())
		}
		if ch.size != want {
			t.Errorf("change at %d charged %d, want %d", ch.rev, ch.size, want)
		}
		sum += ch.size
	}
	if c.win.bytes != sum {
		t.Errorf("window bytes %d, changes sum to %d", c.win.bytes, sum)
	}
}

// A list at the newest revision keeps its snapshot, so the next page reads
// the same state after later writes.
func TestListLatestKeptForNextPage(t *testing.T) {
	r := newMemRig(t, Options{})
	for i := range 5 {
		r.create("a", fmt.Sprintf("o%d", i))
	}
	r.waitRev(r.create("a", "o5"))
	res, err := r.cache.List(context.Background(), ListOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	r.delete("a", "o3")
	r.waitRev(r.create("a", "o2a"))
	var got []string
	got = append(got, names(res.Items)...)
	for res.Continue != "" {
		res, err = r.cache.List(context.Background(), ListOptions{Limit: 2, Continue: res.Continue})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, names(res.Items)...)
	}
	if want := []string{"a/o0", "a/o1", "a/o2", "a/o3", "a/o4", "a/o5"}; !slices.Equal(got, want) {
		t.Errorf("pages: got %v, want %v", got, want)
	}
}

// Field selectors on metadata.name and metadata.namespace work when the
// decoder leaves them out of Item.Fields.
func TestItemFieldsFallback(t *testing.T) {
	namespaced := &Item{Name: "x", Namespace: "a"}
	cluster := &Item{Name: "x", Fields: fields.Set{"spec.color": "red"}}
	tests := []struct {
		sel  string
		it   *Item
		want bool
	}{
		{"metadata.name=x", namespaced, true},
		{"metadata.name=y", namespaced, false},
		{"metadata.namespace=a", namespaced, true},
		{"metadata.namespace!=a", namespaced, false},
		{"metadata.name=x", cluster, true},
		{"metadata.namespace=", cluster, true},
		{"spec.color=red,metadata.name=x", cluster, true},
		{"spec.color=blue", cluster, false},
		{"spec.color=", namespaced, true},
	}
	for _, tt := range tests {
		sel, err := fields.ParseSelector(tt.sel)
		if err != nil {
			t.Fatal(err)
		}
		f := newFilter("", nil, sel)
		if got := f.matches(tt.it); got != tt.want {
			t.Errorf("%s on %+v: got %v, want %v", tt.sel, tt.it, got, tt.want)
		}
	}
}
