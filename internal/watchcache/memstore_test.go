package watchcache

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/crdserver/crdserver/internal/storage"
)

// memStore is an in-memory storage.Interface with etcd's revision
// semantics (one global revision, snapshots at any uncompacted revision,
// watches from a revision, progress notifications), for fast tests. The
// same tests run against real etcd when the backend is available.
type memStore struct {
	mu        sync.Mutex
	rev       int64
	compacted int64
	log       []storage.Event // every change, in order
	cur       map[string]storage.KeyValue
	watches   map[*memWatch]struct{}
	// noProgress makes RequestProgress a no-op (an etcd that never answers).
	noProgress bool
	// lists counts List calls, so tests can tell whether storage was read.
	lists int
	// silent keeps the open watches from hearing anything more (a stream
	// an etcd member stopped serving), until restartWatches.
	silent   bool
	restarts int
	// failReplay, when set, ends a watch that would replay past events
	// with it (a value it cannot decrypt) instead of the events.
	failReplay error
}

var _ storage.Interface = (*memStore)(nil)

func newMemStore() *memStore {
	// etcd's first revision is 1; 0 means "now" to Watch.
	return &memStore{rev: 1, cur: make(map[string]storage.KeyValue), watches: make(map[*memWatch]struct{})}
}

type memWatch struct {
	prefix string
	mu     sync.Mutex
	q      []storage.Event
	wake   chan struct{}
}

func (w *memWatch) push(ev storage.Event) {
	w.mu.Lock()
	w.q = append(w.q, ev)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (s *memStore) Get(ctx context.Context, key string) (storage.KeyValue, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	kv, ok := s.cur[key]
	if !ok {
		return storage.KeyValue{}, storage.ErrNotFound
	}
	return kv, nil
}

func (s *memStore) List(ctx context.Context, prefix string, opts storage.ListOptions) (storage.ListResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lists++
	rev := opts.Revision
	if rev == 0 {
		rev = s.rev
	}
	if rev < s.compacted {
		return storage.ListResult{}, fmt.Errorf("memstore list at %d: %w", rev, storage.ErrCompacted)
	}
	if rev > s.rev {
		return storage.ListResult{}, fmt.Errorf("memstore list at %d: %w", rev, storage.ErrFutureRev)
	}
	state := s.cur
	if rev != s.rev {
		state = make(map[string]storage.KeyValue)
		for _, ev := range s.log {
			if ev.Revision > rev {
				break
			}
			if ev.Type == storage.EventDelete {
				delete(state, ev.Key)
			} else {
				state[ev.Key] = storage.KeyValue{Key: ev.Key, Value: ev.Value, ModRevision: ev.Revision}
			}
		}
	}
	var keys []string
	for k := range state {
		if strings.HasPrefix(k, prefix) && k >= opts.StartKey {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	res := storage.ListResult{Revision: rev}
	for i, k := range keys {
		if opts.Limit > 0 && int64(i) >= opts.Limit {
			res.More = true
			res.Remaining = int64(len(keys) - i)
			break
		}
		res.Items = append(res.Items, state[k])
	}
	return res, nil
}

func (s *memStore) Count(ctx context.Context, prefix string) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for k := range s.cur {
		if strings.HasPrefix(k, prefix) {
			n++
		}
	}
	return n, nil
}

// commitLocked records one change and sends it to the watches.
func (s *memStore) commitLocked(ev storage.Event) {
	s.log = append(s.log, ev)
	if s.silent {
		return
	}
	for w := range s.watches {
		if strings.HasPrefix(ev.Key, w.prefix) {
			w.push(ev)
		}
	}
}

func (s *memStore) Create(ctx context.Context, key string, value []byte) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.cur[key]; ok {
		return 0, storage.ErrExists
	}
	s.rev++
	s.cur[key] = storage.KeyValue{Key: key, Value: value, ModRevision: s.rev}
	s.commitLocked(storage.Event{Type: storage.EventPut, Key: key, Value: value, Created: true, Revision: s.rev})
	return s.rev, nil
}

func (s *memStore) Update(ctx context.Context, key string, value []byte, expectedRev int64) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.cur[key]
	if !ok {
		return 0, storage.ErrNotFound
	}
	if expectedRev != 0 && old.ModRevision != expectedRev {
		return 0, storage.ErrConflict
	}
	s.rev++
	s.cur[key] = storage.KeyValue{Key: key, Value: value, ModRevision: s.rev}
	s.commitLocked(storage.Event{Type: storage.EventPut, Key: key, Value: value, Revision: s.rev})
	return s.rev, nil
}

