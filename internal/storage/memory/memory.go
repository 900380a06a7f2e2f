// Package memory implements storage.Interface in the process's memory with
// etcd's semantics: one global revision counter, compare-and-swap on a
// key's mod revision, reads and watches at past revisions until they are
// compacted, and progress notifications. It backs throwaway servers
// (crdtest, crdserver --storage=memory) that need no durability and must
// start in microseconds.
package memory

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"k8s.io/utils/clock"

	"github.com/crdserver/crdserver/internal/storage"
)

// Store is a storage.Interface held in memory. The zero value is not
// usable; create it with New. Values passed in are copied; values handed
// out are shared with the store and must not be modified.
type Store struct {
	mu sync.Mutex // guards every field below

	// rev is the current revision. It starts at 1, as etcd's does, so
	// that revision 0 can mean "latest" or "now" everywhere.
	rev int64
	// compacted is the revision history was compacted to: reads below it
	// fail with ErrCompacted (0: never compacted).
	compacted int64

	kvs  map[string]entry
	keys []string // the keys of kvs, sorted, for prefix ranges

	// log holds one change per revision after the compaction revision
	// (and the one at it), in revision order: it serves watches and
	// reads at past revisions.
	log []change

	// changed is closed and replaced on every write, progress request
	// and Close, waking every watch to look at the log again.
	changed chan struct{}
	// progress counts progress requests; a watch that has seen fewer
	// owes its consumer a progress event.
	progress uint64
	closed   bool

	// expiry holds the timers of keys written with a TTL (see Expirer).
	expiry map[string]clock.Timer
	// clock times the expiries; real time unless NewWithClock.
	clock clock.WithDelayedExecution
}

// entry is the current state of one key.
type entry struct {
	value  []byte
	modRev int64
}

// change is one write, as watches report it, with what reads at earlier
// revisions need to undo it.
type change struct {
	ev      storage.Event
	prev    []byte // the key's value before ev
	prevRev int64  // the mod revision of prev; 0 if the key was absent
}

var (
	_ storage.Interface       = (*Store)(nil)
	_ storage.LocalRevisioner = (*Store)(nil)
	_ storage.Expirer         = (*Store)(nil)
)

// New returns an empty store at revision 1.
func New() *Store { return NewWithClock(clock.RealClock{}) }

// NewWithClock returns an empty store whose keys written with a TTL expire
// by c: a fake clock lets a test step over an hour of event TTL at once.
func NewWithClock(c clock.WithDelayedExecution) *Store {
	return &Store{rev: 1, kvs: map[string]entry{}, changed: make(chan struct{}), expiry: map[string]clock.Timer{}, clock: c}
}

// errClosed is what every call returns after Close.
var errClosed = fmt.Errorf("memory storage closed: %w", storage.ErrUnavailable)

// Close ends every watch (with an ErrUnavailable error, as a closed etcd
// connection does) and fails later calls.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	for _, t := range s.expiry {
		t.Stop()
	}
	s.expiry = nil
	s.notifyLocked()
	return nil
}

// Healthy reports whether the store serves requests: it does until Close.
func (s *Store) Healthy(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	return nil
}

// Get implements storage.Interface.
func (s *Store) Get(_ context.Context, key string) (storage.KeyValue, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return storage.KeyValue{}, fmt.Errorf("get %q: %w", key, errClosed)
	}
	e, ok := s.kvs[key]
	if !ok {
		return storage.KeyValue{}, fmt.Errorf("get %q: %w", key, storage.ErrNotFound)
	}
	return storage.KeyValue{Key: key, Value: e.value, ModRevision: e.modRev}, nil
}

