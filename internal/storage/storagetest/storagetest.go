// Package storagetest is the conformance suite for storage.Interface. Every
// backend, and every layer that claims to behave like one, runs Run.
package storagetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crdserver/crdserver/internal/storage"
)

// Compactor is implemented by stores that can discard history. The suite's
// compaction tests run only for them.
type Compactor interface {
	// Compact discards the history before rev.
	Compact(ctx context.Context, rev int64) error
}

// Timeout bounds each subtest, including every wait for a watch event.
var Timeout = 60 * time.Second

// Run runs the suite. newStore is called once per subtest and may return
// the same store every time: each subtest works under its own unique key
// prefix. The subtests run in parallel, except the compaction tests, which
// run first and alone because compaction discards the history of the whole
// store; do not share the store with tests running outside Run.
func Run(t *testing.T, newStore func(t *testing.T) storage.Interface) {
	t.Run("Compaction", func(t *testing.T) {
		s := newStore(t)
		c, ok := s.(Compactor)
		if !ok {
			t.Skipf("%T cannot compact", s)
		}
		testCompaction(t, s, c, newPrefix(t))
	})
	tests := []struct {
		name string
		fn   func(t *testing.T, s storage.Interface, prefix string)
	}{
		{"CreateGet", testCreateGet},
		{"Update", testUpdate},
		{"Delete", testDelete},
		{"GuaranteedUpdate", testGuaranteedUpdate},
		{"GuaranteedUpdateConcurrent", testGuaranteedUpdateConcurrent},
		{"ListPaging", testListPaging},
		{"ListEmpty", testListEmpty},
		{"ListAtRevision", testListAtRevision},
		{"Count", testCount},
		{"CurrentRevision", testCurrentRevision},
		{"WatchFromRevision", testWatchFromRevision},
		{"WatchResumeFromEveryRevision", testWatchResume},
		{"WatchFromNow", testWatchFromNow},
		{"WatchPrefixOnly", testWatchPrefixOnly},
		{"WatchCancel", testWatchCancel},
		{"WatchProgress", testWatchProgress},
		{"ConcurrentHistory", testConcurrentHistory},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newStore(t), newPrefix(t))
		})
	}
}

// newPrefix returns a key prefix no other test (or earlier run against a
// persistent store) uses.
func newPrefix(t *testing.T) string {
	b := make([]byte, 4)
	rand.Read(b)
	return "/storagetest/" + t.Name() + "-" + hex.EncodeToString(b) + "/"
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), Timeout)
	t.Cleanup(cancel)
	return ctx
}

func testCreateGet(t *testing.T, s storage.Interface, prefix string) {
	ctx := testContext(t)
	key := prefix + "a"
	rev := mustCreate(t, s, key, "v1")
	if rev <= 0 {
		t.Fatalf("Create returned revision %d, want > 0", rev)
	}
	got, err := s.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	want := storage.KeyValue{Key: key, Value: []byte("v1"), ModRevision: rev}
	checkKV(t, "Get", got, want)

	if _, err := s.Create(ctx, key, []byte("v2")); !errors.Is(err, storage.ErrExists) {
		t.Errorf("Create of an existing key: err = %v, want ErrExists", err)
	}
	if got, _ := s.Get(ctx, key); string(got.Value) != "v1" {
		t.Errorf("failed Create changed the value to %q", got.Value)
	}
	if _, err := s.Get(ctx, prefix+"missing"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Get of a missing key: err = %v, want ErrNotFound", err)
	}
	// Empty values are values.
	erev := mustCreate(t, s, prefix+"empty", "")
	got, err = s.Get(ctx, prefix+"empty")
	if err != nil || len(got.Value) != 0 || got.ModRevision != erev {
		t.Errorf("Get of an empty value = %+v, %v", got, err)
	}
}

