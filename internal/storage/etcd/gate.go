package etcd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/crdserver/crdserver/internal/storage"
)

// Timing of the reachability gate.
const (
	// gateProbeInterval is how often the gate reads the revision.
	gateProbeInterval = 500 * time.Millisecond
	// gateProbeTimeout bounds one probe.
	gateProbeTimeout = 2 * time.Second
	// gateUnreachableAfter is how long etcd may fail every probe before
	// it is declared unreachable: longer than an election (about a second
	// with etcd's defaults), short enough that clients hear of it in
	// seconds rather than at their request timeout.
	gateUnreachableAfter = 4 * time.Second
)

// errUnreachable is the cause of requests the gate fails.
var errUnreachable = fmt.Errorf("etcd unreachable: no linearizable read succeeded for %v: %w", gateUnreachableAfter, storage.ErrUnavailable)

// gate fails etcd requests at once while etcd is unreachable, instead of
// letting each wait until its caller's deadline: the etcd client waits for
// a connection and retries reads for as long as the context allows, so
// without the gate a server that lost etcd answers every request only when
// the request timeout (a minute) runs out.
//
// A loop reads the revision (a linearizable read: it needs a leader and a
// quorum) every gateProbeInterval. When none has succeeded for
// gateUnreachableAfter, the gate closes: requests in flight are cancelled
// and new ones fail, both with errUnreachable (storage.ErrUnavailable). The
// first probe that succeeds opens it again.
type gate struct {
	log *slog.Logger

	mu sync.Mutex
	// open is cancelled, with errUnreachable as its cause, when the gate
	// closes; an open gate gets a new one. Guarded by mu.
	open     context.Context
	closeNow context.CancelCauseFunc
	lastOK   time.Time // guarded by mu
}

func newGate(log *slog.Logger) *gate {
	g := &gate{log: log, lastOK: time.Now()}
	g.open, g.closeNow = context.WithCancelCause(context.Background())
	return g
}

// begin derives the context of one request from ctx: it is cancelled when
// the gate closes. end releases it. An error means the gate is closed.
func (g *gate) begin(ctx context.Context) (_ context.Context, end func(), err error) {
	g.mu.Lock()
	open := g.open
	g.mu.Unlock()
	if open.Err() != nil {
		return nil, nil, context.Cause(open)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(open, func() { cancel(context.Cause(open)) })
	return ctx, func() { stop(); cancel(nil) }, nil
}

// result replaces the error of a request the gate cancelled with the
// gate's cause, which callers recognise as storage.ErrUnavailable.
func result(ctx context.Context, err error) error {
	if err != nil && errors.Is(context.Cause(ctx), errUnreachable) {
		return context.Cause(ctx)
	}
	return err
}

// run probes with probe until ctx ends.
func (g *gate) run(ctx context.Context, probe func(context.Context) error) {
	t := time.NewTicker(gateProbeInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, gateProbeTimeout)
		err := probe(pctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		g.observe(err, time.Now())
	}
}

// observe opens or closes the gate after a probe that ended at now.
func (g *gate) observe(err error, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	closed := g.open.Err() != nil
	switch {
	case err == nil && closed:
		g.open, g.closeNow = context.WithCancelCause(context.Background())
		g.log.Warn("etcd reachable again", "unreachable for", now.Sub(g.lastOK).Round(time.Millisecond))
		g.lastOK = now
	case err == nil:
		g.lastOK = now
	case !closed && now.Sub(g.lastOK) >= gateUnreachableAfter:
		g.closeNow(errUnreachable)
		g.log.Error("etcd unreachable: failing requests until it answers", "err", err)
	}
}

// gatedKV is a clientv3.KV whose requests go through a gate. Streamed
// reads (GetStream; crdserver makes none) pass by it.
type gatedKV struct {
	clientv3.KV
	gate *gate
}

var _ clientv3.KV = gatedKV{}

// gated runs one request under a context from g.
func gated[T any](g *gate, ctx context.Context, do func(context.Context) (T, error)) (T, error) {
	ctx, end, err := g.begin(ctx)
	if err != nil {
		var zero T
		return zero, err
	}
	defer end()
	resp, err := do(ctx)
	return resp, result(ctx, err)
}

// Bounds of one attempt at a request, below the callers' deadlines (a
// minute for API requests): a request sent to a member that stopped
// answering waits for nothing until the member probes take it out of
// the endpoints, and then still waits on its connection.
const (
	// readAttemptTimeout bounds a read's first attempt; a read that runs
	// out is sent again, to the next member, with twice the bound, so a
	// large list on a slow machine still completes.
	readAttemptTimeout = 2 * time.Second
	// writeAttemptTimeout bounds a write, which is not sent again: its
	// outcome is then unknown, and the backend settles it with a read
	// (Backend.settle) before answering "unavailable".
	writeAttemptTimeout = 3 * time.Second
)

// read runs do with a bounded attempt, again while attempts time out and
// ctx allows.
func read[T any](ctx context.Context, do func(context.Context) (T, error)) (T, error) {
	for limit := readAttemptTimeout; ; limit *= 2 {
		actx, cancel := context.WithTimeout(ctx, limit)
		resp, err := do(actx)
		timedOut := errors.Is(actx.Err(), context.DeadlineExceeded)
		cancel()
		if err == nil || !timedOut || ctx.Err() != nil {
			return resp, err
		}
	}
}

// write runs do with a bounded attempt.
func write[T any](ctx context.Context, do func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, writeAttemptTimeout)
	defer cancel()
	return do(ctx)
}

