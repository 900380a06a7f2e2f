package watchcache

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/third_party/forked/golang/btree"
)

// Watcher is one client's watch. Read events from ResultChan until it is
// closed; call Stop when done (or cancel the context given to Watch).
type Watcher struct {
	c         *Cache
	filter    filter
	scope     string // namespace the watcher is registered under ("" = all)
	bookmarks bool

	input  chan *change // filled by the dispatcher
	result chan Event

	// done is closed when the watcher ends for any reason; endErr, set
	// before, is the error event to deliver (nil: just close).
	done     chan struct{}
	endOnce  sync.Once
	endErr   error
	stopped  chan struct{} // closed by Stop: nobody reads any more
	stopOnce sync.Once

	// Set before the watcher is published, read only by run.
	startSeq    uint64 // changes with seq <= startSeq are covered by the initial events
	minRev      int64  // and so are changes with rev <= minRev
	initial     *btree.BTree[*Item]
	initialRev  int64
	endBookmark bool
	replay      []*change
	finalAt     time.Time // one extra bookmark then (zero: none)
}

// ResultChan returns the events; it is closed when the watch ends.
func (w *Watcher) ResultChan() <-chan Event { return w.result }

// Stop ends the watch. The result channel is closed soon after; events
// already buffered may still be read. Safe to call more than once.
func (w *Watcher) Stop() {
	w.stopOnce.Do(func() { close(w.stopped) })
	w.end(nil)
}

// end terminates the watcher, delivering err (if not nil) as a last Error
// event.
func (w *Watcher) end(err error) {
	w.endOnce.Do(func() {
		w.endErr = err
		if w.c != nil {
			w.c.deregister(w)
		}
		close(w.done)
	})
}

func newWatcher(c *Cache, f filter, bookmarks bool, buffer int) *Watcher {
	return &Watcher{
		c:         c,
		filter:    f,
		scope:     f.ns,
		bookmarks: bookmarks,
		input:     make(chan *change, buffer),
		result:    make(chan Event, buffer),
		done:      make(chan struct{}),
		stopped:   make(chan struct{}),
	}
}

// errorWatcher returns a watcher whose only event is an Error, the way
// upstream reports a watch it accepted but cannot serve.
func errorWatcher(err error) *Watcher {
	w := &Watcher{result: make(chan Event, 1), done: make(chan struct{}), stopped: make(chan struct{})}
	w.result <- Event{Type: Error, Err: err}
	close(w.result)
	close(w.done)
	w.endOnce.Do(func() {})
	return w
}

// Watch starts a watch with kube-apiserver's semantics:
//
//   - RV "" or "0", SendInitialEvents unset: an Added event for every
//     current object, then changes. RV "" first waits (bounded) until the
//     cache has seen storage's current revision, so it is at least as fresh
//     as a consistent list.
//   - RV N: every change after N; 410 Expired (as an Error event) when N is
//     older than the window. N newer than the cache is accepted; events
//     start once the cache passes N, as upstream does.
//   - SendInitialEvents=true: Added events for the state at >= RV (RV "":
//     storage's current revision; 504 Timeout event if the cache doesn't
//     get there in time), then, with AllowBookmarks, a Bookmark marked
//     InitialEventsEnd, then changes.
//   - SendInitialEvents=false: changes after RV (RV ""/"0": from now).
//
// Errors about the request itself are returned; errors about its
// resourceVersion arrive as the watcher's only event.
func (c *Cache) Watch(ctx context.Context, opts WatchOptions) (*Watcher, error) {
	rv, err := parseRV(opts.ResourceVersion)
	if err != nil {
		return nil, err
	}
	if !c.isReady() {
		return nil, errNotReady()
	}
	w := newWatcher(c, newFilter(opts.Namespace, opts.Labels, opts.Fields), opts.AllowBookmarks, c.opts.WatcherBuffer)
	if opts.AllowBookmarks {
		w.finalAt = opts.FinalBookmarkAt
	}
	sendInitial := opts.SendInitialEvents != nil && *opts.SendInitialEvents

	switch {
	case sendInitial || (opts.SendInitialEvents == nil && rv == 0):
		minRev := rv
		if opts.ResourceVersion == "" {
			if minRev, err = c.store.CurrentRevision(ctx); err != nil {
				return nil, c.storageErr("current revision", err)
			}
		}
		ok, err := c.waitFresh(ctx, minRev)
		if errors.Is(err, errStoppedWaiting) {
			// The client watches again, on the new cache.
			return nil, errStopped()
		}
		if err != nil {
			return nil, c.storageErr("wait", err)
		}
		if !ok {
			if sendInitial {
				return errorWatcher(errTooLargeRV(minRev, c.Revision())), nil
			}
			c.log.Warn("watchcache: cache behind for a watch without resourceVersion, serving what it has", "want", minRev, "have", c.Revision())
		}
		w.endBookmark = sendInitial && opts.AllowBookmarks
		if err := c.register(w, func() error {
			w.initial, w.initialRev = c.latestLocked(), c.rev
			w.startSeq = c.seq
			return nil
		}); err != nil {
			return errorWatcher(err), nil
		}

	default:
		if opts.ResourceVersion == "" { // SendInitialEvents=false: from storage's now
			if rv, err = c.store.CurrentRevision(ctx); err != nil {
				return nil, c.storageErr("current revision", err)
			}
		}
		if err := c.register(w, func() error {
			if rv == 0 {
				rv = c.rev
			}
			if rv < c.win.start {
				return errWatchTooOld(rv, c.win.start)
			}
			w.minRev = rv
			w.replay = c.win.since(rv)
			w.startSeq = c.seq
			return nil
		}); err != nil {
			return errorWatcher(err), nil
		}
	}

	go w.run(ctx)
	return w, nil
}

