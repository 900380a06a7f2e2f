package watchcache

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"
	"k8s.io/utils/third_party/forked/golang/btree"

	"github.com/crdserver/crdserver/internal/storage"
)

// Defaults for Options left zero.
const (
	DefaultWindowSize       = 10000
	DefaultWindowBytes      = 8 << 20
	DefaultBookmarkInterval = time.Minute
	DefaultWatcherBuffer    = 100
	DefaultFreshTimeout     = 3 * time.Second
	DefaultListPageSize     = 1000
)

// Options configure a Cache. The zero value works; fields are read once by
// New.
type Options struct {
	// WindowSize is how many recent events the cache keeps; watches and
	// exact lists older than the window are answered 410 Expired (lists
	// fall back to storage first).
	WindowSize int
	// WindowBytes bounds the memory the window keeps alive beyond the
	// current state, as estimated: the superseded objects its events hold
	// and the snapshots lists have taken. The oldest events go first when
	// either bound is reached. Updates of 2 KB objects fill the default
	// with about 2,500 events (seconds of a write burst, minutes of a
	// steady trickle); a watch that falls further behind gets 410 Expired
	// and relists, as upstream's clients do. The bound is per resource:
	// memory grows with the number of busy resources, not of quiet ones.
	WindowBytes int64
	// BookmarkInterval is how often watchers that allow bookmarks receive
	// one with the cache's revision.
	BookmarkInterval time.Duration
	// WatcherBuffer is the capacity of each watcher's input and result
	// channels.
	WatcherBuffer int
	// FreshTimeout bounds how long a read waits for the cache to reach a
	// revision before it falls back to storage or answers 504 (upstream: 3s).
	FreshTimeout time.Duration
	// ListPageSize is the page size of the reflector's storage lists.
	ListPageSize int64
	// Backfill, when positive, makes the first list read the prefix as it
	// was that many revisions before storage's current one, and the watch
	// replay the events since, so that the window starts there rather
	// than at the list: a client that resumes a watch from a revision a
	// little older than the cache (a server restarted under its
	// informers, or a watch from the first revisions of a new server, as
	// upstream's caches, started before any write, allow) continues where
	// it was instead of getting 410 Expired and relisting. The cache is
	// ready only once it has caught up with the revision it started from.
	// A compacted revision, or a replay that fails (an old value that no
	// longer decodes), falls back to a list at the current one.
	Backfill int64
	// Clock is the time source for bookmarks, timeouts and the slow-watcher
	// budget; tests inject a fake one.
	Clock  clock.Clock
	Logger *slog.Logger
}