// List implements storage.Interface. Like etcd's range, Remaining counts
// every key from StartKey on, whatever the Limit.
func (s *Store) List(_ context.Context, prefix string, opts storage.ListOptions) (storage.ListResult, error) {
	if opts.StartKey != "" && !strings.HasPrefix(opts.StartKey, prefix) {
		return storage.ListResult{}, fmt.Errorf("list %q: start key %q is outside the prefix", prefix, opts.StartKey)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return storage.ListResult{}, fmt.Errorf("list %q: %w", prefix, errClosed)
	}
	from := max(prefix, opts.StartKey)
	switch {
	case opts.Revision > s.rev:
		return storage.ListResult{}, fmt.Errorf("list %q at revision %d (current %d): %w", prefix, opts.Revision, s.rev, storage.ErrFutureRev)
	case opts.Revision == 0 || opts.Revision == s.rev:
		res := storage.ListResult{Items: s.rangeLocked(from, prefix, opts.Limit), Revision: s.rev}
		if n := s.countLocked(from, prefix); n > int64(len(res.Items)) {
			res.More, res.Remaining = true, n-int64(len(res.Items))
		}
		return res, nil
	case opts.Revision < s.compacted:
		return storage.ListResult{}, fmt.Errorf("list %q at revision %d (compacted at %d): %w", prefix, opts.Revision, s.compacted, storage.ErrCompacted)
	}
	res := storage.ListResult{Items: s.rangeAtLocked(from, prefix, opts.Revision), Revision: opts.Revision}
	if opts.Limit > 0 && int64(len(res.Items)) > opts.Limit {
		res.More, res.Remaining = true, int64(len(res.Items))-opts.Limit
		res.Items = res.Items[:opts.Limit]
	}
	return res, nil
}

// rangeLocked returns the current keys in [from, end of prefix), at most
// limit of them (0: all).
func (s *Store) rangeLocked(from, prefix string, limit int64) []storage.KeyValue {
	i, _ := slices.BinarySearch(s.keys, from)
	n := prefixEnd(s.keys[i:], prefix)
	if limit > 0 && int64(n) > limit {
		n = int(limit)
	}
	out := make([]storage.KeyValue, n)
	for j, k := range s.keys[i : i+n] {
		e := s.kvs[k]
		out[j] = storage.KeyValue{Key: k, Value: e.value, ModRevision: e.modRev}
	}
	return out
}

// rangeAtLocked returns the keys in [from, end of prefix) as they were at
// rev, by undoing the logged changes after rev, newest first: the oldest
// change after rev, undone last, says what the key was at rev.
func (s *Store) rangeAtLocked(from, prefix string, rev int64) []storage.KeyValue {
	type past struct {
		kv     storage.KeyValue
		exists bool
	}
	undone := map[string]past{}
	for i := len(s.log) - 1; i >= 0 && s.log[i].ev.Revision > rev; i-- {
		c := s.log[i]
		if c.ev.Key < from || !strings.HasPrefix(c.ev.Key, prefix) {
			continue
		}
		undone[c.ev.Key] = past{kv: storage.KeyValue{Key: c.ev.Key, Value: c.prev, ModRevision: c.prevRev}, exists: c.prevRev != 0}
	}
	var out []storage.KeyValue
	i, _ := slices.BinarySearch(s.keys, from)
	for ; i < len(s.keys) && strings.HasPrefix(s.keys[i], prefix); i++ {
		k := s.keys[i]
		if _, ok := undone[k]; ok {
			continue
		}
		e := s.kvs[k]
		out = append(out, storage.KeyValue{Key: k, Value: e.value, ModRevision: e.modRev})
	}
	for _, p := range undone {
		if p.exists {
			out = append(out, p.kv)
		}
	}
	slices.SortFunc(out, func(a, b storage.KeyValue) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// countLocked counts the current keys in [from, end of prefix).
func (s *Store) countLocked(from, prefix string) int64 {
	i, _ := slices.BinarySearch(s.keys, from)
	return int64(prefixEnd(s.keys[i:], prefix))
}

// prefixEnd returns how many keys at the start of keys lie under prefix;
// keys is sorted and starts at or after prefix.
func prefixEnd(keys []string, prefix string) int {
	n, _ := slices.BinarySearchFunc(keys, prefix, func(k, p string) int {
		if strings.HasPrefix(k, p) {
			return -1
		}
		return 1
	})
	return n
}

// Count implements storage.Interface.
func (s *Store) Count(_ context.Context, prefix string) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, fmt.Errorf("count %q: %w", prefix, errClosed)
	}
	return s.countLocked(prefix, prefix), nil
}

// Create implements storage.Interface.
func (s *Store) Create(_ context.Context, key string, value []byte) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.createLocked(key, value)
}

func (s *Store) createLocked(key string, value []byte) (int64, error) {
	if s.closed {
		return 0, fmt.Errorf("create %q: %w", key, errClosed)
	}
	if _, ok := s.kvs[key]; ok {
		return 0, fmt.Errorf("create %q: %w", key, storage.ErrExists)
	}
	return s.putLocked(key, value), nil
}

// Update implements storage.Interface.
func (s *Store) Update(_ context.Context, key string, value []byte, expectedRev int64) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.updateLocked(key, value, expectedRev)
}

