package watchcache

import (
	"context"
	"errors"
	"fmt"
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
// gone view and the lazily taken snapshot. The window holds up to
// WindowSize of them per resource, so the change says no more than it
// must: its key and type (Added, Modified or Deleted, as seen by a
// watcher that sees both states) are those of cur and prev.
type change struct {
	kind changeKind
	seq  uint64
	rev  int64
	cur  *Item // nil for Deleted
	prev *Item // the state before; nil for Added
	// size is what the window charges for holding this change (see
	// changeBytes); snapshot adds to it once one is taken.
	size int64

	// snap is the state after this change, taken only when a list or
	// watch needs it (see Cache.snapshotAt); guarded by Cache.mu.
	snap *btree.BTree[*Item]

	goneOnce sync.Once
	goneItem *Item
	decode   Decoder
}

// gone is the previous state with metadata.resourceVersion set to the
// change's revision: the object of a Deleted event. Built once, shared by
// every watcher. It is rebuilt from prev's JSON (the decoder overwrites
// the resourceVersion), so the window keeps no raw stored value.
func (ch *change) gone() *Item {
	ch.goneOnce.Do(func() {
		ch.goneItem = ch.prev
		if ch.prev == nil || ch.decode == nil {
			return
		}
		if it, err := ch.decode(ch.prev.Key, ch.prev.JSON(), ch.rev); err == nil {
			ch.goneItem = it
		}
	})
	return ch.goneItem
}

// Estimates of what the window retains beyond the bytes of an item's
// strings, on 64-bit platforms. They need not be exact: they make the byte
// bound track the real heap within a small factor.
const (
	changeOverhead = 200 // change struct, its ring slot, the dispatcher's hand-off
	itemOverhead   = 160 // Item struct and slice/string headers
	mapOverhead    = 48  // a map's header
	mapSlotBytes   = 40  // per slot (string key and value headers, control byte)
	mapMinSlots    = 8   // a map's smallest table
	// nodeBytes is one copied B-tree node (degree 16: up to 31 items and
	// 32 children, 8 bytes each, plus headers): a snapshot makes the next
	// write on the live tree copy one node per level.
	nodeBytes = 576
)

// itemBytes estimates the heap an item holds.
func itemBytes(it *Item) int64 {
	if it == nil {
		return 0
	}
	n := itemOverhead + it.ownSize() + len(it.Key) + len(it.Name) + len(it.Namespace) + it.Labels.size()
	if m := it.Fields; m != nil {
		n += mapOverhead + mapSlotBytes*max(len(m), mapMinSlots)
		for k, v := range m {
			n += len(k) + len(v)
		}
	}
	return int64(n)
}

// changeBytes is what holding ch in the window costs beyond the current
// state: the superseded object it keeps alive (cur is either current or
// charged as the prev of a later change, which leaves the window after
// this one), twice for a delete, whose gone view copies it.
func changeBytes(ch *change) int64 {
	n := int64(changeOverhead) + itemBytes(ch.prev)
	if ch.cur == nil { // deleted
		n += itemBytes(ch.prev)
	}
	return n
}

// snapshotBytes estimates what keeping a snapshot of a tree of n items
// costs: the next write copies one node per level.
func snapshotBytes(n int) int64 {
	levels := int64(1)
	for ; n > 2*btreeDegree-1; n /= btreeDegree {
		levels++
	}
	return levels * nodeBytes
}

// window is a ring of the most recent changes, oldest first, bounded by
// count and by the estimated bytes they keep alive.
type window struct {
	// buf is the ring; it grows up to size as changes arrive, so that the
	// caches of quiet resources stay small.
	buf   []*change
	size  int
	head  int // index of the oldest change
	count int
	// start is the oldest revision a watch may resume from: the window
	// holds every change with rev > start.
	start int64
	// base is the snapshot at start, when one has been taken (nil: none).
	base *btree.BTree[*Item]
	// bytes is the sum of the held changes' sizes; maxBytes bounds it,
	// except that the newest floor changes are always kept.
	bytes    int64
	maxBytes int64
	floor    int
}

// windowFloor is how many recent changes a cache keeps whatever their
// size, so that a watch resuming after a short break finds them even for
// objects of a megabyte, where the byte bound alone would keep a handful.
// Upstream's window is never smaller either.
const windowFloor = 100

// initialRing is the ring's first capacity.
const initialRing = 64

func newWindow(size int, maxBytes int64) window {
	return window{buf: make([]*change, min(size, initialRing)), size: size, maxBytes: maxBytes}
}

func (w *window) at(i int) *change { return w.buf[(w.head+i)%len(w.buf)] }

// push appends ch, evicting the oldest changes while the window holds
// too many or too many bytes (beyond the floor). Without a floor, ch
// itself is evicted if it alone is over the byte bound: a watch then
// resumes only from ch's revision on.
func (w *window) push(ch *change) {
	if w.count == len(w.buf) {
		if len(w.buf) < w.size {
			w.grow()
		} else {
			w.evict()
		}
	}
	w.buf[(w.head+w.count)%len(w.buf)] = ch
	w.count++
	w.bytes += ch.size
	w.trim()
}

// grow doubles the ring (up to size), oldest change first.
func (w *window) grow() {
	buf := make([]*change, min(2*len(w.buf), w.size))
	for i := range w.count {
		buf[i] = w.at(i)
	}
	w.buf, w.head = buf, 0
}

// charge adds n bytes to ch's size (ch is held) and trims the window.
func (w *window) charge(ch *change, n int64) {
	ch.size += n
	w.bytes += n
	w.trim()
}

func (w *window) trim() {
	for w.count > w.floor && w.bytes > w.maxBytes {
		w.evict()
	}
}

// evict drops the oldest change; the window then starts at its revision.
func (w *window) evict() {
	old := w.buf[w.head]
	w.buf[w.head] = nil
	w.head = (w.head + 1) % len(w.buf)
	w.count--
	w.bytes -= old.size
	w.start = old.rev
	w.base = old.snap
	if w.count == 0 {
		w.head = 0
	}
}

func (w *window) reset(rev int64) {
	clear(w.buf)
	w.head, w.count, w.bytes = 0, 0, 0
	w.start = rev
	w.base = nil
}

// after returns the index of the first change with rev > rev.
func (w *window) after(rev int64) int {
	return sort.Search(w.count, func(i int) bool { return w.at(i).rev > rev })
}

// since returns the changes with rev > rev, oldest first.
func (w *window) since(rev int64) []*change {
	i := w.after(rev)
	out := make([]*change, 0, w.count-i)
	for ; i < w.count; i++ {
		out = append(out, w.at(i))
	}
	return out
}

// snapshotAt returns an immutable state at rev, or false when the window
// no longer reaches back to rev. The caller checks that the cache has seen
// rev.
//
// Snapshots are taken lazily: cloning the live tree is O(1), but every
// clone makes the next write copy a path of nodes, so cloning after every
// event (what a list needs to continue on its exact revision) would cost
// a path per event for the whole window. Instead the state at the newest
// revision is cloned when first asked for, and an older state is rebuilt
// from the nearest newer snapshot by undoing the changes in between. Both
// are kept with their change, so the pages of one list share them.
func (c *Cache) snapshotAt(rev int64) (*btree.BTree[*Item], bool) {
	c.mu.Lock()
	if rev < c.win.start {
		c.mu.Unlock()
		return nil, false
	}
	// The state at rev is the one after change i-1 (the base if i is 0).
	i := c.win.after(rev)
	if s := c.cachedLocked(i - 1); s != nil {
		c.mu.Unlock()
		return s, true
	}
	if i == c.win.count {
		s := c.latestLocked()
		c.mu.Unlock()
		return s, true
	}
	// Undo changes i..j-1 from the snapshot after change j-1, the nearest
	// one kept (or the current state, taken now).
	j := i + 1
	for j < c.win.count && c.cachedLocked(j-1) == nil {
		j++
	}
	undo := make([]*change, 0, j-i)
	for k := i; k < j; k++ {
		undo = append(undo, c.win.at(k))
	}
	target := c.win.at(i) // finds slot i-1 again after unlocking
	var from *btree.BTree[*Item]
	if j == c.win.count {
		from = c.latestLocked() // may trim the window: indexes are stale from here
	} else {
		from = c.cachedLocked(j - 1)
	}
	from = from.Clone() // our own copy to undo on: from itself is shared
	c.mu.Unlock()

	// The clone is ours alone; its nodes are shared with other trees but
	// copied before being changed, so this runs without the lock.
	for k := len(undo) - 1; k >= 0; k-- {
		ch := undo[k]
		if ch.prev != nil {
			from.ReplaceOrInsert(ch.prev)
		} else {
			from.Delete(ch.cur) // added: undone by deleting its key
		}
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	// Keep it if change i-1 is still where it was (the window may have
	// moved on, or been reset, meanwhile; the snapshot is right either way).
	if k := c.win.after(rev); k < c.win.count && c.win.at(k) == target {
		if s := c.cachedLocked(k - 1); s != nil {
			return s, true
		}
		c.keepLocked(k-1, from)
	}
	return from, true
}

// latest returns a snapshot of the current state and the revision it is
// current to.
func (c *Cache) latest() (*btree.BTree[*Item], int64) {
	c.mu.RLock()
	s, rev := c.cachedLocked(c.win.count-1), c.rev
	c.mu.RUnlock()
	if s != nil {
		return s, rev
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.latestLocked(), c.rev
}

// latestLocked returns a snapshot of the current state (the state after
// the newest change), cloning the live tree if none is kept yet. c.mu is
// held for writing.
func (c *Cache) latestLocked() *btree.BTree[*Item] {
	i := c.win.count - 1
	if s := c.cachedLocked(i); s != nil {
		return s
	}
	s := c.tree.Clone()
	c.keepLocked(i, s)
	return s
}

// cachedLocked returns the kept snapshot after change i (i == -1: the
// base), or nil.
func (c *Cache) cachedLocked(i int) *btree.BTree[*Item] {
	if i < 0 {
		return c.win.base
	}
	return c.win.at(i).snap
}

// keepLocked keeps s as the snapshot after change i (i == -1: the base)
// and charges the window for it.
func (c *Cache) keepLocked(i int, s *btree.BTree[*Item]) {
	if i < 0 {
		c.win.base = s
		return
	}
	ch := c.win.at(i)
	ch.snap = s
	c.win.charge(ch, snapshotBytes(s.Len()))
}

// replace installs a freshly listed state at rev: the window restarts
// there, and every watcher is told its history is gone (410) because the
// events between its position and rev are unknown. A first list is ready
// at once, or with readyAt once the cache reaches that revision.
func (c *Cache) replace(tree *btree.BTree[*Item], rev, readyAt int64) {
	c.mu.Lock()
	if rev < c.rev {
		// A list can't be older than what we've seen; keep monotonic.
		rev = c.rev
	}
	c.tree = tree
	c.win.reset(rev)
	wasReady := c.ready
	if !wasReady {
		c.readyAt = readyAt
	}
	c.advanceLocked(rev)
	c.mu.Unlock()

	if wasReady {
		c.terminateAll(errWatchExpired())
	}
	c.send(&change{kind: kindProgress, rev: rev})
}

// apply folds one storage event into the state and hands it to the
// dispatcher.
func (c *Cache) apply(ev storage.Event) {
	ch := &change{kind: kindEvent, rev: ev.Revision, decode: c.decode}
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
			ch.prev = prev
		}
	case had:
		c.tree.Delete(prev)
		ch.prev = prev
	default:
		// Neither held nor decodable now (a key we never held, because
		// its value did not decode, was deleted): watchers never saw it.
		c.advanceLocked(ev.Revision)
		c.mu.Unlock()
		c.send(&change{kind: kindProgress, rev: ev.Revision})
		return
	}
	c.received.Add(1)
	c.seq++
	ch.seq = c.seq
	ch.size = changeBytes(ch)
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
	if !c.ready && c.rev >= c.readyAt && c.rev > 0 {
		c.ready = true
		close(c.readyCh)
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

// errStoppedWaiting is waitFresh's error when the cache stopped while it
// waited: its resource changed (a CRD's new schema starts a new cache).
// Reads then go to storage, as before the cache was ready: upstream's
// requests finish on the storage they started with.
var errStoppedWaiting = errors.New("watch cache stopped while a read waited for it")

// waitFresh waits until the cache has seen rev, asking storage for
// progress notifications while it waits (an idle prefix sees no events).
// It reports false if FreshTimeout passed first, and errStoppedWaiting if
// the cache stopped.
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
			return false, errStoppedWaiting
		}
		c.mu.RLock()
		cur, fresh = c.rev, c.fresh
		c.mu.RUnlock()
		if cur >= rev {
			return true, nil
		}
	}
}

// behind is what a consistent read does when the cache did not reach rev,
// a revision storage has committed, within FreshTimeout: the read goes to
// storage, and when the cache's revision did not move at all from before
// (the revision it had when the read began) although progress was asked
// for all along, the watch has fallen silent rather than behind: storage
// is asked to restart it on a new stream.
func (c *Cache) behind(what string, rev, before int64) {
	have := c.Revision()
	c.log.Warn("watchcache: cache behind for a consistent "+what+", reading storage", "want", rev, "have", have)
	if have == before {
		storage.RestartWatches(c.store, fmt.Sprintf("the watch of %s stayed at revision %d for %s while storage was at %d",
			c.prefix, have, c.opts.FreshTimeout, rev))
	}
}

func (c *Cache) requestProgress(ctx context.Context) {
	if err := c.store.RequestProgress(ctx); err != nil {
		c.log.Debug("watchcache: request progress", "err", err)
	}
}
