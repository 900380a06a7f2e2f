package watchcache

import (
	"context"
	"time"

	"k8s.io/utils/clock"
)

// dispatchLoop hands every applied change, in order, to the watchers that
// may want it, and sends periodic bookmarks. It never waits long on one
// watcher: a watcher whose buffer stays full past the shared time budget
// is closed (its client re-watches from the last revision it saw).
func (c *Cache) dispatchLoop(ctx context.Context) {
	timer := c.clock.NewTimer(c.opts.BookmarkInterval)
	defer timer.Stop()
	b := newBudget(c.clock)
	var lastRev int64
	var targets, blocked []*Watcher
	for {
		select {
		case ch := <-c.incoming:
			if ch.kind == kindEvent {
				targets = c.interested(ch, targets[:0])
				blocked = c.fanout(ch, targets, blocked[:0], b)
				c.dispatched.Add(1)
			}
			lastRev = max(lastRev, ch.rev)
		case <-timer.C():
			timer.Reset(c.opts.BookmarkInterval)
			if lastRev == 0 {
				continue
			}
			bm := &change{kind: kindBookmark, rev: lastRev}
			for _, w := range c.bookmarkWatchers(targets[:0]) {
				// Best effort: a full watcher gets the next one.
				w.tryAdd(bm)
			}
		case <-c.stopCh:
			return
		case <-ctx.Done():
			return
		}
	}
}

// interested appends the watchers whose namespace scope covers ch.
func (c *Cache) interested(ch *change, out []*Watcher) []*Watcher {
	ns := ""
	if ch.cur != nil {
		ns = ch.cur.Namespace
	} else if ch.prev != nil {
		ns = ch.prev.Namespace
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	for w := range c.watchers[""] {
		out = append(out, w)
	}
	if ns != "" {
		for w := range c.watchers[ns] {
			out = append(out, w)
		}
	}
	return out
}

func (c *Cache) bookmarkWatchers(out []*Watcher) []*Watcher {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	for w := range c.bookmarkers {
		out = append(out, w)
	}
	return out
}

// fanout offers ch to every target without blocking, then gives the ones
// that were full what is left of the time budget, closing those still full.
func (c *Cache) fanout(ch *change, targets, blocked []*Watcher, b *budget) []*Watcher {
	for _, w := range targets {
		if !w.tryAdd(ch) {
			blocked = append(blocked, w)
		}
	}
	if len(blocked) == 0 {
		return blocked
	}
	timeout := b.take()
	start := c.clock.Now()
	expired := timeout <= 0
	var t clock.Timer
	if !expired {
		t = c.clock.NewTimer(timeout)
	}
	for _, w := range blocked {
		if !expired {
			select {
			case w.input <- ch:
				continue
			case <-w.done:
				continue
			case <-t.C():
				expired = true
			}
		}
		c.log.Info("watchcache: closing unresponsive watcher", "namespace", w.filter.ns, "rev", ch.rev)
		c.terminated.Add(1)
		w.end(nil)
	}
	if t != nil {
		t.Stop()
	}
	b.giveBack(timeout - c.clock.Since(start))
	return blocked
}

// tryAdd offers ch without blocking; it reports false if the buffer is
// full. A watcher that has ended takes (and drops) anything.
func (w *Watcher) tryAdd(ch *change) bool {
	select {
	case w.input <- ch:
		return true
	case <-w.done:
		return true
	default:
		return false
	}
}

// budget is the time the dispatcher may spend waiting on full watchers,
// refilled slowly, as upstream: 50ms per second, at most 100ms, so that a
// burst of slow clients can't stall delivery to everyone else. Used only by
// the dispatcher goroutine.
type budget struct {
	clock clock.PassiveClock
	avail time.Duration
	last  time.Time
}

const (
	budgetRefillPerSecond = 50 * time.Millisecond
	budgetMax             = 100 * time.Millisecond
)

// newBudget starts full, so that a burst right after start (when many
// clients connect at once) is tolerated like later ones.
func newBudget(clk clock.PassiveClock) *budget {
	return &budget{clock: clk, avail: budgetMax, last: clk.Now()}
}

func (b *budget) take() time.Duration {
	now := b.clock.Now()
	if elapsed := now.Sub(b.last); elapsed > 0 {
		b.avail += time.Duration(elapsed.Seconds() * float64(budgetRefillPerSecond))
	}
	b.avail = min(b.avail, budgetMax)
	b.last = now
	d := b.avail
	b.avail = 0
	return d
}

func (b *budget) giveBack(d time.Duration) {
	if d > 0 {
		b.avail = min(b.avail+d, budgetMax)
	}
}
