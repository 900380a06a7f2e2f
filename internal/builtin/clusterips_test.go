package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/crdserver/crdserver/internal/storage"
	"github.com/crdserver/crdserver/internal/storage/etcd"
	"github.com/crdserver/crdserver/internal/storage/etcdtest"
)

// newClusterIPs allocates from cidr in a fresh prefix of a real etcd.
func newClusterIPs(t *testing.T, st storage.Interface, cidr string) *ClusterIPs {
	t.Helper()
	prefix := "/" + strings.ReplaceAll(t.Name(), "/", "_")
	a, err := NewClusterIPs(cidr, st, prefix+"/ipaddresses/", prefix+"/services/")
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func testBackend(t *testing.T) storage.Interface {
	t.Helper()
	b, err := etcd.New(context.Background(), etcd.Config{Endpoints: etcdtest.StartEmbedded(t), DialTimeout: 10 * time.Second, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func service(name, clusterIP string) map[string]any {
	spec := map[string]any{"type": "ClusterIP"}
	if clusterIP != "" {
		spec["clusterIP"] = clusterIP
	}
	return map[string]any{"metadata": map[string]any{"namespace": "default", "name": name}, "spec": spec}
}

func TestClusterIPAllocation(t *testing.T) {
	st := testBackend(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name, cidr, requested string
		want                  string // the allocated address; "" = any in range
		wantErr               string // the 422's message, or the 500's
	}{
		{name: "first", cidr: "10.0.0.0/24", requested: "10.0.0.1", want: "10.0.0.1"},
		{name: "taken", cidr: "10.0.0.0/24", requested: "10.0.0.1", wantErr: `Service "taken" is invalid: spec.clusterIPs: Invalid value: ["10.0.0.1"]: failed to allocate IP 10.0.0.1: provided IP is already allocated`},
		{name: "out", cidr: "10.0.0.0/24", requested: "10.0.1.1", wantErr: "the provided IP (10.0.1.1) is not in the valid range. The range of valid IPs is 10.0.0.0/24"},
		{name: "network", cidr: "10.0.0.0/24", requested: "10.0.0.0", wantErr: "is not in the valid range"},
		{name: "broadcast", cidr: "10.0.0.0/24", requested: "10.0.0.255", wantErr: "is not in the valid range"},
		{name: "headless", cidr: "10.0.0.0/24", requested: "None", want: "None"},
		{name: "dynamic", cidr: "10.0.0.0/24"},
		{name: "v6", cidr: "fd00::/108", requested: "fd00::1", want: "fd00::1"},
		{name: "v6-dynamic", cidr: "fd00::/108"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newClusterIPs(t, st, tc.cidr)
			if tc.wantErr != "" && strings.Contains(tc.wantErr, "already allocated") {
				if _, err := a.AllocateService(ctx, service("other", tc.requested)); err != nil {
					t.Fatal(err)
				}
			}
			svc := service(tc.name, tc.requested)
			_, err := a.AllocateService(ctx, svc)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				if !apierrors.IsInvalid(err) {
					t.Errorf("err = %v, want a 422", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := svc["spec"].(map[string]any)["clusterIP"].(string)
			if tc.want != "" && got != tc.want {
				t.Errorf("clusterIP = %s, want %s", got, tc.want)
			}
			if got == "None" {
				return
			}
			if ip := netip.MustParseAddr(got); !a.inRange(ip) {
				t.Errorf("clusterIP %s not in %s", got, tc.cidr)
			}
			if _, err := st.Get(ctx, a.Prefix+got); err != nil {
				t.Errorf("no record for %s: %v", got, err)
			}
		})
	}
}

// Concurrent allocations (as from several replicas) never give one
// address twice, and fill the range exactly.
func TestClusterIPConcurrentAllocation(t *testing.T) {
	st := testBackend(t)
	ctx := context.Background()
	// Two allocators on one store stand for two replicas.
	a := newClusterIPs(t, st, "10.0.0.0/27") // 30 usable addresses
	b := *a
	got, full := allocateConcurrently(t, 40, func(i int) (string, error) {
		alloc := a
		if i%2 == 1 {
			alloc = &b
		}
		svc := service(fmt.Sprintf("s%d", i), "")
		_, err := alloc.AllocateService(ctx, svc)
		ip, _ := mapField(svc, "spec")["clusterIP"].(string)
		return ip, err
	})
	if got != 30 || full != 10 {
		t.Errorf("allocated %d, refused %d; want 30 and 10", got, full)
	}
}

// allocateConcurrently runs n allocations at once, each returning what
// it got, and fails the test when two got the same or one failed but for
// a full range. It returns how many got one and how many found the range
// full.
func allocateConcurrently(t *testing.T, n int, alloc func(i int) (string, error)) (allocated, full int) {
	t.Helper()
	var mu sync.Mutex
	got := map[string]int{}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			v, err := alloc(i)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if !strings.Contains(err.Error(), "range is full") {
					t.Errorf("allocation %d: %v", i, err)
				}
				full++
				return
			}
			if other, ok := got[v]; ok {
				t.Errorf("%s given to allocations %d and %d", v, i, other)
			}
			got[v] = i
		})
	}
	wg.Wait()
	return len(got), full
}

// A released address can be given again; a record whose Service is gone
// is reclaimed once older than the grace period.
func TestClusterIPReleaseAndReclaim(t *testing.T) {
	st := testBackend(t)
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := newClusterIPs(t, st, "10.0.0.0/24")
	a.Now = func() time.Time { return now }
	if _, err := a.AllocateService(ctx, service("a", "10.0.0.5")); err != nil {
		t.Fatal(err)
	}
	a.Release(ctx, "10.0.0.5", "default", "a")
	if _, err := a.AllocateService(ctx, service("b", "10.0.0.5")); err != nil {
		t.Fatalf("after release: %v", err)
	}
	// b's Service was never stored: its record is stale, but young.
	if _, err := a.AllocateService(ctx, service("c", "10.0.0.5")); !apierrors.IsInvalid(err) {
		t.Fatalf("within the grace period: err = %v, want a 422", err)
	}
	now = now.Add(2 * time.Minute)
	if _, err := a.AllocateService(ctx, service("c", "10.0.0.5")); err != nil {
		t.Fatalf("after the grace period: %v", err)
	}
	// A record whose Service exists and holds the address stays.
	svc, _ := json.Marshal(service("c", "10.0.0.5"))
	if _, err := st.Create(ctx, a.ServicePrefix+"default/c", svc); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Minute)
	if _, err := a.AllocateService(ctx, service("d", "10.0.0.5")); !apierrors.IsInvalid(err) {
		t.Fatalf("held by a stored Service: err = %v, want a 422", err)
	}
	// A second create of c's name (which storage then refuses) neither
	// takes the address nor frees it when it undoes.
	if _, err := a.AllocateService(ctx, service("c", "10.0.0.5")); !apierrors.IsInvalid(err) {
		t.Fatalf("held by the stored Service of the same name: err = %v, want a 422", err)
	}
	a.Release(ctx, "10.0.0.5", "default", "c")
	if _, err := st.Get(ctx, a.Prefix+"10.0.0.5"); err != nil {
		t.Errorf("the stored Service's record was freed: %v", err)
	}
	// A retried create of a Service that was never stored takes its own
	// record back at once.
	if _, err := a.AllocateService(ctx, service("e", "10.0.0.6")); err != nil {
		t.Fatal(err)
	}
	if _, err := a.AllocateService(ctx, service("e", "10.0.0.6")); err != nil {
		t.Errorf("retried create: %v", err)
	}
}