func (k gatedKV) Put(ctx context.Context, key, val string, opts ...clientv3.OpOption) (*clientv3.PutResponse, error) {
	return gated(k.gate, ctx, func(ctx context.Context) (*clientv3.PutResponse, error) {
		return write(ctx, func(ctx context.Context) (*clientv3.PutResponse, error) { return k.KV.Put(ctx, key, val, opts...) })
	})
}

func (k gatedKV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	return gated(k.gate, ctx, func(ctx context.Context) (*clientv3.GetResponse, error) {
		return read(ctx, func(ctx context.Context) (*clientv3.GetResponse, error) { return k.KV.Get(ctx, key, opts...) })
	})
}

func (k gatedKV) Delete(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.DeleteResponse, error) {
	return gated(k.gate, ctx, func(ctx context.Context) (*clientv3.DeleteResponse, error) {
		return write(ctx, func(ctx context.Context) (*clientv3.DeleteResponse, error) { return k.KV.Delete(ctx, key, opts...) })
	})
}

func (k gatedKV) Compact(ctx context.Context, rev int64, opts ...clientv3.CompactOption) (*clientv3.CompactResponse, error) {
	return gated(k.gate, ctx, func(ctx context.Context) (*clientv3.CompactResponse, error) { return k.KV.Compact(ctx, rev, opts...) })
}

func (k gatedKV) Do(ctx context.Context, op clientv3.Op) (clientv3.OpResponse, error) {
	attempt := write[clientv3.OpResponse]
	if op.IsGet() {
		attempt = read[clientv3.OpResponse]
	}
	return gated(k.gate, ctx, func(ctx context.Context) (clientv3.OpResponse, error) {
		return attempt(ctx, func(ctx context.Context) (clientv3.OpResponse, error) { return k.KV.Do(ctx, op) })
	})
}

// Txn defers the gate to Commit, where the request is sent.
func (k gatedKV) Txn(ctx context.Context) clientv3.Txn {
	return &gatedTxn{ctx: ctx, kv: k}
}

// gatedTxn records the transaction and builds it on the wrapped KV at
// Commit, under a context from the gate.
type gatedTxn struct {
	ctx       context.Context
	kv        gatedKV
	cmps      []clientv3.Cmp
	then, els []clientv3.Op
}

func (t *gatedTxn) If(cs ...clientv3.Cmp) clientv3.Txn   { t.cmps = append(t.cmps, cs...); return t }
func (t *gatedTxn) Then(ops ...clientv3.Op) clientv3.Txn { t.then = append(t.then, ops...); return t }
func (t *gatedTxn) Else(ops ...clientv3.Op) clientv3.Txn { t.els = append(t.els, ops...); return t }

func (t *gatedTxn) Commit() (*clientv3.TxnResponse, error) {
	return gated(t.kv.gate, t.ctx, func(ctx context.Context) (*clientv3.TxnResponse, error) {
		return write(ctx, func(ctx context.Context) (*clientv3.TxnResponse, error) {
			return t.kv.KV.Txn(ctx).If(t.cmps...).Then(t.then...).Else(t.els...).Commit()
		})
	})
}
