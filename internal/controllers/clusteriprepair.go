package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/crdserver/crdserver/internal/storage"
	"github.com/crdserver/crdserver/internal/watchcache"
)

// The repair loops' timing, as kube-apiserver's.
const (
	// RepairInterval is how often the repair loops check everything again
	// (kube-apiserver's repairLoopInterval).
	RepairInterval = 3 * time.Minute
	// ipAddressGrace is how old an IPAddress whose Service does not exist
	// must be before it is deleted: the allocator writes it before the
	// Service, whose create may still be on its way to storage.
	ipAddressGrace = 60 * time.Second
	// ipAddressNewer is how long an IPAddress created after its Service,
	// which does not hold it, is left alone: a Service recreated under its
	// name that the cache does not show yet.
	ipAddressNewer = 5 * time.Second
	// managedByAllocator is the IPAddresses' managed-by label of the
	// cluster IP allocator; the repair loop touches no others.
	managedByAllocator = "ipallocator.k8s.io"
)

// RepairEvent is an event a repair loop reports about an object, as
// upstream's events recorder writes it (events.k8s.io/v1 fields).
type RepairEvent struct {
	Regarding corev1.ObjectReference
	Type      string // Warning, as every event of the repair loops
	Reason    string
	Action    string
	Note      string
	// Controller is the reporting controller.
	Controller string
}

// ClusterIPStore is what the cluster IP repair loop reads (from the watch
// caches: what it decides on is checked by the writes' preconditions) and
// writes. Reads answer nil, nil for an object that does not exist.
type ClusterIPStore interface {
	Service(ctx context.Context, namespace, name string) (*corev1.Service, error)
	Services(ctx context.Context) ([]*corev1.Service, error)
	IPAddress(ctx context.Context, name string) (*networkingv1.IPAddress, error)
	IPAddresses(ctx context.Context) ([]*networkingv1.IPAddress, error)
	ServiceCIDRs(ctx context.Context) ([]*networkingv1.ServiceCIDR, error)
	// CreateIPAddress records ip as svc's; storage.ErrExists when a record
	// of ip exists.
	CreateIPAddress(ctx context.Context, ip netip.Addr, svc *corev1.Service) error
	// DeleteIPAddress deletes ip at its resourceVersion: storage.ErrConflict
	// when it changed since it was read, storage.ErrNotFound when it is gone.
	DeleteIPAddress(ctx context.Context, ip *networkingv1.IPAddress) error
	Event(ctx context.Context, ev RepairEvent) error
}

// ClusterIPRepair is upstream's ipallocator repair controller (repairip.go,
// run by kube-apiserver's start-service-ip-repair-controllers hook): every
// cluster IP of a Service has its IPAddress, recreated when missing or
// naming something else; an IPAddress of the allocator that no Service
// holds is deleted once past its grace; addresses outside every ServiceCIDR
// and addresses two Services hold are reported, not repaired. It checks
// everything at start, every Interval, and each Service and IPAddress that
// changes. Every replica runs it: creates are create-if-absent and deletes
// are at the revision read, so replicas that race write each change once.
type ClusterIPRepair struct {
	Services, IPAddresses *watchcache.Cache // watched for changes
	Store                 ClusterIPStore
	Log                   *slog.Logger
	// Interval between full checks; RepairInterval by default.
	Interval time.Duration
	// Now is the clock (time.Now by default).
	Now func() time.Time
	// Repaired is called once, after the first full check succeeded.
	Repaired func()

	queue *workQueue[repairKey]
}

// repairKey is a queued Service (namespace/name) or IPAddress (name).
type repairKey struct {
	ip   bool
	name string
}

const ipRepairController = "ipallocator-repair-controller"

