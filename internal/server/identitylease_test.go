package server

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"

	"github.com/crdserver/crdserver/internal/storage/memory"
)

// Two replicas keep a lease each, renewed in place; a replica's collector
// deletes the lease of one that stopped renewing an hour ago, and only
// that one.
func TestIdentityLeases(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	backend := memory.New()
	defer backend.Close()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time { return now }
	replica := func(addr string) *identityLease {
		name := identityLeaseName("host", addr)
		return &identityLease{st: backend, prefix: "/registry/leases/kube-system/", name: name, holder: name + "_1",
			hostname: "host", peer: addr, now: clock, log: slog.New(slog.DiscardHandler)}
	}
	a, b := replica("10.0.0.1:6443"), replica("10.0.0.1:6444")
	if a.name == b.name || a.name != identityLeaseName("host", "10.0.0.1:6443") {
		t.Fatalf("lease names %s and %s: want one per address, the same across restarts", a.name, b.name)
	}
	read := func(l *identityLease) *coordinationv1.Lease {
		kv, err := backend.Get(ctx, l.prefix+l.name)
		if err != nil {
			return nil
		}
		var lease coordinationv1.Lease
		if err := json.Unmarshal(kv.Value, &lease); err != nil {
			t.Fatal(err)
		}
		return &lease
	}
	for _, l := range []*identityLease{a, b} {
		if err := l.renew(ctx); err != nil {
			t.Fatal(err)
		}
	}
	lease := read(a)
	if lease == nil || lease.Labels[identityLeaseLabel] != "kube-apiserver" || lease.Labels[hostnameLabel] != "host" ||
		lease.Annotations[peerAddressAnnotation] != "10.0.0.1:6443" || *lease.Spec.HolderIdentity != a.holder ||
		*lease.Spec.LeaseDurationSeconds != 3600 || !lease.Spec.RenewTime.Time.Equal(now) || len(lease.ManagedFields) != 1 {
		t.Fatalf("lease %+v", lease)
	}
	created := lease.UID

	now = now.Add(50 * time.Minute)
	if err := a.renew(ctx); err != nil {
		t.Fatal(err)
	}
	if lease := read(a); lease.UID != created || !lease.Spec.RenewTime.Time.Equal(now) {
		t.Errorf("renewed lease %+v, want the same one renewed at %v", lease, now)
	} else if f := lease.ManagedFields; len(f) != 1 || f[0].Time == nil || !f[0].Time.Time.Equal(now) {
		t.Errorf("renewed lease's managedFields %+v, want the server's entry written at %v", f, now)
	}
	now = now.Add(20 * time.Minute) // b last renewed 70 minutes ago, a 20
	a.collect(ctx)
	if read(b) != nil {
		t.Error("the expired lease was not collected")
	}
	if read(a) == nil {
		t.Error("the live lease was collected")
	}
}
