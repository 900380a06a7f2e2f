package watchcache

import (
	"context"
	"sort"
	"sync"
	"time"

	"k8s.io/utils/third_party/forked/golang/btree"

	"github.com/crdserver/crdserver/internal/storage"
)

// btreeDegree is upstream's choice for its cache store, from benchmarks.
const btreeDegree = 16

func newTree() *btree.BTree[*Item] {
	return btree.New(btreeDegree, func(a, b *Item) bool { return a.Key < b.Key })
}

// changeKind says what a change carries through the dispatcher.
type changeKind uint8

const (
	kindEvent    changeKind = iota // an applied event
	kindProgress                   // the cache advanced to rev without a change
	kindBookmark                   // a periodic bookmark at rev
)

// change is one applied event as kept in the window and handed to
// watchers. It is immutable once published, except for the lazily built
// gone view.
type change struct {
	kind changeKind
	seq  uint64
	rev  int64
	typ  EventType // Added, Modified or Deleted (as seen by a watcher that sees both states)
	key  string
	cur  *Item // nil for Deleted
	prev *Item // the state before; nil for Added
	// prevRaw is the stored value before the change; it rebuilds prev at
	// rev for Deleted events (the object's last state with the revision
	// of the delete, as upstream sends).
	prevRaw []byte
	// state is the snapshot after this change; nil for bookmarks.
	state *btree.BTree[*Item]

	goneOnce sync.Once
	goneItem *Item
	decode   Decoder
}

// gone is the previous state with metadata.resourceVersion set to the
// change's revision: the object of a Deleted event. Built once, shared by
// every watcher.
func (ch *change) gone() *Item {
	ch.goneOnce.Do(func() {
		ch.goneItem = ch.prev
		if ch.prevRaw == nil || ch.decode == nil {
			return
		}
		if it, err := ch.decode(ch.key, ch.prevRaw, ch.rev); err == nil {
			ch.goneItem = it
		}
	})
	return ch.goneItem
}

// window is a ring of the most recent changes, oldest first.
type window struct {
	buf   []*change
	head  int // index of the oldest change
	count int
	// start is the oldest revision a watch may resume from: the window
	// holds every change with rev > start.
	start int64
	// base is the snapshot at start.
	base *btree.BTree[*Item]
}

func newWindow(size int) window {
	return window{buf: make([]*change, size), base: newTree()}
}

func (w *window) at(i int) *change { return w.buf[(w.head+i)%len(w.buf)] }

// push appends ch, evicting the oldest change when full.
func (w *window) push(ch *change) {
	if w.count == len(w.buf) {
		old := w.buf[w.head]
		w.buf[w.head] = nil
		w.head = (w.head + 1) % len(w.buf)
		w.count--
		w.start = old.rev
		w.base = old.state
	}
	w.buf[(w.head+w.count)%len(w.buf)] = ch
	w.count++
}

func (w *window) reset(rev int64, state *btree.BTree[*Item]) {
	clear(w.buf)
	w.head, w.count = 0, 0
	w.start = rev
	w.base = state
}

// since returns the changes with rev > rev, oldest first.
func (w *window) since(rev int64) []*change {
	i := sort.Search(w.count, func(i int) bool { return w.at(i).rev > rev })
	out := make([]*change, 0, w.count-i)
	for ; i < w.count; i++ {
		out = append(out, w.at(i))
	}
	return out
}

// snapshotAt returns the state at rev, if the window still covers it. The
// caller checks rev against the cache's current revision.
func (w *window) snapshotAt(rev int64) (*btree.BTree[*Item], bool) {
	if rev < w.start {
		return nil, false
	}
	i := sort.Search(w.count, func(i int) bool { return w.at(i).rev > rev })
	if i == 0 {
		return w.base, true
	}
	return w.at(i - 1).state, true
}

// latest returns the current state.
func (w *window) latest() *btree.BTree[*Item] {
	if w.count == 0 {
		return w.base
	}
	return w.at(w.count - 1).state
}

// replace installs a freshly listed state at rev: the window restarts
// there, and every watcher is told its history is gone (410) because the
// events between its position and rev are unknown.
func (c *Cache) replace(tree *btree.BTree[*Item], rev int64) {
	c.mu.Lock()
	if rev < c.rev {
		// A list can't be older than what we've seen; keep monotonic.
		rev = c.rev
	}
	c.tree = tree
	c.win.reset(rev, tree.Clone())
	wasReady := c.ready
	c.ready = true
	c.advanceLocked(rev)
	c.mu.Unlock()

	if wasReady {
		c.terminateAll(errWatchExpired())
	} else {
		close(c.readyCh)
	}
	c.send(&change{kind: kindProgress, rev: rev})
}