// A dry-run create's preview fills what the allocation would and fails
// where it would, reserving nothing: the address stays free.
func TestClusterIPPreview(t *testing.T) {
	st := testBackend(t)
	ctx := context.Background()
	a := newClusterIPs(t, st, "10.0.0.0/24")
	if _, err := a.AllocateService(ctx, service("held", "10.0.0.5")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, requested, wantErr, wantIPs string
	}{
		{name: "free", requested: "10.0.0.7", wantIPs: "[10.0.0.7]"},
		{name: "taken", requested: "10.0.0.5", wantErr: "provided IP is already allocated"},
		{name: "out", requested: "10.0.9.9", wantErr: "is not in the valid range"},
		{name: "none", requested: "None", wantIPs: "[None]"},
		{name: "any", requested: "", wantIPs: "[10.0.0.0]"}, // the network's, as upstream's dry run answers
	} {
		svc := service(tc.name, tc.requested)
		err := a.PreviewService(ctx, svc)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: %v, want %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if got := fmt.Sprint(svc["spec"].(map[string]any)["clusterIPs"]); err != nil || got != tc.wantIPs {
			t.Errorf("%s: clusterIPs %s (%v), want %s", tc.name, got, err, tc.wantIPs)
		}
	}
	// Nothing was reserved: the previewed address can be taken.
	if _, err := a.AllocateService(ctx, service("after", "10.0.0.7")); err != nil {
		t.Errorf("the previewed address was reserved: %v", err)
	}
}
