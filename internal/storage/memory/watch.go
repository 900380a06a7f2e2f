package memory

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/crdserver/crdserver/internal/storage"
)

// watchBuffer is how many events a watch holds for a slow consumer
// before its goroutine waits; the log keeps the rest.
const watchBuffer = 16

// Watch implements storage.Interface. Each watch is a goroutine reading
// the store's change log from its own position, so a slow consumer holds
// up nobody and misses nothing until compaction passes it, which ends
// the watch with ErrCompacted as etcd does.
func (s *Store) Watch(ctx context.Context, prefix string, fromRev int64) <-chan storage.Event {
	out := make(chan storage.Event, watchBuffer)
	s.mu.Lock()
	if fromRev <= 0 {
		// "From now" is decided here, so writes after Watch returns are seen.
		fromRev = s.rev
	}
	w := &watcher{s: s, ctx: ctx, out: out, prefix: prefix, from: fromRev, next: fromRev + 1, progress: s.progress}
	s.mu.Unlock()
	go w.run()
	return out
}

// watcher is one watch's position in the log.
type watcher struct {
	s      *Store
	ctx    context.Context
	out    chan<- storage.Event
	prefix string
	from   int64 // the revision asked for: progress is never reported below it
	next   int64 // the first revision not yet reported
	// progress is the store's progress count this watch has answered.
	progress uint64
}

func (w *watcher) run() {
	defer close(w.out)
	for {
		batch, progress, wake, err := w.poll()
		if err != nil {
			w.send(storage.Event{Type: storage.EventError, Err: err})
			return
		}
		for _, ev := range batch {
			if !w.send(ev) {
				return
			}
		}
		// Everything up to progress is reported: a progress event now
		// cannot overtake a change of its revision.
		if progress > 0 && !w.send(storage.Event{Type: storage.EventProgress, Revision: progress}) {
			return
		}
		select {
		case <-wake:
		case <-w.ctx.Done():
			return
		}
	}
}

// poll takes, under the store's lock, the changes under the prefix since
// the last poll, the revision of a progress event owed (0: none) and the
// channel that signals the next change.
func (w *watcher) poll() (batch []storage.Event, progress int64, wake <-chan struct{}, err error) {
	s := w.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, 0, nil, fmt.Errorf("watch %q: %w", w.prefix, errClosed)
	}
	if w.next < s.compacted {
		return nil, 0, nil, fmt.Errorf("watch %q from revision %d (compacted at %d): %w", w.prefix, w.next-1, s.compacted, storage.ErrCompacted)
	}
	i, _ := slices.BinarySearchFunc(s.log, w.next, func(c change, rev int64) int { return compareRev(c.ev.Revision, rev) })
	for _, c := range s.log[i:] {
		if strings.HasPrefix(c.ev.Key, w.prefix) {
			batch = append(batch, c.ev)
		}
	}
	w.next = max(w.next, s.rev+1)
	if w.progress != s.progress {
		w.progress = s.progress
		// A watch from a future revision has nothing to confirm yet.
		if s.rev >= w.from {
			progress = s.rev
		}
	}
	return batch, progress, s.changed, nil
}

// send delivers ev unless the consumer has gone.
func (w *watcher) send(ev storage.Event) bool {
	select {
	case w.out <- ev:
		return true
	case <-w.ctx.Done():
		return false
	}
}

// RequestProgress implements storage.Interface: every watch reports the
// current revision once it has delivered the changes up to it.
func (s *Store) RequestProgress(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("request progress: %w", errClosed)
	}
	s.progress++
	s.notifyLocked()
	return nil
}