// apply folds one storage event into the state and hands it to the
// dispatcher.
func (c *Cache) apply(ev storage.Event) {
	ch := &change{kind: kindEvent, rev: ev.Revision, key: ev.Key, decode: c.decode}
	var cur *Item
	if ev.Type == storage.EventPut {
		it, err := c.decode(ev.Key, ev.Value, ev.Revision)
		if err != nil {
			c.log.Error("watchcache: skipping undecodable object", "key", ev.Key, "rev", ev.Revision, "err", err)
			// Treat it as gone so that lists don't serve a stale state.
		} else {
			cur = it
		}
	}

	c.mu.Lock()
	prev, had := c.tree.Get(&Item{Key: ev.Key})
	switch {
	case cur != nil:
		c.tree.ReplaceOrInsert(cur)
		ch.cur = cur
		if had {
			ch.typ, ch.prev, ch.prevRaw = Modified, prev, ev.PrevValue
		} else {
			ch.typ = Added
		}
	case had:
		c.tree.Delete(prev)
		ch.typ, ch.prev, ch.prevRaw = Deleted, prev, ev.PrevValue
	case ev.PrevValue != nil:
		// Deleted, but we never held it (undecodable before): still tell
		// watchers if its last state decodes.
		it, err := c.decode(ev.Key, ev.PrevValue, ev.Revision)
		if err != nil {
			c.advanceLocked(ev.Revision)
			c.mu.Unlock()
			c.send(&change{kind: kindProgress, rev: ev.Revision})
			return
		}
		ch.typ, ch.prev, ch.prevRaw = Deleted, it, ev.PrevValue
	default:
		c.advanceLocked(ev.Revision)
		c.mu.Unlock()
		c.send(&change{kind: kindProgress, rev: ev.Revision})
		return
	}
	c.seq++
	ch.seq = c.seq
	ch.state = c.tree.Clone()
	c.win.push(ch)
	c.advanceLocked(ev.Revision)
	c.mu.Unlock()
	c.send(ch)
}

// progress records that storage has seen everything up to rev.
func (c *Cache) progress(rev int64) {
	c.mu.Lock()
	if rev <= c.rev {
		c.mu.Unlock()
		return
	}
	c.advanceLocked(rev)
	c.mu.Unlock()
	c.send(&change{kind: kindProgress, rev: rev})
}

func (c *Cache) advanceLocked(rev int64) {
	if rev > c.rev {
		c.rev = rev
	}
	close(c.fresh)
	c.fresh = make(chan struct{})
}

// send hands a change to the dispatcher, in order. It blocks while the
// dispatcher is behind, which slows the reflector rather than dropping.
func (c *Cache) send(ch *change) {
	select {
	case c.incoming <- ch:
	case <-c.stopCh:
	}
}

// waitFresh waits until the cache has seen rev, asking storage for
// progress notifications while it waits (an idle prefix sees no events).
// It reports false if FreshTimeout passed first.
func (c *Cache) waitFresh(ctx context.Context, rev int64) (bool, error) {
	c.mu.RLock()
	cur, fresh := c.rev, c.fresh
	c.mu.RUnlock()
	if cur >= rev {
		return true, nil
	}
	deadline := c.clock.NewTimer(c.opts.FreshTimeout)
	defer deadline.Stop()
	// Upstream asks for progress every 100ms while someone waits.
	const progressEvery = 100 * time.Millisecond
	tick := c.clock.NewTimer(progressEvery)
	defer tick.Stop()
	c.requestProgress(ctx)
	for {
		select {
		case <-fresh:
		case <-tick.C():
			tick.Reset(progressEvery)
			c.requestProgress(ctx)
		case <-deadline.C():
			return c.Revision() >= rev, nil
		case <-ctx.Done():
			return false, ctx.Err()
		case <-c.stopCh:
			return false, errStopped()
		}
		c.mu.RLock()
		cur, fresh = c.rev, c.fresh
		c.mu.RUnlock()
		if cur >= rev {
			return true, nil
		}
	}
}

func (c *Cache) requestProgress(ctx context.Context) {
	if err := c.store.RequestProgress(ctx); err != nil {
		c.log.Debug("watchcache: request progress", "err", err)
	}
}
