package etcd

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/crdserver/crdserver/internal/storage"
	"github.com/crdserver/crdserver/internal/storage/etcdtest"
)

func TestCheckVersion(t *testing.T) {
	for _, tc := range []struct {
		version string
		wantErr string // substring; "" means accepted
	}{
		{"3.5.13", ""},
		{"3.5.21", ""},
		{"3.6.0", ""},
		{"3.7.3", ""},
		{"4.0.0", ""},
		{"v3.6.5", ""},
		{"3.6.0-rc.1", ""},
		{"3.5.12", "etcd at http://e:2379 is version 3.5.12; crdserver needs etcd 3.5.13 or newer (watch progress notifications)"},
		{"3.4.23", "is version 3.4.23; crdserver needs etcd 3.5.13 or newer"},
		{"3.4.40", "is version 3.4.40"},
		{"2.3.8", "is version 2.3.8"},
		{"3.5", "not major.minor.patch"},
		{"", "not major.minor.patch"},
		{"3.x.1", "bad number"},
	} {
		err := checkVersion("http://e:2379", tc.version)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("checkVersion(%q) = %v, want nil", tc.version, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("checkVersion(%q) = %v, want an error containing %q", tc.version, err, tc.wantErr)
		}
	}
}

// TestCompactTurns plays two replicas' compactor turns against one etcd:
// exactly one replica compacts per turn, to the revision seen a turn
// earlier.
func TestCompactTurns(t *testing.T) {
	endpoints := etcdtest.StartEmbedded(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	newB := func() *Backend {
		b, err := New(ctx, Config{Endpoints: endpoints})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}
	a, b := newB(), newB()
	write := func() int64 {
		rev, err := a.Create(ctx, "/compact/"+time.Now().String(), []byte("x"))
		if err != nil {
			t.Fatal(err)
		}
		return rev
	}
	readable := func(rev int64) bool {
		_, err := a.List(ctx, "/compact/", storage.ListOptions{Revision: rev})
		if err != nil && !errors.Is(err, storage.ErrCompacted) {
			t.Fatal(err)
		}
		return err == nil
	}
	turn := func(who *Backend, st compactState) (compactState, int64) {
		next, compacted, err := who.compactTurn(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		return next, compacted
	}

	var sa, sb compactState
	old := write()
	// Turn 1: a claims it but has no earlier revision to compact to; b
	// loses the race and learns the turn counter.
	sa, c := turn(a, sa)
	if c != 0 {
		t.Fatalf("first turn compacted to %d", c)
	}
	sb, c = turn(b, sb)
	if c != 0 {
		t.Fatalf("losing replica compacted to %d", c)
	}
	mid := write()

	// Turn 2: b wins this time (it is up to date), compacting to what it
	// saw in turn 1; a then loses.
	sb, c = turn(b, sb)
	if c == 0 || c < old || c > mid {
		t.Fatalf("second turn compacted to %d, want between %d and %d", c, old, mid)
	}
	if readable(old) || !readable(c) || !readable(mid) {
		t.Errorf("after compacting to %d: readable(%d)=%v readable(%d)=%v readable(%d)=%v",
			c, old, readable(old), c, readable(c), mid, readable(mid))
	}
	sa, c = turn(a, sa)
	if c != 0 {
		t.Fatalf("second replica compacted in the same turn, to %d", c)
	}
	if sa.version != sb.version {
		t.Errorf("replicas disagree on the turn: %d vs %d", sa.version, sb.version)
	}
}

// TestRunCompactor checks the loop end to end with a short interval.
func TestRunCompactor(t *testing.T) {
	endpoints := etcdtest.StartEmbedded(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := New(ctx, Config{Endpoints: endpoints})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	first, err := b.Create(ctx, "/run-compactor/a", []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	go b.RunCompactor(ctx, 20*time.Millisecond)
	for {
		if _, err := b.List(ctx, "/run-compactor/", storage.ListOptions{Revision: first - 1}); errors.Is(err, storage.ErrCompacted) {
			return
		}
		if ctx.Err() != nil {
			t.Fatal("history never compacted")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRestartWatchesSpaced: every watch cache of a replica may find the
// shared stream silent at once; the watches are restarted once for them
// all, and again only restartEvery later.
func TestRestartWatchesSpaced(t *testing.T) {
	var p watchParent
	t0 := time.Unix(1_700_000_000, 0)
	for _, c := range []struct {
		after time.Duration
		want  bool
	}{
		{0, true},
		{time.Second, false},
		{restartEvery - time.Millisecond, false},
		{restartEvery, true},
		{restartEvery + time.Second, false},
		{3 * restartEvery, true},
	} {
		if got := p.mayRestart(t0.Add(c.after)); got != c.want {
			t.Errorf("asked %v after the first: restart %v, want %v", c.after, got, c.want)
		}
	}
}
