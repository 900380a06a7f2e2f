package controllers

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdserver/crdserver/internal/builtin"
	"github.com/crdserver/crdserver/internal/storage"
)

// fakeServiceStore holds Services, IPAddresses, ServiceCIDRs and port
// records in memory, with storage's preconditions, and records what the
// repair loops write.
type fakeServiceStore struct {
	mu       sync.Mutex
	services map[string]*corev1.Service // namespace/name
	ips      map[string]*networkingv1.IPAddress
	cidrs    []string
	ports    map[int]builtin.NodePortRecord
	// behind are IPAddresses stored but not yet in the cache the reads see.
	behind map[string]bool
	rev    int64
	writes []string // "create IP", "delete IP", "mark PORT ns/name", "free PORT"
	events []string // "Reason ns/name: note"
}

func newFakeServiceStore(cidrs ...string) *fakeServiceStore {
	return &fakeServiceStore{services: map[string]*corev1.Service{}, ips: map[string]*networkingv1.IPAddress{}, cidrs: cidrs, ports: map[int]builtin.NodePortRecord{}}
}

func (f *fakeServiceStore) addService(svc *corev1.Service) {
	f.services[svc.Namespace+"/"+svc.Name] = svc
}

func (f *fakeServiceStore) addIP(ip *networkingv1.IPAddress) {
	f.rev++
	ip.ResourceVersion = strconv.FormatInt(f.rev, 10)
	f.ips[ip.Name] = ip
}

func (f *fakeServiceStore) Service(_ context.Context, ns, name string) (*corev1.Service, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.services[ns+"/"+name], nil
}

func (f *fakeServiceStore) Services(context.Context) ([]*corev1.Service, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*corev1.Service
	for _, s := range f.services {
		out = append(out, s)
	}
	return out, nil
}

func (f *fakeServiceStore) IPAddress(_ context.Context, name string) (*networkingv1.IPAddress, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.behind[name] {
		return nil, nil
	}
	return f.ips[name], nil
}

func (f *fakeServiceStore) IPAddresses(context.Context) ([]*networkingv1.IPAddress, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*networkingv1.IPAddress
	for _, ip := range f.ips {
		out = append(out, ip)
	}
	return out, nil
}

func (f *fakeServiceStore) ServiceCIDRs(context.Context) ([]*networkingv1.ServiceCIDR, error) {
	return []*networkingv1.ServiceCIDR{{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes"}, Spec: networkingv1.ServiceCIDRSpec{CIDRs: f.cidrs}}}, nil
}

func (f *fakeServiceStore) CreateIPAddress(_ context.Context, ip netip.Addr, svc *corev1.Service) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ips[ip.String()] != nil {
		return storage.ErrExists
	}
	f.writes = append(f.writes, "create "+ip.String())
	f.addIP(allocated(ip.String(), svc.Namespace, svc.Name, time.Time{}))
	return nil
}

func (f *fakeServiceStore) DeleteIPAddress(_ context.Context, ip *networkingv1.IPAddress) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	cur := f.ips[ip.Name]
	switch {
	case cur == nil:
		return storage.ErrNotFound
	case cur.ResourceVersion != ip.ResourceVersion:
		return storage.ErrConflict
	}
	delete(f.ips, ip.Name)
	f.writes = append(f.writes, "delete "+ip.Name)
	return nil
}

func (f *fakeServiceStore) NodePortRecords(context.Context) ([]builtin.NodePortRecord, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []builtin.NodePortRecord
	for _, r := range f.ports {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b builtin.NodePortRecord) int { return a.Port - b.Port })
	return out, nil
}

func (f *fakeServiceStore) MarkNodePort(_ context.Context, port int, svc *corev1.Service, rev int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	cur, ok := f.ports[port]
	switch {
	case rev == 0 && ok:
		return storage.ErrExists
	case rev != 0 && !ok:
		return storage.ErrNotFound
	case rev != 0 && cur.Revision != rev:
		return storage.ErrConflict
	}
	f.rev++
	f.ports[port] = builtin.NodePortRecord{Port: port, Namespace: svc.Namespace, Name: svc.Name, Revision: f.rev}
	f.writes = append(f.writes, fmt.Sprintf("mark %d %s/%s", port, svc.Namespace, svc.Name))
	return nil
}

