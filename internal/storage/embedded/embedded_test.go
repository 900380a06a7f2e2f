package embedded_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/crdserver/crdserver/internal/storage/embedded"
)

// TestStartRestart starts on a fresh directory, writes, restarts on the same
// directory and reads the write back; it logs both start times.
func TestStartRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()

	start := time.Now()
	s, err := embedded.Start(ctx, embedded.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fresh start: %v", time.Since(start))
	put(t, s.Endpoints(), "k", "v")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	start = time.Now()
	s, err = embedded.Start(ctx, embedded.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("restart: %v", time.Since(start))
	defer s.Close()
	if got := get(t, s.Endpoints(), "k"); got != "v" {
		t.Fatalf("after restart k = %q, want %q", got, "v")
	}
}

func TestStartNeedsDir(t *testing.T) {
	if _, err := embedded.Start(context.Background(), embedded.Config{}); err == nil {
		t.Fatal("Start without Dir succeeded")
	}
}

func TestStartCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s, err := embedded.Start(ctx, embedded.Config{Dir: t.TempDir()})
	if err == nil {
		// Readiness may win the race against the canceled context.
		s.Close()
	}
}

func BenchmarkStart(b *testing.B) {
	for b.Loop() {
		s, err := embedded.Start(context.Background(), embedded.Config{Dir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
}

func client(t *testing.T, endpoints []string) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func put(t *testing.T, endpoints []string, k, v string) {
	t.Helper()
	if _, err := client(t, endpoints).Put(context.Background(), k, v); err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, endpoints []string, k string) string {
	t.Helper()
	resp, err := client(t, endpoints).Get(context.Background(), k)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 {
		return ""
	}
	return string(resp.Kvs[0].Value)
}

// Revision covers every acknowledged write: right after a put returns, it
// is the put's revision, as a quorum read would say.
func TestRevision(t *testing.T) {
	s, err := embedded.Start(context.Background(), embedded.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := client(t, s.Endpoints())
	for i := range 5 {
		resp, err := c.Put(context.Background(), "k", "v")
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Revision(); got != resp.Header.Revision {
			t.Fatalf("put %d answered revision %d, Revision() = %d", i, resp.Header.Revision, got)
		}
	}
	quorum, err := c.Get(context.Background(), "absent")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Revision(); got != quorum.Header.Revision {
		t.Errorf("quorum read says revision %d, Revision() = %d", quorum.Header.Revision, got)
	}
}

// With few entries kept for followers, etcd drops most of its in-memory
// raft log as it goes; a restart must still find every write and the
// revision.
func TestRestartAfterLogCompaction(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := embedded.Start(ctx, embedded.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	c := client(t, s.Endpoints())
	const writes = 2500 // many times the entries kept
	var wg sync.WaitGroup
	errs := make(chan error, writes)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < writes; i += 8 {
				if _, err := c.Put(ctx, fmt.Sprintf("/k/%04d", i), "v"); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	rev := s.Revision()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = embedded.Start(ctx, embedded.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.Revision(); got != rev {
		t.Errorf("revision after restart %d, want %d", got, rev)
	}
	resp, err := client(t, s.Endpoints()).Get(ctx, "/k/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Count != writes {
		t.Errorf("after restart %d keys, want %d", resp.Count, writes)
	}
}
