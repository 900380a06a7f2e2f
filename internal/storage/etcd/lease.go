package etcd

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/crdserver/crdserver/internal/storage"
)

var _ storage.Expirer = (*Backend)(nil)

// Lease reuse, as upstream's lease manager does it: granting a lease per
// write would cost a round trip and a lease in etcd for every event, so a
// lease is granted for the TTL plus a reuse window (5% of the TTL, at most
// a minute) and attached to every write of that TTL until less than the
// TTL is left of it, or it holds leaseMaxObjects keys. A key so lives at
// least the TTL after its last write and at most the TTL plus the window.
const (
	leaseReusePercent = 0.05
	leaseReuseMax     = 60 * time.Second
	leaseMaxObjects   = 1000
)

// leases hands out the lease of each TTL; safe for concurrent use.
type leases struct {
	grant func(ctx context.Context, seconds int64) (clientv3.LeaseID, error)
	now   func() time.Time

	mu sync.Mutex // guards byTTL
	// byTTL holds the lease granted last for each TTL in seconds.
	byTTL map[int64]*lease
}

type lease struct {
	id      clientv3.LeaseID
	expires time.Time // as granted; etcd may keep it a little longer
	objects int       // keys attached so far
}

// get returns a lease under which a key written now lives at least ttl
// (rounded up to whole seconds, as etcd's leases count them). The mutex
// is held across a grant, so that concurrent writers share one lease
// rather than each granting their own.
func (l *leases) get(ctx context.Context, ttl time.Duration) (clientv3.LeaseID, error) {
	seconds := int64(math.Ceil(ttl.Seconds()))
	reuse := min(time.Duration(float64(seconds)*leaseReusePercent)*time.Second, leaseReuseMax)
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if cur := l.byTTL[seconds]; cur != nil && cur.objects < leaseMaxObjects &&
		!now.Add(time.Duration(seconds)*time.Second).After(cur.expires) {
		cur.objects++
		return cur.id, nil
	}
	granted := seconds + int64(reuse/time.Second)
	id, err := l.grant(ctx, granted)
	if err != nil {
		return 0, err
	}
	l.byTTL[seconds] = &lease{id: id, expires: now.Add(time.Duration(granted) * time.Second), objects: 1}
	return id, nil
}

func newLeases(client *clientv3.Client) *leases {
	return &leases{
		grant: func(ctx context.Context, seconds int64) (clientv3.LeaseID, error) {
			resp, err := client.Grant(ctx, seconds)
			if err != nil {
				return 0, err
			}
			return resp.ID, nil
		},
		now:   time.Now,
		byTTL: map[int64]*lease{},
	}
}

// CreateWithTTL implements storage.Expirer with an etcd lease.
func (b *Backend) CreateWithTTL(ctx context.Context, key string, value []byte, ttl time.Duration) (int64, error) {
	id, err := b.leases.get(ctx, ttl)
	if err != nil {
		return 0, mapErr(ctx, "create", key, fmt.Errorf("granting a lease: %w", err))
	}
	return b.create(ctx, key, value, id)
}

// UpdateWithTTL implements storage.Expirer with an etcd lease.
func (b *Backend) UpdateWithTTL(ctx context.Context, key string, value []byte, expectedRev int64, ttl time.Duration) (int64, error) {
	if expectedRev <= 0 {
		return b.Update(ctx, key, value, expectedRev) // refused there
	}
	id, err := b.leases.get(ctx, ttl)
	if err != nil {
		return 0, mapErr(ctx, "update", key, fmt.Errorf("granting a lease: %w", err))
	}
	return b.update(ctx, key, value, expectedRev, id)
}
