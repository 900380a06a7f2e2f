package memory_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/crdserver/crdserver/internal/storage"
	"github.com/crdserver/crdserver/internal/storage/memory"
	"github.com/crdserver/crdserver/internal/storage/storagetest"
)

func newStore(t *testing.T) *memory.Store {
	s := memory.New()
	t.Cleanup(func() { s.Close() })
	return s
}

// TestConformance runs the suite, history checks included, on one store
// shared by every subtest, as one server shares it among its resources.
func TestConformance(t *testing.T) {
	s := newStore(t)
	storagetest.Run(t, func(*testing.T) storage.Interface { return s })
}

// TestConformanceStorePerTest gives each subtest a fresh store, so that
// revisions start at 1 as in a new server.
func TestConformanceStorePerTest(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Interface { return newStore(t) })
}

// After Close, calls fail with ErrUnavailable and watches end with it, as
// with an etcd connection that is gone.
func TestClose(t *testing.T) {
	s := memory.New()
	ctx := context.Background()
	w := s.Watch(ctx, "/a/", 0)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ev, ok := <-w
	if !ok || ev.Type != storage.EventError || !errors.Is(ev.Err, storage.ErrUnavailable) {
		t.Errorf("watch after Close sent %+v (open %v), want an ErrUnavailable error", ev, ok)
	}
	if _, ok := <-w; ok {
		t.Error("watch channel open after its error")
	}
	if _, err := s.Create(ctx, "/a/x", nil); !errors.Is(err, storage.ErrUnavailable) {
		t.Errorf("Create after Close: err = %v, want ErrUnavailable", err)
	}
	if err := s.Healthy(ctx); !errors.Is(err, storage.ErrUnavailable) {
		t.Errorf("Healthy after Close = %v, want ErrUnavailable", err)
	}
}

// A key written with a TTL is deleted, seen by watches as a delete,
// unless a later write keeps it.
func TestExpiry(t *testing.T) {
	s := newStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start, _ := s.CurrentRevision(ctx)
	w := s.Watch(ctx, "/events/", start)

	expiring, err := s.CreateWithTTL(ctx, "/events/expiring", []byte("e"), 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	kept, err := s.CreateWithTTL(ctx, "/events/kept", []byte("k"), 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, "/events/kept", []byte("k2"), kept); err != nil {
		t.Fatal(err)
	}
	renewed, err := s.CreateWithTTL(ctx, "/events/renewed", []byte("r"), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateWithTTL(ctx, "/events/renewed", []byte("r2"), renewed, 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}

	deleted := map[string]storage.Event{}
	for len(deleted) < 2 {
		select {
		case ev := <-w:
			if ev.Type == storage.EventDelete {
				deleted[ev.Key] = ev
			}
		case <-ctx.Done():
			t.Fatalf("expired keys not deleted; deletes seen: %v", deleted)
		}
	}
	if ev := deleted["/events/expiring"]; ev.Revision <= expiring {
		t.Errorf("expiry delete = %+v", ev)
	}
	if _, ok := deleted["/events/renewed"]; !ok {
		t.Errorf("a key updated with a short TTL was not deleted: %v", deleted)
	}
	if kv, err := s.Get(ctx, "/events/kept"); err != nil || string(kv.Value) != "k2" {
		t.Errorf("a key rewritten without a TTL: Get = %+v, %v; want it kept", kv, err)
	}
}

// With a fake clock, keys expire when the clock is stepped past their TTL,
// and not before. FakeClock calls timers under its own lock, which a
// writer setting a timer also takes: stepping while writing must not
// deadlock.
func TestExpiryFakeClock(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Unix(0, 0))
	s := memory.NewWithClock(clock)
	t.Cleanup(func() { s.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range 100 {
		if _, err := s.CreateWithTTL(ctx, fmt.Sprintf("/events/e%d", i), []byte("e"), time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	clock.Step(59 * time.Minute)
	if l, err := s.List(ctx, "/events/", storage.ListOptions{}); err != nil || len(l.Items) != 100 {
		t.Fatalf("after 59m: %d keys, %v; want all 100", len(l.Items), err)
	}
	done := make(chan struct{})
	go func() { // writers racing the step
		defer close(done)
		for i := range 100 {
			s.CreateWithTTL(ctx, fmt.Sprintf("/events/w%d", i), []byte("w"), 2*time.Hour)
		}
	}()
	clock.Step(2 * time.Minute)
	<-done
	for {
		l, err := s.List(ctx, "/events/e", storage.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Items) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d keys left an hour and a minute after their 1h TTL", len(l.Items))
		case <-time.After(time.Millisecond):
		}
	}
	if l, _ := s.List(ctx, "/events/w", storage.ListOptions{}); len(l.Items) != 100 {
		t.Errorf("%d of 100 keys with 2h left; want all", len(l.Items))
	}
}

// The compactor keeps one interval of history and discards what is older.
func TestRunCompactor(t *testing.T) {
	s := newStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	first, err := s.Create(ctx, "/c/a", []byte("1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, "/c/a", []byte("2"), first); err != nil {
		t.Fatal(err)
	}
	go s.RunCompactor(ctx, 5*time.Millisecond)
	for {
		_, err := s.List(ctx, "/c/", storage.ListOptions{Revision: first})
		if errors.Is(err, storage.ErrCompacted) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-ctx.Done():
			t.Fatal("history never compacted")
		case <-time.After(5 * time.Millisecond):
		}
	}
	if kv, err := s.Get(ctx, "/c/a"); err != nil || string(kv.Value) != "2" {
		t.Errorf("Get after compaction = %+v, %v", kv, err)
	}
}

// Paging reports what remains after each page, as etcd does.
func TestListRemaining(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	for _, k := range []string{"/p/a", "/p/b", "/p/c", "/pq", "/q/a"} {
		if _, err := s.Create(ctx, k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	rev, _ := s.CurrentRevision(ctx)
	for _, tc := range []struct {
		name      string
		opts      storage.ListOptions
		want      []string
		remaining int64
	}{
		{"all", storage.ListOptions{}, []string{"/p/a", "/p/b", "/p/c"}, 0},
		{"first page", storage.ListOptions{Limit: 2}, []string{"/p/a", "/p/b"}, 1},
		{"last page", storage.ListOptions{Limit: 2, StartKey: "/p/b\x00"}, []string{"/p/c"}, 0},
		{"past page", storage.ListOptions{Limit: 1, StartKey: "/p/a", Revision: rev - 1}, []string{"/p/a"}, 2},
		{"exact page", storage.ListOptions{Limit: 3}, []string{"/p/a", "/p/b", "/p/c"}, 0},
	} {
		res, err := s.List(ctx, "/p/", tc.opts)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var got []string
		for _, kv := range res.Items {
			got = append(got, kv.Key)
		}
		if !slices.Equal(got, tc.want) || res.Remaining != tc.remaining || res.More != (tc.remaining > 0) {
			t.Errorf("%s: List = %v remaining %d more %v, want %v remaining %d", tc.name, got, res.Remaining, res.More, tc.want, tc.remaining)
		}
	}
}
