package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/crdserver/crdserver/internal/builtin"
	"github.com/crdserver/crdserver/internal/controllers"
	"github.com/crdserver/crdserver/internal/handler"
	"github.com/crdserver/crdserver/internal/storage"
	"github.com/crdserver/crdserver/internal/watchcache"
)

// serviceRepair is the repair loops' store (controllers.ClusterIPStore and
// controllers.NodePortStore): objects read from the watch caches, the
// allocators' records written straight into storage, as the allocators
// write them.
type serviceRepair struct {
	s         *Server
	ips       *builtin.ClusterIPs
	nodePorts *builtin.NodePorts
	// servicesRV is the resourceVersion Services are listed at: "0" (what
	// the cache holds) for the ClusterIP loop, which follows changes as
	// upstream's informers do; "" (a consistent read) for the node port
	// loop, which compares them with records read from storage, as
	// upstream's lists them.
	servicesRV string
}

var (
	_ controllers.ClusterIPStore = serviceRepair{}
	_ controllers.NodePortStore  = serviceRepair{}
)

// startServiceRepair runs the ClusterIP and node port repair loops;
// s.ipRepaired and s.portsRepaired are set after their first checks.
func (s *Server) startServiceRepair(ctx context.Context, ips *builtin.ClusterIPs, nodePorts *builtin.NodePorts) {
	r := serviceRepair{s: s, ips: ips, nodePorts: nodePorts, servicesRV: "0"}
	ports := r
	ports.servicesRV = ""
	svcStore, _ := s.stores.Store(servicesGR)
	ipStore, _ := s.stores.Store(ipAddressesGR)
	ipc := &controllers.ClusterIPRepair{
		Services: svcStore.Cache, IPAddresses: ipStore.Cache, Store: r, Log: s.log,
		Repaired: func() { s.ipRepaired.Store(true) },
	}
	s.background.Go(func() { ipc.Run(ctx) })
	npc := &controllers.NodePortRepair{
		Store: ports, InRange: func(p int) bool { return p >= nodePorts.Base && p < nodePorts.Base+nodePorts.Size },
		Range: nodePorts.String(), Log: s.log,
		Repaired: func() { s.portsRepaired.Store(true) },
	}
	s.background.Go(func() { npc.Run(ctx) })
}

var serviceCIDRsGR = schema.GroupResource{Group: "networking.k8s.io", Resource: "servicecidrs"}

// listCached decodes every object of gr as T, listed by its cache at
// resourceVersion rv.
func listCached[T any](ctx context.Context, s *Server, gr schema.GroupResource, rv string) ([]*T, error) {
	st, ok := s.stores.Store(gr)
	if !ok {
		return nil, fmt.Errorf("%s are not served", gr)
	}
	res, err := st.Cache.List(ctx, watchcache.ListOptions{ResourceVersion: rv})
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", gr, err)
	}
	out := make([]*T, 0, len(res.Items))
	for _, it := range res.Items {
		obj := new(T)
		if err := json.Unmarshal(it.JSON(), obj); err != nil {
			return nil, fmt.Errorf("decoding %s %s: %w", gr, it.Key, err)
		}
		out = append(out, obj)
	}
	return out, nil
}

// getCached reads the object from gr's cache as T; nil when there is none.
func getCached[T any](ctx context.Context, s *Server, gr schema.GroupResource, ns, name string) (*T, error) {
	obj := new(T)
	found, err := storedServices{s.stores}.get(ctx, gr, ns, name, obj)
	if err != nil || !found {
		return nil, err
	}
	return obj, nil
}

func (r serviceRepair) Service(ctx context.Context, ns, name string) (*corev1.Service, error) {
	return getCached[corev1.Service](ctx, r.s, servicesGR, ns, name)
}

func (r serviceRepair) Services(ctx context.Context) ([]*corev1.Service, error) {
	return listCached[corev1.Service](ctx, r.s, servicesGR, r.servicesRV)
}

func (r serviceRepair) IPAddress(ctx context.Context, name string) (*networkingv1.IPAddress, error) {
	return getCached[networkingv1.IPAddress](ctx, r.s, ipAddressesGR, "", name)
}

func (r serviceRepair) IPAddresses(ctx context.Context) ([]*networkingv1.IPAddress, error) {
	return listCached[networkingv1.IPAddress](ctx, r.s, ipAddressesGR, "0")
}

func (r serviceRepair) ServiceCIDRs(ctx context.Context) ([]*networkingv1.ServiceCIDR, error) {
	return listCached[networkingv1.ServiceCIDR](ctx, r.s, serviceCIDRsGR, "0")
}

func (r serviceRepair) CreateIPAddress(ctx context.Context, ip netip.Addr, svc *corev1.Service) error {
	return r.ips.Restore(ctx, ip, svc.Namespace, svc.Name)
}

// DeleteIPAddress deletes at the revision read: a record rewritten since
// (by a replica's repair, or taken by a Service) stays.
func (r serviceRepair) DeleteIPAddress(ctx context.Context, ip *networkingv1.IPAddress) error {
	rev, err := strconv.ParseInt(ip.ResourceVersion, 10, 64)
	if err != nil || rev == 0 {
		return fmt.Errorf("IPAddress %s has no resourceVersion to delete at", ip.Name)
	}
	_, _, err = r.s.raw.Delete(ctx, r.ips.Prefix+ip.Name, rev)
	return err
}

func (r serviceRepair) NodePortRecords(ctx context.Context) ([]builtin.NodePortRecord, error) {
	return r.nodePorts.Records(ctx)
}

func (r serviceRepair) MarkNodePort(ctx context.Context, port int, svc *corev1.Service, rev int64) error {
	return r.nodePorts.Mark(ctx, port, svc.Namespace, svc.Name, rev)
}

func (r serviceRepair) FreeNodePort(ctx context.Context, port int, rev int64) error {
	return r.nodePorts.Free(ctx, port, rev)
}

// Event stores ev as upstream's events recorder writes one (named for the
// object and the time, in its namespace or default), expiring after
// --event-ttl as every Event.
func (r serviceRepair) Event(ctx context.Context, ev controllers.RepairEvent) error {
	st, ok := r.s.stores.Store(schema.GroupResource{Resource: "events"})
	if !ok {
		return errors.New("events are not served")
	}
	now := time.Now()
	ns := ev.Regarding.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	host, _ := os.Hostname()
	e := builtin.EventFromV1(&eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("%s.%x", ev.Regarding.Name, now.UnixNano()), Namespace: ns,
			UID: uuid.NewUUID(), CreationTimestamp: metav1.NewTime(now.UTC().Truncate(time.Second)),
		},
		EventTime:           metav1.NewMicroTime(now),
		ReportingController: ev.Controller,
		ReportingInstance:   ev.Controller + "-" + host,
		Action:              ev.Action,
		Reason:              ev.Reason,
		Regarding:           ev.Regarding,
		Note:                ev.Note,
		Type:                ev.Type,
	})
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(e)
	if err != nil {
		return err
	}
	data, err := handler.EncodeStored(u)
	if err != nil {
		return err
	}
	_, err = storage.CreateWithTTL(ctx, st.Storage, st.Key(ns, e.Name), data, r.s.cfg.EventTTL)
	return err
}