func (o *Options) complete() {
	if o.WindowSize <= 0 {
		o.WindowSize = DefaultWindowSize
	}
	if o.WindowBytes <= 0 {
		o.WindowBytes = DefaultWindowBytes
	}
	if o.BookmarkInterval <= 0 {
		o.BookmarkInterval = DefaultBookmarkInterval
	}
	if o.WatcherBuffer <= 0 {
		o.WatcherBuffer = DefaultWatcherBuffer
	}
	if o.FreshTimeout <= 0 {
		o.FreshTimeout = DefaultFreshTimeout
	}
	if o.ListPageSize <= 0 {
		o.ListPageSize = DefaultListPageSize
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Cache holds one resource's current objects and a window of recent events,
// fed by one storage watch on prefix. It serves List and Watch from memory.
// All methods are safe for concurrent use.
//
// State is a copy-on-write B-tree of items ordered by key. A list clones
// it (O(1); later writes copy only the nodes they touch) and the clone is
// kept with the newest event in the window, so a paginated list can
// continue on the exact snapshot it started from for as long as that
// revision is in the window, like upstream's ListFromCacheSnapshot. States
// nobody listed are rebuilt on demand from the events (see snapshotAt).
type Cache struct {
	store  storage.Interface
	prefix string
	decode Decoder
	opts   Options
	log    *slog.Logger
	clock  clock.Clock

	// mu guards the fields below it. Lock order: mu before wmu.
	mu sync.RWMutex
	// tree is the live state; only the reflector mutates it, under mu.
	tree *btree.BTree[*Item]
	// rev is the revision the cache has seen everything up to (events or
	// progress notifications).
	rev int64
	// seq numbers applied events across relists; watchers use it to drop
	// events they already got from the window.
	seq uint64
	win window
	// fresh is closed and replaced whenever rev advances.
	fresh chan struct{}
	ready bool
	// readyAt, while not ready, is the revision a backfilled first list
	// must catch up with before the cache is ready (see Options.Backfill).
	readyAt int64

	// wmu guards the watcher registry.
	wmu      sync.Mutex
	watchers map[string]map[*Watcher]struct{} // by namespace scope ("" = all)
	// bookmarkers are the watchers that allow bookmarks.
	bookmarkers map[*Watcher]struct{}
	stopped     bool

	// revs shares storage's current revision among concurrent
	// consistent gets.
	revs revCoalescer

	readyCh  chan struct{}
	incoming chan *change

	// Counts for Stats; atomic, so that reading them takes no lock.
	received, dispatched, terminated atomic.Uint64

	startOnce sync.Once
	stopOnce  sync.Once
	cancel    context.CancelFunc
	stopCh    chan struct{}
	wg        sync.WaitGroup
}

// New returns a cache of the keys under prefix (which ends in "/"). Call
// Start to fill it.
func New(store storage.Interface, prefix string, decode Decoder, opts Options) *Cache {
	opts.complete()
	c := &Cache{
		store:       store,
		prefix:      prefix,
		decode:      decode,
		opts:        opts,
		log:         opts.Logger.With("prefix", prefix),
		clock:       opts.Clock,
		tree:        newTree(),
		win:         newWindow(opts.WindowSize, opts.WindowBytes),
		fresh:       make(chan struct{}),
		watchers:    make(map[string]map[*Watcher]struct{}),
		bookmarkers: make(map[*Watcher]struct{}),
		readyCh:     make(chan struct{}),
		incoming:    make(chan *change, 100),
		stopCh:      make(chan struct{}),
	}
	c.win.floor = min(windowFloor, opts.WindowSize)
	c.revs.fetch = store.CurrentRevision
	if lr, ok := store.(storage.LocalRevisioner); ok {
		c.revs.local = lr.LocalRevision
	}
	c.revs.spacing = revReadSpacing
	return c
}

// Start runs the reflector and the dispatcher until ctx ends or Stop is
// called. It returns at once; WaitReady reports when the first list is in.
func (c *Cache) Start(ctx context.Context) {
	c.startOnce.Do(func() {
		ctx, cancel := context.WithCancel(ctx)
		c.cancel = cancel
		c.wg.Add(2)
		go func() {
			defer c.wg.Done()
			c.reflect(ctx)
		}()
		go func() {
			defer c.wg.Done()
			c.dispatchLoop(ctx)
		}()
		// Not a goroutine waiting on ctx: the server keeps a cache per
		// resource, and idle goroutines cost memory each.
		context.AfterFunc(ctx, c.shutdown)
	})
}

// Stop ends the reflector and dispatcher, closes every watcher and waits
// for the cache's goroutines. Safe to call more than once.
func (c *Cache) Stop() {
	c.startOnce.Do(func() {}) // from here on Start is a no-op and c.cancel is settled
	if c.cancel != nil {
		c.cancel()
	}
	c.shutdown()
	c.wg.Wait()
}

func (c *Cache) shutdown() {
	c.stopOnce.Do(func() {
		close(c.stopCh)
		c.wmu.Lock()
		c.stopped = true
		c.wmu.Unlock()
		c.terminateAll(nil)
	})
}

// WaitReady blocks until the first list has been loaded or ctx ends.
func (c *Cache) WaitReady(ctx context.Context) error {
	select {
	case <-c.readyCh:
		return nil
	case <-c.stopCh:
		return errStopped()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Revision is the revision the cache is current to (0 before the first
// list).
func (c *Cache) Revision() int64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.rev
}

// Ready reports whether the first list is in and, with Options.Backfill,
// the cache has caught up with the revision it started from.
func (c *Cache) Ready() bool { return c.isReady() }

func (c *Cache) isReady() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.ready
}

// reflect keeps the cache in sync: list, then watch from the list's
// revision; a watch that ends is resumed from the last revision seen, and
// only a compacted resume forces a relist.
func (c *Cache) reflect(ctx context.Context) {
	backoff := newBackoff(c.clock)
	needList := true
	for ctx.Err() == nil {
		if needList {
			if err := c.relist(ctx); err != nil {
				if ctx.Err() != nil {
					return
				}
				c.log.Error("watchcache: list failed", "err", err)
				backoff.wait(ctx)
				continue
			}
			needList = false
		}
		progressed, err := c.watch(ctx)
		if ctx.Err() != nil {
			return
		}
		if progressed {
			backoff.reset()
		}
		switch {
		case errors.Is(err, storage.ErrCompacted):
			c.log.Info("watchcache: watch compacted, relisting", "rev", c.Revision())
			needList = true
			backoff.reset()
		case err != nil && c.opts.Backfill > 0 && !c.isReady():
			// The replay of a backfilled first list failed (an event
			// older than the start that no longer decodes: a value
			// encrypted with a key since removed): start at the current
			// revision instead, as without backfill, where such values
			// are skipped.
			c.log.Warn("watchcache: replaying the revisions before the start failed, listing at the current one", "rev", c.Revision(), "err", err)
			c.opts.Backfill = 0
			needList = true
		case err != nil:
			c.log.Warn("watchcache: watch ended, resuming", "rev", c.Revision(), "err", err)
			backoff.wait(ctx)
		default:
			// closed without error: resume at once, but back off if it
			// keeps happening.
			backoff.wait(ctx)
		}
	}
}

// relist reads the whole prefix at one revision, page by page, and
// replaces the cache's state with it. The first list of a cache with
// Options.Backfill reads an older revision (see there).
func (c *Cache) relist(ctx context.Context) error {
	var from, readyAt int64
	if c.opts.Backfill > 0 && !c.isReady() {
		if cur, err := c.store.CurrentRevision(ctx); err == nil && cur > 0 {
			from, readyAt = max(1, cur-c.opts.Backfill), cur
		}
	}
	tree, rev, err := c.list(ctx, from)
	if from > 0 && errors.Is(err, storage.ErrCompacted) {
		readyAt = 0
		tree, rev, err = c.list(ctx, 0)
	}
	if err != nil {
		return err
	}
	c.replace(tree, rev, readyAt)
	if readyAt > rev {
		// An idle prefix sees no events: ask storage for progress until
		// the cache has caught up.
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			for ctx.Err() == nil && !c.isReady() {
				if _, err := c.waitFresh(ctx, readyAt); err != nil {
					return
				}
			}
		}()
	}
	return nil
}

// list reads the whole prefix at rev (0: the current revision).
func (c *Cache) list(ctx context.Context, rev int64) (*btree.BTree[*Item], int64, error) {
	// Each page is decoded as it arrives, so that only one page of stored
	// values is held at a time next to the decoded items.
	tree := newTree()
	start := ""
	for {
		res, err := c.store.List(ctx, c.prefix, storage.ListOptions{Revision: rev, Limit: c.opts.ListPageSize, StartKey: start})
		if err != nil {
			return nil, 0, fmt.Errorf("list %s at %d: %w", c.prefix, rev, err)
		}
		if rev == 0 {
			rev = res.Revision
		}
		for _, kv := range res.Items {
			it, err := c.decode(kv.Key, kv.Value, kv.ModRevision)
			if err != nil {
				c.log.Error("watchcache: skipping undecodable object", "key", kv.Key, "err", err)
				continue
			}
			tree.ReplaceOrInsert(it)
		}
		if !res.More || len(res.Items) == 0 {
			return tree, rev, nil
		}
		start = res.Items[len(res.Items)-1].Key + "\x00"
	}
}

// watch applies the storage watch from the cache's revision until it
// ends. It reports whether anything arrived, and why the watch ended.
func (c *Cache) watch(ctx context.Context) (progressed bool, err error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	from := c.Revision()
	for ev := range c.store.Watch(wctx, c.prefix, from) {
		switch ev.Type {
		case storage.EventError:
			return progressed, ev.Err
		case storage.EventProgress:
			c.progress(ev.Revision)
		case storage.EventPut, storage.EventDelete:
			if ev.Revision <= from {
				continue // a resumed watch must not replay what we have
			}
			c.apply(ev)
		}
		progressed = true
	}
	return progressed, nil
}

// backoff spaces out retries of a failing storage: 0, 100ms, 200ms, … 5s.
type backoff struct {
	clock clock.Clock
	next  time.Duration
}

func newBackoff(clk clock.Clock) *backoff { return &backoff{clock: clk} }

func (b *backoff) reset() { b.next = 0 }

func (b *backoff) wait(ctx context.Context) {
	d := b.next
	switch {
	case b.next == 0:
		b.next = 100 * time.Millisecond
	case b.next < 5*time.Second:
		b.next *= 2
	}
	if d == 0 {
		return
	}
	t := b.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
	case <-ctx.Done():
	}
}

// Stats are a cache's numbers for monitoring.
type Stats struct {
	// Objects is how many objects the cache holds now.
	Objects int
	// EventsReceived counts the storage events applied, EventsDispatched
	// those handed to watchers (upstream's watch cache metrics of the same
	// names), TerminatedWatchers the watchers closed for not keeping up.
	EventsReceived, EventsDispatched, TerminatedWatchers uint64
}

// Stats returns the cache's numbers; it is cheap enough for every scrape.
func (c *Cache) Stats() Stats {
	c.mu.RLock()
	n := c.tree.Len()
	c.mu.RUnlock()
	return Stats{
		Objects:            n,
		EventsReceived:     c.received.Load(),
		EventsDispatched:   c.dispatched.Load(),
		TerminatedWatchers: c.terminated.Load(),
	}
}
