package etcd

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/crdserver/crdserver/internal/storage"
)

// The gate closes once probes have failed for gateUnreachableAfter,
// cancelling requests in flight and failing new ones with
// storage.ErrUnavailable, and opens at the first probe that succeeds.
func TestGate(t *testing.T) {
	g := newGate(slog.New(slog.NewTextHandler(io.Discard, nil)))
	t0 := g.lastOK
	down := errors.New("no leader")

	ctx, end, err := g.begin(context.Background())
	if err != nil {
		t.Fatalf("open gate: %v", err)
	}
	defer end()
	g.observe(down, t0.Add(gateUnreachableAfter/2))
	if ctx.Err() != nil {
		t.Fatal("a request was cancelled before etcd had been unreachable long enough")
	}
	g.observe(down, t0.Add(gateUnreachableAfter))
	select { // the cancellation runs in a goroutine of its own
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the request in flight was not cancelled when the gate closed")
	}
	if err := result(ctx, context.Canceled); !errors.Is(err, storage.ErrUnavailable) {
		t.Errorf("cancelled request's error = %v, want storage.ErrUnavailable", err)
	}
	if _, _, err := g.begin(context.Background()); !errors.Is(err, storage.ErrUnavailable) {
		t.Errorf("new request on a closed gate: %v, want storage.ErrUnavailable", err)
	}

	g.observe(nil, t0.Add(2*gateUnreachableAfter))
	ctx2, end2, err := g.begin(context.Background())
	if err != nil {
		t.Fatalf("after a probe succeeded: %v", err)
	}
	defer end2()
	// One failure right after is not enough to close it again.
	g.observe(down, t0.Add(2*gateUnreachableAfter+time.Millisecond))
	if ctx2.Err() != nil {
		t.Error("the gate closed again at the first failed probe")
	}
	// A request that fails on its own keeps its error.
	if err := result(ctx2, down); err != down {
		t.Errorf("result = %v, want the request's own error", err)
	}
}