func testUpdate(t *testing.T, s storage.Interface, prefix string) {
	ctx := testContext(t)
	key := prefix + "a"
	rev1 := mustCreate(t, s, key, "v1")
	rev2, err := s.Update(ctx, key, []byte("v2"), rev1)
	if err != nil {
		t.Fatal(err)
	}
	if rev2 <= rev1 {
		t.Errorf("Update returned revision %d, want > %d", rev2, rev1)
	}
	got, err := s.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	checkKV(t, "Get after Update", got, storage.KeyValue{Key: key, Value: []byte("v2"), ModRevision: rev2})

	for _, tc := range []struct {
		name string
		key  string
		rev  int64
		want error
	}{
		{"stale revision", key, rev1, storage.ErrConflict},
		{"future revision", key, rev2 + 1000, storage.ErrConflict},
		{"zero revision", key, 0, storage.ErrConflict},
		{"missing key", prefix + "missing", rev2, storage.ErrNotFound},
		{"missing key, zero revision", prefix + "missing", 0, storage.ErrNotFound},
	} {
		if _, err := s.Update(ctx, tc.key, []byte("bad"), tc.rev); !errors.Is(err, tc.want) {
			t.Errorf("Update, %s: err = %v, want %v", tc.name, err, tc.want)
		}
	}
	if got, _ := s.Get(ctx, key); string(got.Value) != "v2" || got.ModRevision != rev2 {
		t.Errorf("failed updates changed the key: %+v", got)
	}
	if _, err := s.Get(ctx, prefix+"missing"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("failed Update created the key: Get err = %v", err)
	}
}

func testDelete(t *testing.T, s storage.Interface, prefix string) {
	ctx := testContext(t)
	key := prefix + "a"
	rev1 := mustCreate(t, s, key, "v1")

	if _, _, err := s.Delete(ctx, key, rev1+1000); !errors.Is(err, storage.ErrConflict) {
		t.Errorf("Delete with a wrong revision: err = %v, want ErrConflict", err)
	}
	if _, err := s.Get(ctx, key); err != nil {
		t.Fatalf("failed Delete removed the key: %v", err)
	}
	prev, drev, err := s.Delete(ctx, key, rev1)
	if err != nil {
		t.Fatal(err)
	}
	checkKV(t, "Delete's previous value", prev, storage.KeyValue{Key: key, Value: []byte("v1"), ModRevision: rev1})
	if drev <= rev1 {
		t.Errorf("Delete returned revision %d, want > %d", drev, rev1)
	}
	if _, err := s.Get(ctx, key); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Get after Delete: err = %v, want ErrNotFound", err)
	}
	if _, _, err := s.Delete(ctx, key, rev1); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("second Delete: err = %v, want ErrNotFound", err)
	}
	if _, _, err := s.Delete(ctx, key, 0); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("unconditional Delete of a missing key: err = %v, want ErrNotFound", err)
	}

	// expectedRev 0 deletes whatever revision is there.
	rev2 := mustCreate(t, s, key, "v2")
	rev3, err := s.Update(ctx, key, []byte("v3"), rev2)
	if err != nil {
		t.Fatal(err)
	}
	prev, drev, err = s.Delete(ctx, key, 0)
	if err != nil {
		t.Fatal(err)
	}
	checkKV(t, "unconditional Delete's previous value", prev, storage.KeyValue{Key: key, Value: []byte("v3"), ModRevision: rev3})
	if drev <= rev3 {
		t.Errorf("Delete returned revision %d, want > %d", drev, rev3)
	}
	// A deleted key can be created again.
	mustCreate(t, s, key, "v4")
}