// Run works until ctx ends: it waits for the default ServiceCIDR, checks
// everything (retried with back-off until it succeeds), then follows
// changes.
func (r *ClusterIPRepair) Run(ctx context.Context) {
	if r.Log == nil {
		r.Log = slog.Default()
	}
	if r.Interval == 0 {
		r.Interval = RepairInterval
	}
	r.queue = newWorkQueue[repairKey]()
	stop := context.AfterFunc(ctx, r.queue.shutDown)
	defer stop()
	// As upstream, nothing is checked before the default ServiceCIDR
	// exists: without it every address would be out of range.
	if !waitFor(ctx, func() bool { ok, _ := r.defaultCIDR(ctx); return ok }) {
		return
	}
	if !retryUntil(ctx, r.Log, "cluster IP repair", func() error { return r.checkAll(ctx, false) }) {
		return
	}
	if r.Repaired != nil {
		r.Repaired()
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { r.work(ctx) })
	for _, c := range []struct {
		cache *watchcache.Cache
		ip    bool
	}{{r.Services, false}, {r.IPAddresses, true}} {
		if c.cache == nil {
			continue
		}
		wg.Go(func() {
			watchEvents(ctx, c.cache, r.Log, ipRepairController, func(ev watchcache.Event) {
				name := ev.Item.Name
				if ev.Item.Namespace != "" {
					name = ev.Item.Namespace + "/" + name
				}
				r.queue.add(repairKey{ip: c.ip, name: name})
				// A record deleted behind the allocator's back is put back
				// now, where upstream waits for its next full check.
				if c.ip && ev.Type == watchcache.Deleted {
					if ref := deletedParent(ev.Item); ref != "" {
						r.queue.add(repairKey{name: ref})
					}
				}
			})
		})
	}
	wg.Go(func() {
		every(ctx, r.Interval, func() {
			if err := r.checkAll(ctx, true); err != nil && ctx.Err() == nil {
				r.Log.Warn(ipRepairController+": listing", "err", err)
			}
		})
	})
}

// deletedParent names the Service (namespace/name) a deleted IPAddress
// named, "" when none.
func deletedParent(it *watchcache.Item) string {
	var ip networkingv1.IPAddress
	if json.Unmarshal(it.JSON(), &ip) != nil {
		return ""
	}
	ref := ip.Spec.ParentRef
	if ref == nil || ref.Group != "" || ref.Resource != "services" {
		return ""
	}
	return ref.Namespace + "/" + ref.Name
}

func (r *ClusterIPRepair) defaultCIDR(ctx context.Context) (bool, error) {
	cidrs, err := r.Store.ServiceCIDRs(ctx)
	return slices.ContainsFunc(cidrs, func(c *networkingv1.ServiceCIDR) bool { return c.Name == "kubernetes" }), err
}

// checkAll checks every Service, then every IPAddress of the allocator;
// with queue, it queues them for the worker instead.
func (r *ClusterIPRepair) checkAll(ctx context.Context, queue bool) error {
	svcs, err := r.Store.Services(ctx)
	if err != nil {
		return fmt.Errorf("listing Services: %w", err)
	}
	ips, err := r.Store.IPAddresses(ctx)
	if err != nil {
		return fmt.Errorf("listing IPAddresses: %w", err)
	}
	var keys []repairKey
	for _, svc := range svcs {
		keys = append(keys, repairKey{name: svc.Namespace + "/" + svc.Name})
	}
	for _, ip := range ips {
		if ip.Labels[networkingv1.LabelManagedBy] == managedByAllocator {
			keys = append(keys, repairKey{ip: true, name: ip.Name})
		}
	}
	if queue {
		r.queue.add(keys...)
		return nil
	}
	for _, k := range keys {
		if _, err := r.sync(ctx, k); err != nil {
			return err
		}
	}
	return nil
}

func (r *ClusterIPRepair) work(ctx context.Context) {
	for {
		k, ok := r.queue.get()
		if !ok {
			return
		}
		again, err := r.sync(ctx, k)
		switch {
		case err != nil && ctx.Err() == nil:
			r.Log.Warn(ipRepairController+": syncing", "key", k.name, "err", err)
			r.queue.retry(k)
		case err == nil:
			r.queue.forget(k)
			if again > 0 {
				time.AfterFunc(again, func() { r.queue.add(k) })
			}
		}
		r.queue.done(k)
	}
}

// sync checks one Service or IPAddress; again > 0 asks for another check
// that much later (an IPAddress still in its grace).
func (r *ClusterIPRepair) sync(ctx context.Context, k repairKey) (again time.Duration, err error) {
	if !k.ip {
		ns, name, _ := strings.Cut(k.name, "/")
		return r.syncService(ctx, ns, name)
	}
	return r.syncIPAddress(ctx, k.name)
}

