package storagetest

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/crdserver/crdserver/internal/storage"
)

// Sizes of the concurrent history test.
const (
	historyWriters = 4
	historyOps     = 25 // attempted writes per writer
	historyKeys    = 5
)

// testConcurrentHistory records what several concurrent writers did and
// what watches reported, and checks the properties etcd's robustness tests
// check on watch histories:
//   - ordered: revisions never go back, progress never precedes a change
//     already delivered;
//   - unique: no change is reported twice;
//   - atomic: the changes of one revision arrive together (with single-key
//     writes, exactly one change per revision);
//   - reliable: every acknowledged write under the prefix is reported,
//     with the value written and the value it replaced, and nothing else;
//   - resumable: a watch from any revision reports exactly the rest;
//   - a watch from "now" opened during the writes reports a gapless suffix;
//   - replaying the changes gives what List returns.
func testConcurrentHistory(t *testing.T, s storage.Interface, prefix string) {
	ctx := testContext(t)
	start, err := s.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	full := s.Watch(ctx, prefix, start)

	var (
		mu     sync.Mutex
		writes []storage.Event // acknowledged writes, in no particular order
		late   <-chan storage.Event
		wg     sync.WaitGroup
	)
	record := func(ev storage.Event) {
		mu.Lock()
		writes = append(writes, ev)
		mu.Unlock()
	}
	for w := range historyWriters {
		wg.Go(func() {
			for i := range historyOps {
				if w == 0 && i == historyOps/2 {
					mu.Lock()
					late = s.Watch(ctx, prefix, 0)
					mu.Unlock()
				}
				key := fmt.Sprintf("%sk%d", prefix, rand.IntN(historyKeys))
				value := fmt.Appendf(nil, "w%d-%d", w, i)
				if err := randomWrite(ctx, s, key, value, record); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if len(writes) == 0 {
		t.Fatal("no write succeeded")
	}

	// The recorded writes, ordered, are the history every watch must report.
	slices.SortFunc(writes, func(a, b storage.Event) int { return cmp.Compare(a.Revision, b.Revision) })
	want := writes
	last := want[len(want)-1].Revision
	for i := 1; i < len(want); i++ {
		if want[i].Revision == want[i-1].Revision {
			t.Fatalf("two acknowledged writes at revision %d", want[i].Revision)
		}
	}

	// Everything up to a progress event at or after the last write is the
	// watch's complete account of the history.
	got := waitProgress(t, s, full, last)
	checkHistory(t, "watch from start", got)
	checkEvents(t, got, want)

	checkLateWatch(t, s, late, want)
	checkReplay(t, s, prefix, start, want)

	// Resume from the start, from every few revisions, and from the end.
	for i := 0; i < len(want); i += 1 + len(want)/8 {
		from := want[i].Revision
		wctx, cancel := context.WithCancel(ctx)
		w := s.Watch(wctx, prefix, from)
		got := waitProgress(t, s, w, last)
		checkHistory(t, fmt.Sprintf("watch from %d", from), got)
		checkEvents(t, got, want[i+1:])
		cancel()
	}
}

// randomWrite creates, updates or deletes key depending on what it finds,
// and records the write if the store acknowledged it. Losing a race to
// another writer (ErrExists, ErrConflict, ErrNotFound) is expected.
func randomWrite(ctx context.Context, s storage.Interface, key string, value []byte, record func(storage.Event)) error {
	cur, err := s.Get(ctx, key)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		rev, err := s.Create(ctx, key, value)
		if err == nil {
			record(storage.Event{Type: storage.EventPut, Key: key, Value: value, Created: true, Revision: rev})
		}
		return ignoreRace(err)
	case err != nil:
		return err
	case rand.IntN(3) == 0:
		prev, rev, err := s.Delete(ctx, key, cur.ModRevision)
		if err == nil {
			if !bytes.Equal(prev.Value, cur.Value) {
				return fmt.Errorf("Delete %q at %d returned previous value %q, want %q", key, cur.ModRevision, prev.Value, cur.Value)
			}
			record(storage.Event{Type: storage.EventDelete, Key: key, Revision: rev})
		}
		return ignoreRace(err)
	default:
		rev, err := s.Update(ctx, key, value, cur.ModRevision)
		if err == nil {
			record(storage.Event{Type: storage.EventPut, Key: key, Value: value, Revision: rev})
		}
		return ignoreRace(err)
	}
}

func ignoreRace(err error) error {
	if errors.Is(err, storage.ErrExists) || errors.Is(err, storage.ErrConflict) || errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	return err
}

// checkHistory checks ordering, uniqueness and atomicity of events alone.
func checkHistory(t *testing.T, what string, events []storage.Event) {
	t.Helper()
	seen := map[string]bool{}
	for i, ev := range events {
		id := fmt.Sprintf("%d/%s", ev.Revision, ev.Key)
		if seen[id] {
			t.Errorf("%s: %s reported twice", what, formatEvent(ev))
		}
		seen[id] = true
		if i > 0 && ev.Revision < events[i-1].Revision {
			t.Errorf("%s: event at %d after one at %d", what, ev.Revision, events[i-1].Revision)
		}
		// Changes of one revision must be adjacent.
		if i > 1 && ev.Revision == events[i-2].Revision && ev.Revision != events[i-1].Revision {
			t.Errorf("%s: changes of revision %d are split", what, ev.Revision)
		}
	}
}

// checkLateWatch checks a watch opened from "now" in the middle of the
// writes: it reports a suffix of the history, without gaps.
func checkLateWatch(t *testing.T, s storage.Interface, late <-chan storage.Event, want []storage.Event) {
	t.Helper()
	last := want[len(want)-1].Revision
	got := waitProgress(t, s, late, last)
	checkHistory(t, "watch from now", got)
	if len(got) == 0 {
		return // opened after the last write
	}
	i := slices.IndexFunc(want, func(ev storage.Event) bool { return ev.Revision == got[0].Revision })
	if i < 0 {
		t.Fatalf("watch from now: first event %s is not in the history", formatEvent(got[0]))
	}
	checkEvents(t, got, want[i:])
}

// checkReplay applies the history to the state at start (empty: the prefix
// is new) and compares with List at the last revision and at a revision in
// the middle.
func checkReplay(t *testing.T, s storage.Interface, prefix string, start int64, want []storage.Event) {
	t.Helper()
	ctx := testContext(t)
	for _, upto := range []int{len(want) / 2, len(want) - 1} {
		state := map[string]storage.KeyValue{}
		for _, ev := range want[:upto+1] {
			if ev.Type == storage.EventDelete {
				delete(state, ev.Key)
			} else {
				state[ev.Key] = kv(ev.Key, ev.Value, ev.Revision)
			}
		}
		var replayed []storage.KeyValue
		for _, k := range slices.Sorted(maps.Keys(state)) {
			replayed = append(replayed, state[k])
		}
		rev := want[upto].Revision
		res, err := s.List(ctx, prefix, storage.ListOptions{Revision: rev})
		if err != nil {
			t.Fatal(err)
		}
		checkKVs(t, fmt.Sprintf("List at %d against replayed events", rev), res.Items, replayed)
	}
	if res, err := s.List(ctx, prefix, storage.ListOptions{Revision: start}); err != nil || len(res.Items) != 0 {
		t.Errorf("List at the start revision %d = %d items, %v; want none", start, len(res.Items), err)
	}
}
