package watchcache

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/crdserver/crdserver/internal/storage"
)

// GetOptions are the get query parameters, already parsed.
type GetOptions struct {
	// ResourceVersion as sent by the client: "" (consistent read), "0"
	// (any), or a revision the answer must not be older than.
	ResourceVersion string
}

// Get reads one object with kube-apiserver's resourceVersion semantics for
// a get. It returns storage.ErrNotFound when key does not exist.
//
//   - RV "": a consistent read: the cache waits until it has seen storage's
//     current revision (read through revs: in-process for storage that
//     knows it, else one quorum read shared among concurrent callers),
//     else the object comes from storage.
//     Upstream reads storage directly; the answer is as fresh either way.
//   - RV "0": whatever the cache holds.
//   - RV N: the cache's state once it has reached N (504 Timeout after
//     FreshTimeout).
//
// Before the first list is in, every read goes to storage.
func (c *Cache) Get(ctx context.Context, key string, opts GetOptions) (*Item, error) {
	rv, err := parseRV(opts.ResourceVersion)
	if err != nil {
		return nil, err
	}
	if !c.isReady() {
		return c.getStorage(ctx, key, rv)
	}
	switch {
	case opts.ResourceVersion == "":
		before := c.Revision()
		rev, err := c.revs.current(ctx)
		if err != nil {
			return nil, c.storageErr("current revision", err)
		}
		ok, err := c.waitFresh(ctx, rev)
		if errors.Is(err, errStoppedWaiting) {
			return c.getStorage(ctx, key, 0)
		}
		if err != nil {
			return nil, c.storageErr("wait", err)
		}
		if !ok {
			c.behind("get", rev, before)
			return c.getStorage(ctx, key, 0)
		}
	case rv > 0:
		ok, err := c.waitFresh(ctx, rv)
		if errors.Is(err, errStoppedWaiting) {
			return c.getStorage(ctx, key, rv)
		}
		if err != nil {
			return nil, c.storageErr("wait", err)
		}
		if !ok {
			return nil, errTooLargeRV(rv, c.Revision())
		}
	}
	c.mu.RLock()
	it, found := c.tree.Get(&Item{Key: key})
	c.mu.RUnlock()
	if !found {
		return nil, storage.ErrNotFound
	}
	return it, nil
}

// getStorage reads key from storage (a quorum read); minRev > 0 asks for
// a state at least that new.
func (c *Cache) getStorage(ctx context.Context, key string, minRev int64) (*Item, error) {
	if minRev > 0 {
		cur, err := c.store.CurrentRevision(ctx)
		if err != nil {
			return nil, c.storageErr("current revision", err)
		}
		if cur < minRev {
			return nil, errTooLargeRV(minRev, cur)
		}
	}
	kv, err := c.store.Get(ctx, key)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, storage.ErrNotFound
	}
	if err != nil {
		return nil, c.storageErr("get", err)
	}
	it, err := c.decode(kv.Key, kv.Value, kv.ModRevision)
	if err != nil {
		return nil, c.storageErr("decode", err)
	}
	return it, nil
}

// revFetchTimeout bounds one shared revision read: it runs detached from
// the callers that wait for it, so none of their contexts may cancel it.
const revFetchTimeout = 30 * time.Second

// revReadSpacing is the least time between the end of one revision read
// of a cache under load and the start of the next.
const revReadSpacing = time.Millisecond

// revReadGapMax bounds the pause after a slow read (see revCoalescer): a
// read that took a second must not hold the next one back a second.
const revReadGapMax = 10 * time.Millisecond

// revCoalescer shares storage's CurrentRevision among concurrent callers,
// so a burst of consistent reads costs one quorum read instead of one
// each. A quorum read costs etcd more CPU than the rest of a get costs
// crdserver, so sharing it is what lets gets scale.
//
// Linearizability: a caller must get a revision read by a quorum read that
// began after it arrived; only then is every write acknowledged before its
// arrival included. So a caller never joins a read already begun (it may
// have begun before the caller's write was acknowledged): it joins the
// next one. At most one read is in flight and one waits to begin.
//
// Under load a queued read waits, after the previous read ended, as long
// as that read took (at least spacing, at most revReadGapMax), gathering
// the callers that arrive meanwhile. Without the pause reads run back to
// back whenever gets keep arriving, one per read latency however few gets
// share each: a replica serving a third of the gets then makes as many
// quorum reads as one serving all of them, and the reads' cost per get
// (crdserver's gRPC client and etcd's ReadIndex) grows with the number of
// replicas. With it a replica makes at most half as many reads, each
// shared by twice the callers, for at most one read's latency added to a
// get that queued. A caller that finds the coalescer idle starts a read at
// once, so a lone client's gets wait for nothing but the read itself.
type revCoalescer struct {
	fetch   func(context.Context) (int64, error)
	local   func() (int64, bool) // storage.LocalRevisioner; nil when absent
	spacing time.Duration
	sleep   func(time.Duration) // time.Sleep when nil; tests replace it
	now     func() time.Time    // time.Now when nil; tests replace it

	mu       sync.Mutex
	inflight *revCall      // the current call, begun or about to; nil when idle
	next     *revCall      // to begin when inflight ends; nil when nobody waits
	lastEnd  time.Time     // when the last read ended
	lastTook time.Duration // how long it took
}

// revCall is one revision read; rev and err are set before done closes.
type revCall struct {
	ctx     context.Context // values of the caller that opened the call
	done    chan struct{}
	begun   bool // the read was sent: later callers may not join
	callers int  // how many share it
	rev     int64
	err     error
}

// current returns a revision at least as new as storage's revision when
// current was called.
func (r *revCoalescer) current(ctx context.Context) (int64, error) {
	if r.local != nil {
		// Nothing to share when the revision costs no round trip.
		if rev, ok := r.local(); ok {
			return rev, nil
		}
	}
	r.mu.Lock()
	var call *revCall
	switch {
	case r.inflight == nil:
		call = &revCall{ctx: ctx, done: make(chan struct{})}
		r.inflight = call
		go r.run(call)
	case !r.inflight.begun:
		call = r.inflight
	case r.next == nil:
		call = &revCall{ctx: ctx, done: make(chan struct{})}
		r.next = call
	default:
		call = r.next
	}
	call.callers++
	r.mu.Unlock()
	select {
	case <-call.done:
		return call.rev, call.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// run performs call's read, publishes it and goes on with the queued call,
// if any.
func (r *revCoalescer) run(call *revCall) {
	for queued := false; call != nil; queued = true {
		r.mu.Lock()
		wait := max(r.spacing, min(r.lastTook, revReadGapMax)) - r.clock().Sub(r.lastEnd)
		r.mu.Unlock()
		if queued && wait > 0 {
			if r.sleep != nil {
				r.sleep(wait)
			} else {
				time.Sleep(wait)
			}
		}
		r.mu.Lock()
		call.begun = true
		r.mu.Unlock()

		start := r.clock()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(call.ctx), revFetchTimeout)
		call.rev, call.err = r.fetch(ctx)
		cancel()
		end := r.clock()
		r.mu.Lock()
		r.lastEnd, r.lastTook = end, end.Sub(start)
		close(call.done)
		call.ctx = nil
		call = r.next
		r.inflight, r.next = call, nil
		r.mu.Unlock()
	}
}

func (r *revCoalescer) clock() time.Time {
	if r.now != nil {
		return r.now()
	}
	return time.Now()
}
