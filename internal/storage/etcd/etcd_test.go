package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/crdserver/crdserver/internal/storage"
	"github.com/crdserver/crdserver/internal/storage/embedded"
	"github.com/crdserver/crdserver/internal/storage/etcd"
	"github.com/crdserver/crdserver/internal/storage/etcdtest"
	"github.com/crdserver/crdserver/internal/storage/storagetest"
)

func newBackend(t testing.TB, endpoints []string) *etcd.Backend {
	t.Helper()
	b, err := etcd.New(context.Background(), etcd.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// Each subtest gets its own client, so their watches do not share a stream.
func TestConformanceEmbedded(t *testing.T) {
	endpoints := etcdtest.StartEmbedded(t)
	storagetest.Run(t, func(t *testing.T) storage.Interface { return newBackend(t, endpoints) })
}

// TestConformanceInProcess runs the suite as crdserver runs embedded
// etcd: reads and writes call the server in this process directly, and
// the current revision is read from its store instead of by a quorum read;
// watches go through the client port.
func TestConformanceInProcess(t *testing.T) {
	s, err := embedded.Start(context.Background(), embedded.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	storagetest.Run(t, func(t *testing.T) storage.Interface {
		b, err := etcd.New(context.Background(), etcd.Config{Endpoints: s.Endpoints(), KV: s.KV(), LocalRevision: s.Revision})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := b.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
		if _, ok := b.LocalRevision(); !ok {
			t.Fatal("LocalRevision not used")
		}
		return b
	})
}

func TestConformanceExternal(t *testing.T) {
	endpoints := etcdtest.StartExternal(t)
	storagetest.Run(t, func(t *testing.T) storage.Interface { return newBackend(t, endpoints) })
}

// TestConformanceSharedClient runs the suite with one backend for all
// subtests: every watch shares one gRPC stream, so progress requests must
// still reach each of them.
func TestConformanceSharedClient(t *testing.T) {
	b := newBackend(t, etcdtest.StartEmbedded(t))
	storagetest.Run(t, func(t *testing.T) storage.Interface { return b })
}

func TestNewUnavailable(t *testing.T) {
	// Nothing listens on the discard port of loopback.
	start := time.Now()
	_, err := etcd.New(context.Background(), etcd.Config{Endpoints: []string{"http://127.0.0.1:9"}, DialTimeout: 300 * time.Millisecond})
	if !errors.Is(err, storage.ErrUnavailable) {
		t.Fatalf("New with no etcd: err = %v, want ErrUnavailable", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("New took %v to fail", d)
	}
}

// TestUnavailable checks that requests to a dead etcd fail with
// ErrUnavailable and that Healthy reports it.
func TestUnavailable(t *testing.T) {
	p := etcdtest.StartProcess(t, t.TempDir())
	b := newBackend(t, p.Endpoints)
	ctx := context.Background()
	if err := b.Healthy(ctx); err != nil {
		t.Fatalf("Healthy with etcd up: %v", err)
	}
	p.Kill()
	t0 := time.Now()
	defer func() { t.Logf("after kill: %v", time.Since(t0)) }()
	if err := b.Healthy(ctx); !errors.Is(err, storage.ErrUnavailable) {
		t.Errorf("Healthy with etcd down: err = %v, want ErrUnavailable", err)
	}
	tctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	if _, err := b.Get(tctx, "/x"); !errors.Is(err, storage.ErrUnavailable) {
		t.Errorf("Get with etcd down: err = %v, want ErrUnavailable", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := b.Get(cctx, "/x"); !errors.Is(err, context.Canceled) || errors.Is(err, storage.ErrUnavailable) {
		t.Errorf("Get with a canceled context: err = %v, want context.Canceled only", err)
	}
}

// TestKillLosesNoAcknowledgedWrite kills etcd with SIGKILL while writers
// run and checks that every write it acknowledged is there after restart.
func TestKillLosesNoAcknowledgedWrite(t *testing.T) {
	dir := t.TempDir()
	p := etcdtest.StartProcess(t, dir)
	b := newBackend(t, p.Endpoints)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var (
		mu    sync.Mutex
		acked = map[string]int64{}
		wg    sync.WaitGroup
	)
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				key := fmt.Sprintf("/kill/w%d/%d", w, i)
				rev, err := b.Create(ctx, key, []byte(key))
				if err != nil {
					return // etcd is gone
				}
				mu.Lock()
				acked[key] = rev
				mu.Unlock()
			}
		})
	}
	// Kill once some writes went through, while the rest are in flight.
	for {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 40 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	p.Kill()
	// Writers stop when their next request fails.
	wctx, wcancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer wcancel()
	go func() { <-wctx.Done(); cancel() }()
	wg.Wait()

	p2 := etcdtest.StartProcess(t, dir)
	b2 := newBackend(t, p2.Endpoints)
	for key, rev := range acked {
		kv, err := b2.Get(context.Background(), key)
		if err != nil {
			t.Errorf("acknowledged write %q at %d lost: %v", key, rev, err)
			continue
		}
		if kv.ModRevision != rev {
			t.Errorf("%q at revision %d, want %d", key, kv.ModRevision, rev)
		}
	}
	t.Logf("%d acknowledged writes survived SIGKILL", len(acked))
}

// TestProgressReachesEveryWatch opens several watches on one backend and
// checks that RequestProgress makes each of them report progress.
func TestProgressReachesEveryWatch(t *testing.T) {
	b := newBackend(t, etcdtest.StartEmbedded(t))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start, err := b.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var watches []<-chan storage.Event
	for i := range 3 {
		watches = append(watches, b.Watch(ctx, fmt.Sprintf("/progress/%d/", i), start))
	}
	// A write elsewhere: no watch sees an event, all must learn about it.
	rev, err := b.Create(ctx, "/elsewhere", []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range watches {
		got := false
		for !got {
			if err := b.RequestProgress(ctx); err != nil {
				t.Fatal(err)
			}
			select {
			case ev := <-w:
				if ev.Type != storage.EventProgress {
					t.Fatalf("watch %d: %+v, want progress", i, ev)
				}
				got = ev.Revision >= rev
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
				t.Fatalf("watch %d: no progress", i)
			}
		}
	}
}

// Keys written with a TTL go once it has passed since their last write,
// as a delete watchers see; an update renews the TTL.
func TestTTL(t *testing.T) {
	s, err := embedded.Start(context.Background(), embedded.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	b, err := etcd.New(context.Background(), etcd.Config{Endpoints: s.Endpoints(), KV: s.KV(), LocalRevision: s.Revision})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const ttl = 2 * time.Second
	start := time.Now()
	rev, err := b.CreateWithTTL(ctx, "/ttl/a", []byte("1"), ttl)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.CreateWithTTL(ctx, "/ttl/b", []byte("1"), ttl); err != nil {
		t.Fatal(err)
	}
	if _, err := b.CreateWithTTL(ctx, "/ttl/a", []byte("1"), ttl); !errors.Is(err, storage.ErrExists) {
		t.Fatalf("second create: %v, want ErrExists", err)
	}
	if _, err := b.Create(ctx, "/ttl/kept", []byte("1")); err != nil {
		t.Fatal(err)
	}
	events := b.Watch(ctx, "/ttl/", rev)
	time.Sleep(time.Second)
	// a is written again a second later: it lives a second longer than b.
	if _, err := b.UpdateWithTTL(ctx, "/ttl/a", []byte("2"), rev, ttl); err != nil {
		t.Fatal(err)
	}
	deleted := map[string]time.Duration{}
	for len(deleted) < 2 {
		select {
		case ev := <-events:
			if ev.Type == storage.EventDelete {
				deleted[ev.Key] = time.Since(start)
			}
		case <-ctx.Done():
			t.Fatalf("deleted so far: %v", deleted)
		}
	}
	if deleted["/ttl/b"] < ttl || deleted["/ttl/a"] < ttl+time.Second {
		t.Errorf("deleted too early: %v (ttl %v)", deleted, ttl)
	}
	if _, err := b.Get(ctx, "/ttl/kept"); err != nil {
		t.Errorf("a key without TTL: %v", err)
	}
}