func (s *memStore) Delete(ctx context.Context, key string, expectedRev int64) (storage.KeyValue, int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.cur[key]
	if !ok {
		return storage.KeyValue{}, 0, storage.ErrNotFound
	}
	if expectedRev != 0 && old.ModRevision != expectedRev {
		return storage.KeyValue{}, 0, storage.ErrConflict
	}
	s.rev++
	delete(s.cur, key)
	s.commitLocked(storage.Event{Type: storage.EventDelete, Key: key, Revision: s.rev})
	return old, s.rev, nil
}

func (s *memStore) Watch(ctx context.Context, prefix string, fromRev int64) <-chan storage.Event {
	out := make(chan storage.Event)
	s.mu.Lock()
	w := &memWatch{prefix: prefix, wake: make(chan struct{}, 1)}
	if fromRev != 0 && fromRev < s.compacted {
		w.q = append(w.q, storage.Event{Type: storage.EventError, Err: fmt.Errorf("memstore watch from %d: %w", fromRev, storage.ErrCompacted)})
	} else {
		if fromRev == 0 {
			fromRev = s.rev
		}
		for _, ev := range s.log {
			if ev.Revision > fromRev && strings.HasPrefix(ev.Key, prefix) {
				w.q = append(w.q, ev)
			}
		}
		if s.failReplay != nil && len(w.q) > 0 {
			w.q = []storage.Event{{Type: storage.EventError, Err: s.failReplay}}
		}
		s.watches[w] = struct{}{}
	}
	s.mu.Unlock()

	go func() {
		defer close(out)
		defer func() {
			s.mu.Lock()
			delete(s.watches, w)
			s.mu.Unlock()
		}()
		for {
			w.mu.Lock()
			q := w.q
			w.q = nil
			w.mu.Unlock()
			for _, ev := range q {
				select {
				case out <- ev:
				case <-ctx.Done():
					return
				}
				if ev.Type == storage.EventError {
					return
				}
			}
			select {
			case <-w.wake:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

func (s *memStore) RequestProgress(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.noProgress || s.silent {
		return nil
	}
	for w := range s.watches {
		w.push(storage.Event{Type: storage.EventProgress, Revision: s.rev})
	}
	return nil
}

func (s *memStore) CurrentRevision(ctx context.Context) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rev, nil
}

func (s *memStore) Close() error { return nil }

// compact forgets revisions before rev, like etcd's compaction; watches
// that are behind it end with ErrCompacted.
func (s *memStore) compact(rev int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.compacted = rev
}

// breakWatches ends every open watch with err.
func (s *memStore) breakWatches(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for w := range s.watches {
		w.push(storage.Event{Type: storage.EventError, Err: err})
		delete(s.watches, w)
	}
}

// restartable is a memStore that restarts its watches when asked to, as
// the etcd backend does (storage.WatchRestarter).
type restartable struct{ *memStore }

func (s restartable) RestartWatches(string) {
	s.mu.Lock()
	s.silent = false
	s.restarts++
	s.mu.Unlock()
	s.breakWatches(fmt.Errorf("restarted: %w", storage.ErrUnavailable))
}

func (s *memStore) setSilent(v bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.silent = v
}

func (s *memStore) restartCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restarts
}

func (s *memStore) setNoProgress(v bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noProgress = v
}

func (s *memStore) listCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lists
}