func (r *ClusterIPRepair) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func familyOf(ip netip.Addr) corev1.IPFamily {
	if ip.Is6() {
		return corev1.IPv6Protocol
	}
	return corev1.IPv4Protocol
}

// syncService makes every cluster IP of the Service namespace/name have its
// IPAddress, in upstream's words for what it finds. A repair is reported
// only once its write succeeded: the caches of Services and IPAddresses
// follow storage apart, so what one shows may be a moment behind the
// other (a record just written, or another replica's repair); a write that
// finds storage otherwise has the Service checked again a second later.
func (r *ClusterIPRepair) syncService(ctx context.Context, ns, name string) (again time.Duration, err error) {
	svc, err := r.Store.Service(ctx, ns, name)
	if err != nil || svc == nil {
		return 0, err
	}
	if svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone {
		return 0, nil
	}
	cidrs, err := r.Store.ServiceCIDRs(ctx)
	if err != nil {
		return 0, err
	}
	for _, s := range svc.Spec.ClusterIPs {
		ip, perr := netip.ParseAddr(s)
		if perr != nil {
			// Upstream prints the address it failed to parse: <nil>.
			r.event(ctx, svc, "ClusterIPNotValid", "ClusterIPValidation", "Cluster IP <nil> is not a valid IP; please recreate Service")
			continue
		}
		family := familyOf(ip)
		if !inServiceCIDRs(cidrs, ip) {
			r.event(ctx, svc, "ClusterIPOutOfRange", "ClusterIPAllocation", fmt.Sprintf("Cluster IP [%v]: %s is not within any configured Service CIDR; please recreate service", family, ip))
			continue
		}
		rec, err := r.Store.IPAddress(ctx, ip.String())
		if err != nil {
			r.event(ctx, svc, "UnknownError", "ClusterIPAllocation", fmt.Sprintf("Unable to allocate ClusterIP [%v]: %s due to an unknown error", family, ip))
			return 0, fmt.Errorf("reading IPAddress %s of Service %s/%s: %w", ip, ns, name, err)
		}
		var note string
		wrote := false
		switch decideServiceIP(svc, rec, func(ns, name string) (*corev1.Service, error) { return r.Store.Service(ctx, ns, name) }) {
		case ipMissing:
			note = fmt.Sprintf("Cluster IP [%v]: %s is not allocated; repairing", family, ip)
			err = r.Store.CreateIPAddress(ctx, ip, svc)
			wrote = err == nil
			if errors.Is(err, storage.ErrExists) {
				err = nil
			}
		case ipWrongRef:
			note = fmt.Sprintf("the ClusterIP [%v]: %s for Service %s/%s has a wrong reference; repairing", family, ip, ns, name)
			wrote, err = r.recreate(ctx, rec, ip, svc)
		case ipBadLabels:
			// Upstream puts the allocator's labels back without a word.
			if _, err := r.recreate(ctx, rec, ip, svc); err != nil {
				return 0, fmt.Errorf("relabelling IPAddress %s of Service %s/%s: %w", ip, ns, name, err)
			}
			continue
		case ipShared:
			r.event(ctx, svc, "ClusterIPAlreadyAllocated", "ClusterIPAllocation", fmt.Sprintf("Cluster IP [%v]:%s was assigned to multiple services; please recreate service", family, ip))
			continue
		default:
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("repairing IPAddress %s of Service %s/%s: %w", ip, ns, name, err)
		}
		if !wrote {
			again = time.Second
			continue
		}
		r.event(ctx, svc, "ClusterIPNotAllocated", "ClusterIPAllocation", note)
	}
	return again, nil
}

// recreate replaces rec by a record of svc: deleted at the revision read,
// then created if absent, so that of replicas doing it together one
// deletes and one creates. It reports whether it created the record; not
// when storage held another than rec (the cache was behind).
func (r *ClusterIPRepair) recreate(ctx context.Context, rec *networkingv1.IPAddress, ip netip.Addr, svc *corev1.Service) (bool, error) {
	err := r.Store.DeleteIPAddress(ctx, rec)
	switch {
	case errors.Is(err, storage.ErrConflict):
		return false, nil
	case err != nil && !errors.Is(err, storage.ErrNotFound):
		return false, fmt.Errorf("deleting IPAddress %s to recreate it: %w", rec.Name, err)
	}
	err = r.Store.CreateIPAddress(ctx, ip, svc)
	switch {
	case errors.Is(err, storage.ErrExists):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("recreating IPAddress %s: %w", rec.Name, err)
	}
	return true, nil
}

