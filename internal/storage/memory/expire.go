package memory

import (
	"context"
	"time"
)

// CreateWithTTL implements storage.Expirer: the key is deleted ttl after
// this write unless it is written again first. Unlike etcd's leases,
// which are granted in whole seconds and shared, the TTL is exact.
func (s *Store) CreateWithTTL(_ context.Context, key string, value []byte, ttl time.Duration) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rev, err := s.createLocked(key, value)
	if err != nil {
		return 0, err
	}
	s.expireLocked(key, rev, ttl)
	return rev, nil
}

// UpdateWithTTL implements storage.Expirer.
func (s *Store) UpdateWithTTL(_ context.Context, key string, value []byte, expectedRev int64, ttl time.Duration) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rev, err := s.updateLocked(key, value, expectedRev)
	if err != nil {
		return 0, err
	}
	s.expireLocked(key, rev, ttl)
	return rev, nil
}

// expireLocked arranges for key, just written at rev, to be deleted after
// ttl. The timer deletes it only if nothing wrote it since: a later write
// stops the timer (stopExpiryLocked), but a timer that already fired may
// be waiting for the lock.
func (s *Store) expireLocked(key string, rev int64, ttl time.Duration) {
	// A fake clock may call f while holding its own lock, which a writer
	// holding s.mu takes to set a timer: f takes s.mu in a goroutine of
	// its own, never under the clock's lock.
	s.expiry[key] = s.clock.AfterFunc(ttl, func() { go s.expire(key, rev) })
}

// expire deletes key if it is still the write at rev.
func (s *Store) expire(key string, rev int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if e, ok := s.kvs[key]; ok && e.modRev == rev {
		s.deleteLocked(key)
	}
}

// stopExpiryLocked cancels the pending expiry of key, which is being
// written or deleted.
func (s *Store) stopExpiryLocked(key string) {
	if t, ok := s.expiry[key]; ok {
		t.Stop()
		delete(s.expiry, key)
	}
}
