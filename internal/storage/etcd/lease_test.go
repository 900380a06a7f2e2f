package etcd

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// A lease is granted for the TTL plus the reuse window and attached to
// the writes of that TTL until less than the TTL is left of it.
func TestLeaseReuse(t *testing.T) {
	now := time.Unix(1000, 0)
	var granted []int64
	l := &leases{
		grant: func(_ context.Context, seconds int64) (clientv3.LeaseID, error) {
			granted = append(granted, seconds)
			return clientv3.LeaseID(len(granted)), nil
		},
		now:   func() time.Time { return now },
		byTTL: map[int64]*lease{},
	}
	get := func(ttl time.Duration) clientv3.LeaseID {
		t.Helper()
		id, err := l.get(context.Background(), ttl)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	if id := get(time.Hour); id != 1 || granted[0] != 3600+60 {
		t.Fatalf("first lease %d, granted %v; want 1 for 3660s", id, granted)
	}
	now = now.Add(59 * time.Second)
	if id := get(time.Hour); id != 1 {
		t.Errorf("within the window: lease %d, want 1", id)
	}
	if id := get(10 * time.Second); id != 2 || granted[1] != 10 {
		t.Errorf("another TTL: lease %d, granted %v; want 2 for 10s (no window under 20s)", id, granted)
	}
	now = now.Add(2 * time.Second)
	if id := get(time.Hour); id != 3 {
		t.Errorf("past the window: lease %d, want a new one", id)
	}
	for range leaseMaxObjects - 1 {
		get(time.Hour)
	}
	if id := get(time.Hour); id != 4 {
		t.Errorf("after %d keys: lease %d, want a new one", leaseMaxObjects, id)
	}
}