func testGuaranteedUpdate(t *testing.T, s storage.Interface, prefix string) {
	ctx := testContext(t)
	key := prefix + "a"
	rev := mustCreate(t, s, key, "1")

	got, err := storage.GuaranteedUpdate(ctx, s, key, func(cur storage.KeyValue) ([]byte, error) {
		return append(cur.Value, '2'), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Value) != "12" || got.ModRevision <= rev {
		t.Errorf("GuaranteedUpdate = %+v, want value 12 at a revision > %d", got, rev)
	}
	rev = got.ModRevision

	// Returning the current value writes nothing.
	got, err = storage.GuaranteedUpdate(ctx, s, key, func(cur storage.KeyValue) ([]byte, error) { return cur.Value, nil })
	if err != nil || got.ModRevision != rev {
		t.Errorf("no-op GuaranteedUpdate = %+v, %v; want the key unchanged at %d", got, err, rev)
	}
	if now, _ := s.Get(ctx, key); now.ModRevision != rev {
		t.Errorf("no-op GuaranteedUpdate wrote: revision %d, want %d", now.ModRevision, rev)
	}

	boom := errors.New("boom")
	if _, err := storage.GuaranteedUpdate(ctx, s, key, func(storage.KeyValue) ([]byte, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Errorf("GuaranteedUpdate with a failing tryUpdate: err = %v, want boom", err)
	}
	if _, err := storage.GuaranteedUpdate(ctx, s, prefix+"missing", func(cur storage.KeyValue) ([]byte, error) { return []byte("x"), nil }); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("GuaranteedUpdate of a missing key: err = %v, want ErrNotFound", err)
	}
}

// testGuaranteedUpdateConcurrent increments one counter from several
// goroutines; a lost update would show as a smaller total.
func testGuaranteedUpdateConcurrent(t *testing.T, s storage.Interface, prefix string) {
	ctx := testContext(t)
	key := prefix + "counter"
	mustCreate(t, s, key, "0")
	const workers, each = 4, 10
	errc := make(chan error, workers)
	for range workers {
		go func() {
			for range each {
				_, err := storage.GuaranteedUpdate(ctx, s, key, func(cur storage.KeyValue) ([]byte, error) {
					var n int
					if _, err := fmt.Sscan(string(cur.Value), &n); err != nil {
						return nil, err
					}
					return fmt.Append(nil, n+1), nil
				})
				if err != nil {
					errc <- err
					return
				}
			}
			errc <- nil
		}()
	}
	for range workers {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprint(workers * each); string(got.Value) != want {
		t.Errorf("counter = %s, want %s", got.Value, want)
	}
}

func testListPaging(t *testing.T, s storage.Interface, prefix string) {
	ctx := testContext(t)
	var keys []string
	for i := range 7 {
		k := fmt.Sprintf("%sk%d", prefix, i)
		keys = append(keys, k)
		mustCreate(t, s, k, "v"+fmt.Sprint(i))
	}
	// Neighbours that share the prefix's characters but not the prefix.
	base := strings.TrimSuffix(prefix, "/")
	mustCreate(t, s, base, "outside")
	mustCreate(t, s, base+"x/k", "outside")

	all, err := s.List(ctx, prefix, storage.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := listKeys(all.Items); !slices.Equal(got, keys) {
		t.Fatalf("List = %v, want %v", got, keys)
	}
	if all.More || all.Remaining != 0 || all.Revision <= 0 {
		t.Errorf("full List: More=%v Remaining=%d Revision=%d", all.More, all.Remaining, all.Revision)
	}
	for i, kv := range all.Items {
		if string(kv.Value) != "v"+fmt.Sprint(i) || kv.ModRevision <= 0 || kv.ModRevision > all.Revision {
			t.Errorf("item %d = %+v", i, kv)
		}
	}

	// Pages at the first page's revision see a snapshot: a write after
	// the first page does not show up.
	opts := storage.ListOptions{Limit: 3}
	var paged []string
	wantPages := []struct {
		n         int
		more      bool
		remaining int64
	}{{3, true, 4}, {3, true, 1}, {1, false, 0}}
	for i, want := range wantPages {
		page, err := s.List(ctx, prefix, opts)
		if err != nil {
			t.Fatalf("page %d: %v", i, err)
		}
		if len(page.Items) != want.n || page.More != want.more || page.Remaining != want.remaining {
			t.Errorf("page %d: %d items, More=%v, Remaining=%d; want %d, %v, %d",
				i, len(page.Items), page.More, page.Remaining, want.n, want.more, want.remaining)
		}
		if i == 0 {
			opts.Revision = page.Revision
			mustCreate(t, s, prefix+"k3a", "late")
		} else if page.Revision != opts.Revision {
			t.Errorf("page %d at revision %d, want %d", i, page.Revision, opts.Revision)
		}
		paged = append(paged, listKeys(page.Items)...)
		if len(page.Items) == 0 {
			break
		}
		opts.StartKey = page.Items[len(page.Items)-1].Key + "\x00"
	}
	if !slices.Equal(paged, keys) {
		t.Errorf("paged List = %v, want %v", paged, keys)
	}

	// StartKey is inclusive.
	page, err := s.List(ctx, prefix, storage.ListOptions{StartKey: keys[5]})
	if err != nil {
		t.Fatal(err)
	}
	if got := listKeys(page.Items); !slices.Equal(got, keys[5:]) {
		t.Errorf("List from %q = %v, want %v", keys[5], got, keys[5:])
	}
}

func testListEmpty(t *testing.T, s storage.Interface, prefix string) {
	ctx := testContext(t)
	res, err := s.List(ctx, prefix, storage.ListOptions{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != 0 || res.More || res.Remaining != 0 {
		t.Errorf("List of an empty prefix = %+v", res)
	}
	if res.Revision <= 0 {
		t.Errorf("List of an empty prefix at revision %d, want > 0", res.Revision)
	}
}

func testListAtRevision(t *testing.T, s storage.Interface, prefix string) {
	ctx := testContext(t)
	a, b := prefix+"a", prefix+"b"
	r1 := mustCreate(t, s, a, "a1")
	r2 := mustCreate(t, s, b, "b1")
	r3, err := s.Update(ctx, a, []byte("a2"), r1)
	if err != nil {
		t.Fatal(err)
	}
	_, r4, err := s.Delete(ctx, b, r2)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		rev  int64
		want []storage.KeyValue
	}{
		{r1 - 1, nil},
		{r1, []storage.KeyValue{kv(a, []byte("a1"), r1)}},
		{r2, []storage.KeyValue{kv(a, []byte("a1"), r1), kv(b, []byte("b1"), r2)}},
		{r3, []storage.KeyValue{kv(a, []byte("a2"), r3), kv(b, []byte("b1"), r2)}},
		{r4, []storage.KeyValue{kv(a, []byte("a2"), r3)}},
		{0, []storage.KeyValue{kv(a, []byte("a2"), r3)}},
	} {
		res, err := s.List(ctx, prefix, storage.ListOptions{Revision: tc.rev})
		if err != nil {
			t.Errorf("List at %d: %v", tc.rev, err)
			continue
		}
		checkKVs(t, fmt.Sprintf("List at %d", tc.rev), res.Items, tc.want)
		if tc.rev != 0 && res.Revision != tc.rev {
			t.Errorf("List at %d reports revision %d", tc.rev, res.Revision)
		}
		if tc.rev == 0 && res.Revision < r4 {
			t.Errorf("latest List reports revision %d, want >= %d", res.Revision, r4)
		}
	}
	cur, err := s.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.List(ctx, prefix, storage.ListOptions{Revision: cur + 1_000_000}); !errors.Is(err, storage.ErrFutureRev) {
		t.Errorf("List at a future revision: err = %v, want ErrFutureRev", err)
	}
}

func testCount(t *testing.T, s storage.Interface, prefix string) {
	ctx := testContext(t)
	count := func(want int64) {
		t.Helper()
		n, err := s.Count(ctx, prefix)
		if err != nil {
			t.Fatal(err)
		}
		if n != want {
			t.Errorf("Count = %d, want %d", n, want)
		}
	}
	count(0)
	var revs []int64
	for i := range 5 {
		revs = append(revs, mustCreate(t, s, fmt.Sprintf("%s%d", prefix, i), "v"))
	}
	mustCreate(t, s, strings.TrimSuffix(prefix, "/")+"x", "outside")
	count(5)
	if _, _, err := s.Delete(ctx, prefix+"0", revs[0]); err != nil {
		t.Fatal(err)
	}
	count(4)
}

func testCurrentRevision(t *testing.T, s storage.Interface, prefix string) {
	ctx := testContext(t)
	before, err := s.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rev := mustCreate(t, s, prefix+"a", "v")
	after, err := s.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !(before < rev && rev <= after) {
		t.Errorf("CurrentRevision %d before and %d after a write at %d", before, after, rev)
	}
}

// history writes a short known history under prefix and returns the events
// a watch must report for it.
func history(t *testing.T, s storage.Interface, prefix string) []storage.Event {
	ctx := testContext(t)
	a, b := prefix+"a", prefix+"b"
	r1 := mustCreate(t, s, a, "a1")
	r2, err := s.Update(ctx, a, []byte("a2"), r1)
	if err != nil {
		t.Fatal(err)
	}
	r3 := mustCreate(t, s, b, "b1")
	_, r4, err := s.Delete(ctx, a, r2)
	if err != nil {
		t.Fatal(err)
	}
	r5 := mustCreate(t, s, a, "a3")
	_, r6, err := s.Delete(ctx, b, 0)
	if err != nil {
		t.Fatal(err)
	}
	return []storage.Event{
		{Type: storage.EventPut, Key: a, Value: []byte("a1"), Created: true, Revision: r1},
		{Type: storage.EventPut, Key: a, Value: []byte("a2"), Revision: r2},
		{Type: storage.EventPut, Key: b, Value: []byte("b1"), Created: true, Revision: r3},
		{Type: storage.EventDelete, Key: a, Revision: r4},
		{Type: storage.EventPut, Key: a, Value: []byte("a3"), Created: true, Revision: r5},
		{Type: storage.EventDelete, Key: b, Revision: r6},
	}
}

func testWatchFromRevision(t *testing.T, s storage.Interface, prefix string) {
	ctx := testContext(t)
	want := history(t, s, prefix)
	got := collect(t, s.Watch(ctx, prefix, want[0].Revision-1), len(want))
	checkEvents(t, got, want)
}

func testWatchResume(t *testing.T, s storage.Interface, prefix string) {
	ctx := testContext(t)
	want := history(t, s, prefix)
	for i := range want {
		// Resuming from the revision of event i delivers exactly the rest.
		if i == len(want)-1 {
			break
		}
		wctx, cancel := context.WithCancel(ctx)
		got := collect(t, s.Watch(wctx, prefix, want[i].Revision), len(want)-i-1)
		cancel()
		checkEvents(t, got, want[i+1:])
	}
}

func testWatchFromNow(t *testing.T, s storage.Interface, prefix string) {
	ctx := testContext(t)
	mustCreate(t, s, prefix+"before", "v")
	w := s.Watch(ctx, prefix, 0)
	// No waiting: a watch from now must see writes made right after
	// Watch returns.
	rev := mustCreate(t, s, prefix+"after", "v")
	got := collect(t, w, 1)
	checkEvents(t, got, []storage.Event{{Type: storage.EventPut, Key: prefix + "after", Value: []byte("v"), Created: true, Revision: rev}})
}

func testWatchPrefixOnly(t *testing.T, s storage.Interface, prefix string) {
	ctx := testContext(t)
	start, err := s.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	base := strings.TrimSuffix(prefix, "/")
	mustCreate(t, s, base, "outside")
	mustCreate(t, s, base+"x/a", "outside")
	rev := mustCreate(t, s, prefix+"a", "inside")
	got := collect(t, s.Watch(ctx, prefix, start), 1)
	checkEvents(t, got, []storage.Event{{Type: storage.EventPut, Key: prefix + "a", Value: []byte("inside"), Created: true, Revision: rev}})
}

func testWatchCancel(t *testing.T, s storage.Interface, prefix string) {
	ctx, cancel := context.WithCancel(testContext(t))
	w := s.Watch(ctx, prefix, 0)
	cancel()
	timeout := time.After(Timeout)
	for {
		select {
		case ev, ok := <-w:
			if !ok {
				return
			}
			if ev.Type == storage.EventError {
				t.Errorf("canceled watch sent an error: %v", ev.Err)
			}
		case <-timeout:
			t.Fatal("watch channel not closed after its context was canceled")
		}
	}
}

func testWatchProgress(t *testing.T, s storage.Interface, prefix string) {
	ctx := testContext(t)
	r1 := mustCreate(t, s, prefix+"a", "v")
	w := s.Watch(ctx, prefix, r1-1)
	r2 := mustCreate(t, s, prefix+"b", "v")
	got := collect(t, w, 2)
	if got[1].Revision != r2 {
		t.Fatalf("second event at %d, want %d", got[1].Revision, r2)
	}
	// The watch has seen everything up to r2, so the store must confirm
	// a revision at least that high.
	if extra := waitProgress(t, s, w, r2); len(extra) > 0 {
		t.Errorf("unexpected events before progress: %+v", extra)
	}
}

// testCompaction checks that reads and watches of compacted revisions fail
// with ErrCompacted and those at or after the compaction still work.
func testCompaction(t *testing.T, s storage.Interface, c Compactor, prefix string) {
	ctx := testContext(t)
	key := prefix + "a"
	r1 := mustCreate(t, s, key, "v1")
	r2, err := s.Update(ctx, key, []byte("v2"), r1)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Compact(ctx, r2); err != nil {
		t.Fatal(err)
	}
	if _, err := s.List(ctx, prefix, storage.ListOptions{Revision: r1}); !errors.Is(err, storage.ErrCompacted) {
		t.Errorf("List at compacted revision %d: err = %v, want ErrCompacted", r1, err)
	}
	res, err := s.List(ctx, prefix, storage.ListOptions{Revision: r2})
	if err != nil {
		t.Fatalf("List at the compaction revision: %v", err)
	}
	checkKVs(t, "List at the compaction revision", res.Items, []storage.KeyValue{kv(key, []byte("v2"), r2)})
	if kv, err := s.Get(ctx, key); err != nil || string(kv.Value) != "v2" {
		t.Errorf("Get after compaction = %+v, %v", kv, err)
	}

	// A watch needing revision r1 cannot be served.
	w := s.Watch(ctx, prefix, r1-1)
	select {
	case ev, ok := <-w:
		if !ok || ev.Type != storage.EventError || !errors.Is(ev.Err, storage.ErrCompacted) {
			t.Errorf("watch from a compacted revision sent %+v (open %v), want an ErrCompacted error", ev, ok)
		}
	case <-ctx.Done():
		t.Fatal("no error from a watch from a compacted revision")
	}
	select {
	case ev, ok := <-w:
		if ok {
			t.Errorf("watch went on after its error: %+v", ev)
		}
	case <-ctx.Done():
		t.Fatal("watch channel not closed after its error")
	}

	// A watch from r1 needs revisions after r1 only: still served.
	r3, err := s.Update(ctx, key, []byte("v3"), r2)
	if err != nil {
		t.Fatal(err)
	}
	got := collect(t, s.Watch(ctx, prefix, r1), 2)
	checkEvents(t, got, []storage.Event{
		{Type: storage.EventPut, Key: key, Value: []byte("v2"), Revision: r2},
		{Type: storage.EventPut, Key: key, Value: []byte("v3"), Revision: r3},
	})
}

func mustCreate(t *testing.T, s storage.Interface, key, value string) int64 {
	t.Helper()
	rev, err := s.Create(testContext(t), key, []byte(value))
	if err != nil {
		t.Fatalf("Create %q: %v", key, err)
	}
	return rev
}

// collect reads n change events, skipping progress events (which a store
// may send at any time) and failing on errors, a closed channel or
// Timeout. A progress event older than a change already seen is an error.
func collect(t *testing.T, w <-chan storage.Event, n int) []storage.Event {
	t.Helper()
	timeout := time.After(Timeout)
	var got []storage.Event
	for len(got) < n {
		select {
		case ev, ok := <-w:
			if !ok {
				t.Fatalf("watch closed after %d of %d events", len(got), n)
			}
			switch ev.Type {
			case storage.EventError:
				t.Fatalf("watch error after %d of %d events: %v", len(got), n, ev.Err)
			case storage.EventProgress:
				if len(got) > 0 && ev.Revision < got[len(got)-1].Revision {
					t.Fatalf("progress at %d after an event at %d", ev.Revision, got[len(got)-1].Revision)
				}
			default:
				got = append(got, ev)
			}
		case <-timeout:
			t.Fatalf("got %d of %d events in %v: %+v", len(got), n, Timeout, got)
		}
	}
	return got
}

// waitProgress requests progress until w reports a revision of at least
// rev, and returns the change events received meanwhile, failing if a
// progress event is older than a change already received. A store may need
// several requests: etcd, for one, answers only when all watches sharing
// the stream have caught up.
func waitProgress(t *testing.T, s storage.Interface, w <-chan storage.Event, rev int64) []storage.Event {
	t.Helper()
	ctx := testContext(t)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var extra []storage.Event
	if err := s.RequestProgress(ctx); err != nil {
		t.Fatalf("RequestProgress: %v", err)
	}
	for {
		select {
		case ev, ok := <-w:
			if !ok {
				t.Fatal("watch closed while waiting for progress")
			}
			switch ev.Type {
			case storage.EventError:
				t.Fatalf("watch error while waiting for progress: %v", ev.Err)
			case storage.EventProgress:
				if len(extra) > 0 && ev.Revision < extra[len(extra)-1].Revision {
					t.Fatalf("progress at %d after an event at %d", ev.Revision, extra[len(extra)-1].Revision)
				}
				if ev.Revision >= rev {
					return extra
				}
			default:
				extra = append(extra, ev)
			}
		case <-tick.C:
			if err := s.RequestProgress(ctx); err != nil {
				t.Fatalf("RequestProgress: %v", err)
			}
		case <-ctx.Done():
			t.Fatalf("no progress event at or after revision %d", rev)
		}
	}
}

func checkKV(t *testing.T, what string, got, want storage.KeyValue) {
	t.Helper()
	if got.Key != want.Key || !bytes.Equal(got.Value, want.Value) || got.ModRevision != want.ModRevision {
		t.Errorf("%s = {%q %q %d}, want {%q %q %d}", what, got.Key, got.Value, got.ModRevision, want.Key, want.Value, want.ModRevision)
	}
}

func checkKVs(t *testing.T, what string, got, want []storage.KeyValue) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d items %v, want %d %v", what, len(got), listKeys(got), len(want), listKeys(want))
		return
	}
	for i := range got {
		checkKV(t, fmt.Sprintf("%s[%d]", what, i), got[i], want[i])
	}
}

func checkEvents(t *testing.T, got, want []storage.Event) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%d events, want %d; %s", len(got), len(want), diffEvents(got, want))
		return
	}
	for i := range got {
		if !sameEvent(got[i], want[i]) {
			t.Errorf("event %d = %s, want %s", i, formatEvent(got[i]), formatEvent(want[i]))
		}
	}
}