// register reads the watcher's starting point with init, under the state
// lock (held for writing: init may take a snapshot), and publishes the
// watcher to the dispatcher before the lock is released, so that every
// change after the starting point reaches it.
func (c *Cache) register(w *Watcher, init func() error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := init(); err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.stopped {
		return errStopped()
	}
	m := c.watchers[w.scope]
	if m == nil {
		m = make(map[*Watcher]struct{})
		c.watchers[w.scope] = m
	}
	m[w] = struct{}{}
	if w.bookmarks {
		c.bookmarkers[w] = struct{}{}
	}
	return nil
}

func (c *Cache) deregister(w *Watcher) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if m := c.watchers[w.scope]; m != nil {
		delete(m, w)
		if len(m) == 0 {
			delete(c.watchers, w.scope)
		}
	}
	delete(c.bookmarkers, w)
}

// terminateAll ends every watcher, delivering err to each when not nil.
func (c *Cache) terminateAll(err error) {
	c.wmu.Lock()
	var all []*Watcher
	for _, m := range c.watchers {
		for w := range m {
			all = append(all, w)
		}
	}
	clear(c.watchers)
	clear(c.bookmarkers)
	c.wmu.Unlock()
	for _, w := range all {
		w.end(err)
	}
}

// run sends the initial events, then forwards changes until the watcher
// ends.
func (w *Watcher) run(ctx context.Context) {
	defer close(w.result)
	defer w.end(nil)

	// sent is the highest revision the client is known to be current to;
	// bookmarks only move it forward.
	sent := w.minRev
	if w.initial != nil {
		ok := true
		from := w.c.listPrefix(w.filter.ns)
		w.initial.AscendGreaterOrEqual(&Item{Key: from}, func(it *Item) bool {
			if !strings.HasPrefix(it.Key, from) {
				return false
			}
			if w.filter.matches(it) {
				ok = w.emit(ctx, Event{Type: Added, Item: it, Revision: it.Revision})
			}
			return ok
		})
		w.initial = nil
		if !ok {
			w.finish(ctx)
			return
		}
		sent = w.initialRev
		if w.endBookmark && !w.emit(ctx, Event{Type: Bookmark, Revision: w.initialRev, InitialEventsEnd: true}) {
			w.finish(ctx)
			return
		}
	}
	for _, ch := range w.replay {
		if ev, ok := w.convert(ch); ok {
			if !w.emit(ctx, ev) {
				w.finish(ctx)
				return
			}
			sent = max(sent, ch.rev)
		}
	}
	w.replay = nil

	// seen is the newest revision the watcher has processed, matching or
	// not: the final bookmark reports it.
	seen := sent
	var final <-chan time.Time
	if !w.finalAt.IsZero() {
		t := w.c.clock.NewTimer(w.finalAt.Sub(w.c.clock.Now()))
		defer t.Stop()
		final = t.C()
	}
	for {
		select {
		case <-final:
			final = nil
			if seen > 0 && !w.emit(ctx, Event{Type: Bookmark, Revision: seen}) {
				w.finish(ctx)
				return
			}
			sent = max(sent, seen)
		case ch := <-w.input:
			switch ch.kind {
			case kindEvent:
				if ch.seq <= w.startSeq || ch.rev <= w.minRev {
					continue
				}
				seen = max(seen, ch.rev)
				if ev, ok := w.convert(ch); ok {
					if !w.emit(ctx, ev) {
						w.finish(ctx)
						return
					}
					sent = max(sent, ch.rev)
				}
			case kindBookmark:
				// A bookmark at ch.rev follows, in the input, every change
				// up to ch.rev, so the client has them all.
				seen = max(seen, ch.rev)
				if ch.rev > sent {
					if !w.emit(ctx, Event{Type: Bookmark, Revision: ch.rev}) {
						w.finish(ctx)
						return
					}
					sent = ch.rev
				}
			}
		case <-w.done:
			w.finish(ctx)
			return
		case <-ctx.Done():
			return
		}
	}
}

// emit delivers one event unless the watcher ends first.
func (w *Watcher) emit(ctx context.Context, ev Event) bool {
	select {
	case w.result <- ev:
		return true
	case <-w.done:
		return false
	case <-ctx.Done():
		return false
	}
}

// finish delivers the terminating error, if any, while the client still
// reads.
func (w *Watcher) finish(ctx context.Context) {
	select {
	case <-w.done:
	default:
		return
	}
	if w.endErr == nil {
		return
	}
	select {
	case w.result <- Event{Type: Error, Err: w.endErr}:
	case <-w.stopped:
	case <-ctx.Done():
	}
}

// convert turns a change into the event this watcher sees, following the
// watcher's selectors across the change: an object that starts matching
// is Added, one that stops matching is Deleted (in its last matching state,
// at the change's revision).
func (w *Watcher) convert(ch *change) (Event, bool) {
	curOK := ch.cur != nil && w.filter.matches(ch.cur)
	prevOK := ch.prev != nil && w.filter.matches(ch.prev)
	switch {
	case curOK && prevOK:
		return Event{Type: Modified, Item: ch.cur, Revision: ch.rev}, true
	case curOK:
		return Event{Type: Added, Item: ch.cur, Revision: ch.rev}, true
	case prevOK:
		return Event{Type: Deleted, Item: ch.gone(), Revision: ch.rev}, true
	}
	return Event{}, false
}