// serviceIPState is what a Service's cluster IP's record says.
type serviceIPState int

const (
	ipOK        serviceIPState = iota
	ipMissing                  // no record: create it
	ipWrongRef                 // a record of something else, or of a Service that is gone: recreate it
	ipBadLabels                // the record's labels are not the allocator's: recreate it
	ipShared                   // the record's Service holds the address too: report it
)

// decideServiceIP compares svc's address with its record rec (nil: none);
// service reads another Service (nil when it does not exist).
func decideServiceIP(svc *corev1.Service, rec *networkingv1.IPAddress, service func(ns, name string) (*corev1.Service, error)) serviceIPState {
	if rec == nil {
		return ipMissing
	}
	ref := rec.Spec.ParentRef
	if ref == nil || ref.Group != "" || ref.Resource != "services" {
		return ipWrongRef
	}
	if ref.Namespace != svc.Namespace || ref.Name != svc.Name {
		other, err := service(ref.Namespace, ref.Name)
		if err != nil || other == nil {
			// Upstream treats an unreadable parent as a missing one.
			return ipWrongRef
		}
		if slices.Contains(other.Spec.ClusterIPs, rec.Name) {
			return ipShared
		}
	}
	if ip, err := netip.ParseAddr(rec.Name); err != nil || rec.Labels[networkingv1.LabelIPAddressFamily] != string(familyOf(ip)) ||
		rec.Labels[networkingv1.LabelManagedBy] != managedByAllocator {
		return ipBadLabels
	}
	return ipOK
}

// inServiceCIDRs reports whether some ServiceCIDR holds ip, as upstream
// counts it: neither a range's network address nor its IPv4 broadcast one.
func inServiceCIDRs(cidrs []*networkingv1.ServiceCIDR, ip netip.Addr) bool {
	for _, c := range cidrs {
		for _, s := range c.Spec.CIDRs {
			p, err := netip.ParsePrefix(s)
			if err != nil || !p.Contains(ip) || p.Masked().Addr() == ip {
				continue
			}
			if ip.Is4() && ip == lastAddr(p) {
				continue
			}
			return true
		}
	}
	return false
}