func (f *fakeServiceStore) FreeNodePort(_ context.Context, port int, rev int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	cur, ok := f.ports[port]
	switch {
	case !ok:
		return storage.ErrNotFound
	case cur.Revision != rev:
		return storage.ErrConflict
	}
	delete(f.ports, port)
	f.writes = append(f.writes, fmt.Sprintf("free %d", port))
	return nil
}

func (f *fakeServiceStore) Event(_ context.Context, ev RepairEvent) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	ref := ev.Regarding.Name
	if ev.Regarding.Namespace != "" {
		ref = ev.Regarding.Namespace + "/" + ref
	}
	f.events = append(f.events, fmt.Sprintf("%s %s: %s", ev.Reason, ref, ev.Note))
	return nil
}

var repairNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func service(ns, name string, created time.Time, ips ...string) *corev1.Service {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(created)}}
	if len(ips) > 0 {
		svc.Spec.ClusterIP, svc.Spec.ClusterIPs = ips[0], ips
	}
	return svc
}

// allocated is an IPAddress as the allocator writes it.
func allocated(ip, ns, name string, created time.Time) *networkingv1.IPAddress {
	return &networkingv1.IPAddress{
		ObjectMeta: metav1.ObjectMeta{Name: ip, CreationTimestamp: metav1.NewTime(created), Labels: map[string]string{
			networkingv1.LabelIPAddressFamily: "IPv4", networkingv1.LabelManagedBy: managedByAllocator,
		}},
		Spec: networkingv1.IPAddressSpec{ParentRef: &networkingv1.ParentReference{Resource: "services", Namespace: ns, Name: name}},
	}
}