func (s *Store) updateLocked(key string, value []byte, expectedRev int64) (int64, error) {
	if s.closed {
		return 0, fmt.Errorf("update %q: %w", key, errClosed)
	}
	cur, ok := s.kvs[key]
	if !ok {
		return 0, fmt.Errorf("update %q: %w", key, storage.ErrNotFound)
	}
	if cur.modRev != expectedRev {
		return 0, fmt.Errorf("update %q at revision %d (now %d): %w", key, expectedRev, cur.modRev, storage.ErrConflict)
	}
	return s.putLocked(key, value), nil
}

// Delete implements storage.Interface.
func (s *Store) Delete(_ context.Context, key string, expectedRev int64) (storage.KeyValue, int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return storage.KeyValue{}, 0, fmt.Errorf("delete %q: %w", key, errClosed)
	}
	cur, ok := s.kvs[key]
	if !ok {
		return storage.KeyValue{}, 0, fmt.Errorf("delete %q: %w", key, storage.ErrNotFound)
	}
	if expectedRev > 0 && cur.modRev != expectedRev {
		return storage.KeyValue{}, 0, fmt.Errorf("delete %q at revision %d (now %d): %w", key, expectedRev, cur.modRev, storage.ErrConflict)
	}
	rev := s.deleteLocked(key)
	return storage.KeyValue{Key: key, Value: cur.value, ModRevision: cur.modRev}, rev, nil
}

// putLocked writes key at a new revision and logs the change. The value
// is copied with no spare capacity, so that a caller appending to a value
// it read gets a new array instead of writing into the store's.
func (s *Store) putLocked(key string, value []byte) int64 {
	v := make([]byte, len(value))
	copy(v, value)
	s.rev++
	prev, existed := s.kvs[key]
	s.kvs[key] = entry{value: v, modRev: s.rev}
	if !existed {
		i, _ := slices.BinarySearch(s.keys, key)
		s.keys = slices.Insert(s.keys, i, key)
	}
	ev := storage.Event{Type: storage.EventPut, Key: key, Value: v, Created: !existed, Revision: s.rev}
	s.log = append(s.log, change{ev: ev, prev: prev.value, prevRev: prev.modRev})
	s.stopExpiryLocked(key)
	s.notifyLocked()
	return s.rev
}

// deleteLocked removes an existing key at a new revision and logs it.
func (s *Store) deleteLocked(key string) int64 {
	prev := s.kvs[key]
	s.rev++
	delete(s.kvs, key)
	if i, ok := slices.BinarySearch(s.keys, key); ok {
		s.keys = slices.Delete(s.keys, i, i+1)
	}
	ev := storage.Event{Type: storage.EventDelete, Key: key, Revision: s.rev}
	s.log = append(s.log, change{ev: ev, prev: prev.value, prevRev: prev.modRev})
	s.stopExpiryLocked(key)
	s.notifyLocked()
	return s.rev
}

// notifyLocked wakes every watch.
func (s *Store) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// CurrentRevision implements storage.Interface.
func (s *Store) CurrentRevision(context.Context) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, fmt.Errorf("read revision: %w", errClosed)
	}
	return s.rev, nil
}

// LocalRevision implements storage.LocalRevisioner: the revision is
// always known in-process.
func (s *Store) LocalRevision() (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rev, true
}

// Compact discards the history before rev, as etcd's compaction does:
// reads and watches that need an older revision fail with
// storage.ErrCompacted, and the change at rev itself loses the value it
// replaced. Compacting to a revision at or below the current compaction
// is not an error; to a future revision is.
func (s *Store) Compact(_ context.Context, rev int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("compact to %d: %w", rev, errClosed)
	}
	if rev > s.rev {
		return fmt.Errorf("compact to %d (current %d): %w", rev, s.rev, storage.ErrFutureRev)
	}
	if rev <= s.compacted {
		return nil
	}
	s.compacted = rev
	i, _ := slices.BinarySearchFunc(s.log, rev, func(c change, rev int64) int { return compareRev(c.ev.Revision, rev) })
	// Copy rather than reslice, so the dropped changes' values can be freed.
	s.log = slices.Clone(s.log[i:])
	if len(s.log) > 0 && s.log[0].ev.Revision == rev {
		s.log[0].prev, s.log[0].prevRev = nil, 0
	}
	return nil
}

func compareRev(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