func sameEvent(a, b storage.Event) bool {
	return a.Type == b.Type && a.Key == b.Key && a.Revision == b.Revision && a.Created == b.Created &&
		bytes.Equal(a.Value, b.Value)
}

// diffEvents names the first few events missing from got and the first few
// got has in excess, matched by revision and key.
func diffEvents(got, want []storage.Event) string {
	id := func(e storage.Event) string { return fmt.Sprintf("%d %s", e.Revision, e.Key) }
	missing := onlyIn(want, got, id)
	extra := onlyIn(got, want, id)
	return fmt.Sprintf("missing %s; unexpected %s", formatEvents(missing), formatEvents(extra))
}

func onlyIn(a, b []storage.Event, id func(storage.Event) string) []storage.Event {
	inB := map[string]bool{}
	for _, e := range b {
		inB[id(e)] = true
	}
	var out []storage.Event
	for _, e := range a {
		if !inB[id(e)] && len(out) < 5 {
			out = append(out, e)
		}
	}
	return out
}

// formatEvent shows an event with the last element of its key, which is
// all that differs between the keys of one test.
func formatEvent(e storage.Event) string {
	kind := map[storage.EventType]string{storage.EventPut: "put", storage.EventDelete: "delete", storage.EventProgress: "progress", storage.EventError: "error"}[e.Type]
	if e.Created {
		kind = "create"
	}
	key := e.Key[strings.LastIndex(e.Key, "/")+1:]
	return fmt.Sprintf("{%s %s @%d value=%q}", kind, key, e.Revision, e.Value)
}

func formatEvents(es []storage.Event) string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = formatEvent(e)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func listKeys(kvs []storage.KeyValue) []string {
	keys := make([]string, len(kvs))
	for i, kv := range kvs {
		keys[i] = kv.Key
	}
	return keys
}

func kv(key string, value []byte, rev int64) storage.KeyValue {
	return storage.KeyValue{Key: key, Value: value, ModRevision: rev}
}