func TestClusterIPRepairService(t *testing.T) {
	old := repairNow.Add(-time.Hour)
	for _, tc := range []struct {
		name     string
		services []*corev1.Service
		ips      []*networkingv1.IPAddress
		sync     string // the Service synced
		writes   []string
		events   []string
	}{{
		name:     "recorded",
		services: []*corev1.Service{service("ns", "a", old, "10.0.0.5")},
		ips:      []*networkingv1.IPAddress{allocated("10.0.0.5", "ns", "a", old)},
		sync:     "ns/a",
	}, {
		name:     "headless and ExternalName hold nothing",
		services: []*corev1.Service{service("ns", "a", old, "None")},
		sync:     "ns/a",
	}, {
		name:     "missing record is created",
		services: []*corev1.Service{service("ns", "a", old, "10.0.0.5")},
		sync:     "ns/a",
		writes:   []string{"create 10.0.0.5"},
		events:   []string{"ClusterIPNotAllocated ns/a: Cluster IP [IPv4]: 10.0.0.5 is not allocated; repairing"},
	}, {
		name:     "out of every ServiceCIDR is reported, not repaired",
		services: []*corev1.Service{service("ns", "a", old, "10.9.0.5")},
		sync:     "ns/a",
		events:   []string{"ClusterIPOutOfRange ns/a: Cluster IP [IPv4]: 10.9.0.5 is not within any configured Service CIDR; please recreate service"},
	}, {
		name:     "the range's network address is out of range",
		services: []*corev1.Service{service("ns", "a", old, "10.0.0.0")},
		sync:     "ns/a",
		events:   []string{"ClusterIPOutOfRange ns/a: Cluster IP [IPv4]: 10.0.0.0 is not within any configured Service CIDR; please recreate service"},
	}, {
		name:     "the range's broadcast address is out of range",
		services: []*corev1.Service{service("ns", "a", old, "10.0.0.255")},
		sync:     "ns/a",
		events:   []string{"ClusterIPOutOfRange ns/a: Cluster IP [IPv4]: 10.0.0.255 is not within any configured Service CIDR; please recreate service"},
	}, {
		name:     "not an address",
		services: []*corev1.Service{service("ns", "a", old, "10.0.0.x")},
		sync:     "ns/a",
		events:   []string{"ClusterIPNotValid ns/a: Cluster IP <nil> is not a valid IP; please recreate Service"},
	}, {
		name:     "held by two Services is reported",
		services: []*corev1.Service{service("ns", "a", old, "10.0.0.5"), service("ns", "b", old, "10.0.0.5")},
		ips:      []*networkingv1.IPAddress{allocated("10.0.0.5", "ns", "b", old)},
		sync:     "ns/a",
		events:   []string{"ClusterIPAlreadyAllocated ns/a: Cluster IP [IPv4]:10.0.0.5 was assigned to multiple services; please recreate service"},
	}, {
		name:     "record of a Service that is gone is recreated",
		services: []*corev1.Service{service("ns", "a", old, "10.0.0.5")},
		ips:      []*networkingv1.IPAddress{allocated("10.0.0.5", "ns", "gone", old)},
		sync:     "ns/a",
		writes:   []string{"delete 10.0.0.5", "create 10.0.0.5"},
		events:   []string{"ClusterIPNotAllocated ns/a: the ClusterIP [IPv4]: 10.0.0.5 for Service ns/a has a wrong reference; repairing"},
	}, {
		name:     "record of another resource is recreated",
		services: []*corev1.Service{service("ns", "a", old, "10.0.0.5")},
		ips: []*networkingv1.IPAddress{func() *networkingv1.IPAddress {
			ip := allocated("10.0.0.5", "ns", "a", old)
			ip.Spec.ParentRef.Resource = "gateways"
			return ip
		}()},
		sync:   "ns/a",
		writes: []string{"delete 10.0.0.5", "create 10.0.0.5"},
		events: []string{"ClusterIPNotAllocated ns/a: the ClusterIP [IPv4]: 10.0.0.5 for Service ns/a has a wrong reference; repairing"},
	}, {
		name:     "record without the allocator's labels is recreated quietly",
		services: []*corev1.Service{service("ns", "a", old, "10.0.0.5")},
		ips: []*networkingv1.IPAddress{func() *networkingv1.IPAddress {
			ip := allocated("10.0.0.5", "ns", "a", old)
			ip.Labels[networkingv1.LabelIPAddressFamily] = "IPv6"
			return ip
		}()},
		sync:   "ns/a",
		writes: []string{"delete 10.0.0.5", "create 10.0.0.5"},
	}, {
		name: "a Service that is gone is nothing to do",
		sync: "ns/a",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeServiceStore("10.0.0.0/24")
			for _, s := range tc.services {
				f.addService(s)
			}
			for _, ip := range tc.ips {
				f.addIP(ip)
			}
			r := &ClusterIPRepair{Store: f, Log: slog.New(slog.DiscardHandler), Now: func() time.Time { return repairNow }}
			if _, err := r.sync(t.Context(), repairKey{name: tc.sync}); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.writes, f.writes); diff != "" {
				t.Errorf("writes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.events, f.events); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestClusterIPRepairIPAddress(t *testing.T) {
	old := repairNow.Add(-time.Hour)
	for _, tc := range []struct {
		name     string
		services []*corev1.Service
		ip       *networkingv1.IPAddress
		again    time.Duration
		writes   []string
		events   []string
	}{{
		name:     "held by its Service",
		services: []*corev1.Service{service("ns", "a", old, "10.0.0.5")},
		ip:       allocated("10.0.0.5", "ns", "a", old),
	}, {
		name:   "orphan past its grace is deleted",
		ip:     allocated("10.0.0.5", "ns", "gone", repairNow.Add(-61*time.Second)),
		writes: []string{"delete 10.0.0.5"},
		events: []string{"IPAddressNotAllocated 10.0.0.5: IPAddress: 10.0.0.5 for Service ns/gone appears to have leaked: cleaning up"},
	}, {
		name:  "orphan in its grace is checked again after it",
		ip:    allocated("10.0.0.5", "ns", "gone", repairNow.Add(-20*time.Second)),
		again: 41 * time.Second,
	}, {
		name:     "its Service holds another address",
		services: []*corev1.Service{service("ns", "a", old, "10.0.0.6")},
		ip:       allocated("10.0.0.5", "ns", "a", old),
		writes:   []string{"delete 10.0.0.5"},
		events:   []string{"IPAddressWrongReference 10.0.0.5: IPAddress: 10.0.0.5 for Service ns/a has a wrong reference; cleaning up"},
	}, {
		name:     "newer than its Service that holds another address: checked again",
		services: []*corev1.Service{service("ns", "a", repairNow.Add(-10*time.Second), "10.0.0.6")},
		ip:       allocated("10.0.0.5", "ns", "a", repairNow.Add(-2*time.Second)),
		again:    5 * time.Second,
	}, {
		name: "its Service became ExternalName: kept through the grace",
		services: []*corev1.Service{func() *corev1.Service {
			s := service("ns", "a", old)
			s.Spec.Type = corev1.ServiceTypeExternalName
			return s
		}()},
		ip:    allocated("10.0.0.5", "ns", "a", repairNow.Add(-50*time.Second)),
		again: 10 * time.Second,
	}, {
		name: "not referencing a Service",
		ip: func() *networkingv1.IPAddress {
			ip := allocated("10.0.0.5", "ns", "a", old)
			ip.Spec.ParentRef.Group = "gateway.networking.k8s.io"
			return ip
		}(),
		writes: []string{"delete 10.0.0.5"},
		events: []string{"IPAddressNotAllocated 10.0.0.5: IPAddress 10.0.0.5 appears to have been modified, not referencing a Service &ParentReference{Group:gateway.networking.k8s.io,Resource:services,Namespace:ns,Name:a,}: cleaning up"},
	}, {
		name: "another manager's is left alone",
		ip: func() *networkingv1.IPAddress {
			ip := allocated("10.0.0.5", "ns", "gone", old)
			ip.Labels[networkingv1.LabelManagedBy] = "someone"
			return ip
		}(),
	}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeServiceStore("10.0.0.0/24")
			for _, s := range tc.services {
				f.addService(s)
			}
			f.addIP(tc.ip)
			r := &ClusterIPRepair{Store: f, Log: slog.New(slog.DiscardHandler), Now: func() time.Time { return repairNow }}
			again, err := r.sync(t.Context(), repairKey{ip: true, name: tc.ip.Name})
			if err != nil {
				t.Fatal(err)
			}
			if again != tc.again {
				t.Errorf("checked again after %v, want %v", again, tc.again)
			}
			if diff := cmp.Diff(tc.writes, f.writes); diff != "" {
				t.Errorf("writes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.events, f.events); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestClusterIPRepairCacheBehind: a record the cache does not show yet
// is not reported missing: the create finds it, and the Service is looked
// at again a second later.
func TestClusterIPRepairCacheBehind(t *testing.T) {
	f := newFakeServiceStore("10.0.0.0/24")
	f.addService(service("ns", "a", repairNow, "10.0.0.5"))
	f.addIP(allocated("10.0.0.5", "ns", "a", repairNow))
	f.behind = map[string]bool{"10.0.0.5": true}
	r := &ClusterIPRepair{Store: f, Log: slog.New(slog.DiscardHandler), Now: func() time.Time { return repairNow }}
	again, err := r.sync(t.Context(), repairKey{name: "ns/a"})
	if err != nil || again != time.Second {
		t.Fatalf("sync: again %v, err %v; want a second, no error", again, err)
	}
	if len(f.writes) != 0 || len(f.events) != 0 {
		t.Errorf("writes %v, events %v; want none", f.writes, f.events)
	}
}

// TestClusterIPRepairDeleteAtRevision: a record rewritten after it was
// read is not deleted (another replica's repair, or a Service that took
// it).
func TestClusterIPRepairDeleteAtRevision(t *testing.T) {
	f := newFakeServiceStore("10.0.0.0/24")
	f.addIP(allocated("10.0.0.5", "ns", "gone", repairNow.Add(-time.Hour)))
	read := *f.ips["10.0.0.5"]
	f.addIP(allocated("10.0.0.5", "ns", "new", repairNow))
	if err := f.DeleteIPAddress(t.Context(), &read); err != storage.ErrConflict {
		t.Fatalf("delete at an old revision: %v, want a conflict", err)
	}
	if f.ips["10.0.0.5"].Spec.ParentRef.Name != "new" {
		t.Fatal("the rewritten record was deleted")
	}
}

func nodePortService(ns, name string, hc int32, ports ...corev1.ServicePort) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: ports, HealthCheckNodePort: hc},
	}
}

func np(port int32, proto corev1.Protocol) corev1.ServicePort {
	return corev1.ServicePort{Port: 80, NodePort: port, Protocol: proto}
}

func TestNodePortRepair(t *testing.T) {
	old := repairNow.Add(-time.Hour)
	rec := func(port int, ns, name string, created time.Time) builtin.NodePortRecord {
		return builtin.NodePortRecord{Port: port, Namespace: ns, Name: name, Created: created}
	}
	for _, tc := range []struct {
		name     string
		services []*corev1.Service
		records  []builtin.NodePortRecord
		checks   int // 1 unless set
		writes   []string
		events   []string
	}{{
		name:     "recorded",
		services: []*corev1.Service{nodePortService("ns", "a", 0, np(30001, "TCP"))},
		records:  []builtin.NodePortRecord{rec(30001, "ns", "a", old)},
	}, {
		name:     "missing record is created",
		services: []*corev1.Service{nodePortService("ns", "a", 30002, np(30001, "TCP"))},
		records:  []builtin.NodePortRecord{rec(30001, "ns", "a", old)},
		writes:   []string{"mark 30002 ns/a"},
		events:   []string{"PortNotAllocated ns/a: Port 30002 is not allocated; repairing"},
	}, {
		name:     "record naming a Service that does not hold it is rewritten",
		services: []*corev1.Service{nodePortService("ns", "a", 0, np(30001, "TCP"))},
		records:  []builtin.NodePortRecord{rec(30001, "ns", "gone", old)},
		writes:   []string{"mark 30001 ns/a"},
		events:   []string{"PortNotAllocated ns/a: Port 30001 is not allocated; repairing"},
	}, {
		name:     "out of range is reported",
		services: []*corev1.Service{nodePortService("ns", "a", 0, np(8080, "TCP"))},
		events:   []string{"PortOutOfRange ns/a: Port 8080 is not within the port range 30000-32767; please recreate service"},
	}, {
		name: "held by two Services: the record's keeps it, the other is reported",
		services: []*corev1.Service{
			nodePortService("ns", "a", 0, np(30001, "TCP")),
			nodePortService("ns", "b", 0, np(30001, "TCP")),
		},
		records: []builtin.NodePortRecord{rec(30001, "ns", "b", old)},
		events:  []string{"PortAlreadyAllocated ns/a: Port 30001 was assigned to multiple services; please recreate service"},
	}, {
		name: "held by two Services without a record: the first gets it",
		services: []*corev1.Service{
			nodePortService("ns", "b", 0, np(30001, "TCP")),
			nodePortService("ns", "a", 0, np(30001, "TCP")),
		},
		writes: []string{"mark 30001 ns/a"},
		// Reported as planned, the repair once written.
		events: []string{
			"PortAlreadyAllocated ns/b: Port 30001 was assigned to multiple services; please recreate service",
			"PortNotAllocated ns/a: Port 30001 is not allocated; repairing",
		},
	}, {
		name:     "one node port for TCP and UDP counts once",
		services: []*corev1.Service{nodePortService("ns", "a", 0, np(30001, "TCP"), np(30001, "UDP"))},
		records:  []builtin.NodePortRecord{rec(30001, "ns", "a", old)},
	}, {
		name:    "leaked port is kept through two checks",
		records: []builtin.NodePortRecord{rec(30001, "ns", "gone", old)},
		checks:  2,
	}, {
		name:    "leaked port is freed at the third check",
		records: []builtin.NodePortRecord{rec(30001, "ns", "gone", old)},
		checks:  3,
		writes:  []string{"free 30001"},
	}, {
		name:    "a young leaked record waits out the grace",
		records: []builtin.NodePortRecord{rec(30001, "ns", "coming", repairNow.Add(-time.Second))},
		checks:  5,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeServiceStore()
			for _, s := range tc.services {
				f.addService(s)
			}
			for _, r := range tc.records {
				f.rev++
				r.Revision = f.rev
				f.ports[r.Port] = r
			}
			r := &NodePortRepair{
				Store: f, InRange: func(p int) bool { return p >= 30000 && p <= 32767 }, Range: "30000-32767",
				Log: slog.New(slog.DiscardHandler), Now: func() time.Time { return repairNow },
			}
			for range max(tc.checks, 1) {
				if err := r.Check(t.Context()); err != nil {
					t.Fatal(err)
				}
			}
			if diff := cmp.Diff(tc.writes, f.writes); diff != "" {
				t.Errorf("writes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.events, f.events); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNodePortRepairLeakForgotten: a port held again before its third
// check starts counting afresh.
func TestNodePortRepairLeakForgotten(t *testing.T) {
	f := newFakeServiceStore()
	f.ports[30001] = builtin.NodePortRecord{Port: 30001, Namespace: "ns", Name: "a", Revision: 1}
	r := &NodePortRepair{Store: f, InRange: func(int) bool { return true }, Log: slog.New(slog.DiscardHandler), Now: func() time.Time { return repairNow }}
	check := func() {
		t.Helper()
		if err := r.Check(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	check()
	check()
	f.addService(nodePortService("ns", "a", 0, np(30001, "TCP")))
	check()
	delete(f.services, "ns/a")
	check()
	check()
	if len(f.writes) != 0 {
		t.Fatalf("writes %v, want none before three checks in a row", f.writes)
	}
	check()
	if diff := cmp.Diff([]string{"free 30001"}, f.writes); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
}

// TestClusterIPRepairRun: the loop waits for the default ServiceCIDR,
// checks everything, reports its first success, and deletes an orphan once
// its grace is over.
func TestClusterIPRepairRun(t *testing.T) {
	f := newFakeServiceStore("10.0.0.0/24")
	f.addService(service("ns", "a", repairNow, "10.0.0.5"))
	f.addIP(allocated("10.0.0.9", "ns", "gone", repairNow.Add(-time.Hour)))
	repaired := make(chan struct{})
	r := &ClusterIPRepair{Store: f, Log: slog.New(slog.DiscardHandler), Now: func() time.Time { return repairNow },
		Interval: 10 * time.Millisecond, Repaired: func() { close(repaired) }}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx)
	}()
	select {
	case <-repaired:
	case <-time.After(10 * time.Second):
		t.Fatal("no first repair")
	}
	cancel()
	<-done
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ips["10.0.0.5"] == nil || f.ips["10.0.0.9"] != nil {
		t.Errorf("after the first check: IPAddresses %v, want 10.0.0.5 alone", slices.Collect(func(yield func(string) bool) {
			for k := range f.ips {
				if !yield(k) {
					return
				}
			}
		}))
	}
}

// TestRepairReplicasRace: replicas that find the same record missing at
// once write it once and report it once.
func TestRepairReplicasRace(t *testing.T) {
	for range 20 {
		f := newFakeServiceStore("10.0.0.0/24")
		svc := service("ns", "a", repairNow, "10.0.0.5")
		svc.Spec.Type = corev1.ServiceTypeNodePort
		svc.Spec.Ports = []corev1.ServicePort{np(30001, "TCP")}
		f.addService(svc)
		var wg sync.WaitGroup
		for range 2 {
			ipr := &ClusterIPRepair{Store: f, Log: slog.New(slog.DiscardHandler), Now: func() time.Time { return repairNow }}
			npr := &NodePortRepair{Store: f, InRange: func(int) bool { return true }, Log: slog.New(slog.DiscardHandler), Now: func() time.Time { return repairNow }}
			wg.Go(func() {
				if _, err := ipr.sync(t.Context(), repairKey{name: "ns/a"}); err != nil {
					t.Error(err)
				}
			})
			wg.Go(func() {
				if err := npr.Check(t.Context()); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		slices.Sort(f.writes)
		slices.Sort(f.events)
		if diff := cmp.Diff([]string{"create 10.0.0.5", "mark 30001 ns/a"}, f.writes); diff != "" {
			t.Fatalf("writes (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{
			"ClusterIPNotAllocated ns/a: Cluster IP [IPv4]: 10.0.0.5 is not allocated; repairing",
			"PortNotAllocated ns/a: Port 30001 is not allocated; repairing",
		}, f.events); diff != "" {
			t.Fatalf("events (-want +got):\n%s", diff)
		}
	}
}