func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i, n := len(b)-1, len(b)*8-p.Bits(); i >= 0 && n > 0; i, n = i-1, n-8 {
		b[i] |= byte(0xff >> max(0, 8-n))
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// ipAddressAction is what the repair loop does with an IPAddress.
type ipAddressAction struct {
	delete bool
	// after > 0: check it again then (still in its grace).
	after time.Duration
	// reason and note of the event reporting a delete.
	reason, note string
}

// decideIPAddress decides on an IPAddress of the allocator whose parent
// Service is svc (nil: it does not exist), as upstream's syncIPAddress.
func decideIPAddress(ip *networkingv1.IPAddress, svc *corev1.Service, now time.Time) ipAddressAction {
	ref := ip.Spec.ParentRef
	if ref == nil || ref.Group != "" || ref.Resource != "services" {
		return ipAddressAction{delete: true, reason: "IPAddressNotAllocated",
			note: fmt.Sprintf("IPAddress %s appears to have been modified, not referencing a Service %v: cleaning up", ip.Name, ref)}
	}
	age := now.Sub(ip.CreationTimestamp.Time)
	if svc == nil {
		if age <= ipAddressGrace {
			return ipAddressAction{after: ipAddressGrace - age + time.Second}
		}
		return ipAddressAction{delete: true, reason: "IPAddressNotAllocated",
			note: fmt.Sprintf("IPAddress: %s for Service %s/%s appears to have leaked: cleaning up", ip.Name, ref.Namespace, ref.Name)}
	}
	if slices.Contains(svc.Spec.ClusterIPs, ip.Name) {
		return ipAddressAction{}
	}
	if svc.Spec.Type == corev1.ServiceTypeExternalName && age < ipAddressGrace {
		return ipAddressAction{after: ipAddressGrace - age}
	}
	if ip.CreationTimestamp.After(svc.CreationTimestamp.Time) && age < ipAddressNewer {
		return ipAddressAction{after: ipAddressNewer}
	}
	return ipAddressAction{delete: true, reason: "IPAddressWrongReference",
		note: fmt.Sprintf("IPAddress: %s for Service %s/%s has a wrong reference; cleaning up", ip.Name, svc.Namespace, svc.Name)}
}

// syncIPAddress deletes the named IPAddress of the allocator if no Service
// holds it, past its grace.
func (r *ClusterIPRepair) syncIPAddress(ctx context.Context, name string) (time.Duration, error) {
	ip, err := r.Store.IPAddress(ctx, name)
	if err != nil || ip == nil || ip.Labels[networkingv1.LabelManagedBy] != managedByAllocator {
		return 0, err
	}
	var svc *corev1.Service
	if ref := ip.Spec.ParentRef; ref != nil && ref.Group == "" && ref.Resource == "services" {
		if svc, err = r.Store.Service(ctx, ref.Namespace, ref.Name); err != nil {
			return 0, fmt.Errorf("reading the Service of IPAddress %s: %w", name, err)
		}
	}
	act := decideIPAddress(ip, svc, r.now())
	if !act.delete {
		return act.after, nil
	}
	// Reported once deleted, by the replica that deleted it.
	err = r.Store.DeleteIPAddress(ctx, ip)
	switch {
	case errors.Is(err, storage.ErrConflict):
		return time.Second, nil // changed since read: look again
	case errors.Is(err, storage.ErrNotFound):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("deleting IPAddress %s: %w", name, err)
	}
	r.eventOn(ctx, ipAddressRef(ip), act.reason, "IPAddressAllocation", act.note)
	return 0, nil
}

func ipAddressRef(ip *networkingv1.IPAddress) corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: "networking.k8s.io/v1", Kind: "IPAddress", Name: ip.Name, UID: ip.UID, ResourceVersion: ip.ResourceVersion}
}

func serviceRef(svc *corev1.Service) corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: "v1", Kind: "Service", Namespace: svc.Namespace, Name: svc.Name, UID: svc.UID, ResourceVersion: svc.ResourceVersion}
}

func (r *ClusterIPRepair) event(ctx context.Context, svc *corev1.Service, reason, action, note string) {
	r.eventOn(ctx, serviceRef(svc), reason, action, note)
}

// eventOn reports ev and logs it; a failure to report is only logged, as
// the repair goes on without it.
func (r *ClusterIPRepair) eventOn(ctx context.Context, ref corev1.ObjectReference, reason, action, note string) {
	reportEvent(ctx, r.Store.Event, r.Log, RepairEvent{Regarding: ref, Type: corev1.EventTypeWarning, Reason: reason, Action: action, Note: note, Controller: ipRepairController})
}

func reportEvent(ctx context.Context, write func(context.Context, RepairEvent) error, log *slog.Logger, ev RepairEvent) {
	log.Warn(ev.Controller+": "+ev.Note, "reason", ev.Reason, "namespace", ev.Regarding.Namespace, "name", ev.Regarding.Name)
	if err := write(ctx, ev); err != nil && ctx.Err() == nil {
		log.Warn(ev.Controller+": writing an event", "reason", ev.Reason, "err", err)
	}
}

// every calls f each interval until ctx ends.
func every(ctx context.Context, interval time.Duration, f func()) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			f()
		}
	}
}

// waitFor polls ok until it holds (true) or ctx ends (false): from every
// 5ms, doubling up to 100ms, since what it waits for (a cache read) is
// usually moments away and /readyz waits with it.
func waitFor(ctx context.Context, ok func() bool) bool {
	for wait := 5 * time.Millisecond; !ok(); wait = min(2*wait, 100*time.Millisecond) {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(wait):
		}
	}
	return true
}

// retryUntil runs f until it succeeds (true) or ctx ends (false), waiting
// between tries from 100ms doubling up to 30s.
func retryUntil(ctx context.Context, log *slog.Logger, what string, f func() error) bool {
	wait := 100 * time.Millisecond
	for {
		err := f()
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		log.Warn(what+" failed, retrying", "err", err, "in", wait)
		select {
		case <-ctx.Done():
			return false
		case <-time.After(wait):
		}
		wait = min(2*wait, 30*time.Second)
	}
}
