package controllers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/crdserver/crdserver/internal/builtin"
	"github.com/crdserver/crdserver/internal/storage"
)

// NodePortStore is what the node port repair loop reads and writes: the
// Services (from their cache) and the allocator's port records (from
// storage, builtin.NodePorts).
type NodePortStore interface {
	Services(ctx context.Context) ([]*corev1.Service, error)
	NodePortRecords(ctx context.Context) ([]builtin.NodePortRecord, error)
	// MarkNodePort records port as svc's: created when rev is 0, else
	// replacing the record at revision rev.
	MarkNodePort(ctx context.Context, port int, svc *corev1.Service, rev int64) error
	// FreeNodePort deletes port's record if it is at revision rev.
	FreeNodePort(ctx context.Context, port int, rev int64) error
	Event(ctx context.Context, ev RepairEvent) error
}

// NodePortRepair is upstream's portallocator repair controller
// (portallocator/controller/repair.go): upstream keeps the allocated ports
// in one bitmap and rebuilds it from the Services; crdserver keeps one
// record a port (builtin.NodePorts), so the same check is made record by
// record. A port a Service holds without a record gets one
// (PortNotAllocated), a port outside the range is reported
// (PortOutOfRange), a port two Services hold is reported
// (PortAlreadyAllocated), and a record of a port no Service holds is freed
// once it was seen so in three checks in a row (and is older than the
// allocator's grace, since a create may be on its way). It checks at
// start and every Interval, as upstream. Every replica runs it: each
// write is at the revision read, so replicas that race write it once.
type NodePortRepair struct {
	Store NodePortStore
	// InRange reports whether a port is in the node port range; Range
	// words it in events.
	InRange func(port int) bool
	Range   string
	Log     *slog.Logger
	// Interval between checks; RepairInterval by default.
	Interval time.Duration
	// Grace is how old a record must be to be freed (a minute by default).
	Grace time.Duration
	Now   func() time.Time
	// Repaired is called once, after the first check succeeded.
	Repaired func()

	// leaks counts, per port, the checks in a row that saw it leaked.
	// Only Run's goroutine uses it.
	leaks map[int]int
}

const (
	portRepairController = "portallocator-repair-controller"
	// leakChecks is how many checks in a row must see a port leaked before
	// it is freed (upstream's numRepairsBeforeLeakCleanup).
	leakChecks = 3
)

// Run checks at once (retried with back-off until it succeeds) and then
// every Interval, until ctx ends.
func (r *NodePortRepair) Run(ctx context.Context) {
	if r.Log == nil {
		r.Log = slog.Default()
	}
	if r.Interval == 0 {
		r.Interval = RepairInterval
	}
	if !retryUntil(ctx, r.Log, "node port repair", func() error { return r.Check(ctx) }) {
		return
	}
	if r.Repaired != nil {
		r.Repaired()
	}
	every(ctx, r.Interval, func() {
		if err := r.Check(ctx); err != nil && ctx.Err() == nil {
			r.Log.Warn(portRepairController+": check failed", "err", err)
		}
	})
}

// Check makes the port records agree with the Services once.
func (r *NodePortRepair) Check(ctx context.Context) error {
	svcs, err := r.Store.Services(ctx)
	if err != nil {
		return fmt.Errorf("listing Services: %w", err)
	}
	recs, err := r.Store.NodePortRecords(ctx)
	if err != nil {
		return err
	}
	if r.leaks == nil {
		r.leaks = map[int]int{}
	}
	plan := planNodePorts(svcs, recs, r.InRange, r.leaks, r.now(), r.grace())
	for _, ev := range plan.events {
		if ev.Reason == "PortOutOfRange" {
			ev.Note += r.Range + "; please recreate service"
		}
		r.report(ctx, ev)
	}
	var errs []error
	for _, m := range plan.mark {
		err := r.Store.MarkNodePort(ctx, m.port, m.svc, m.rev)
		switch {
		case err == nil:
			// Reported once written, by the replica that wrote it.
			r.report(ctx, RepairEvent{Regarding: serviceRef(m.svc), Reason: "PortNotAllocated", Note: m.note})
		case errors.Is(err, storage.ErrExists), errors.Is(err, storage.ErrConflict), errors.Is(err, storage.ErrNotFound):
			// Another replica, or an allocation, wrote it first: the
			// next check sees what it wrote.
		default:
			errs = append(errs, fmt.Errorf("recording node port %d of Service %s/%s: %w", m.port, m.svc.Namespace, m.svc.Name, err))
		}
	}
	for _, f := range plan.free {
		r.Log.Warn(portRepairController+": the node port appears to have leaked: cleaning up", "port", f.port)
		if err := r.Store.FreeNodePort(ctx, f.port, f.rev); err != nil && !errors.Is(err, storage.ErrConflict) && !errors.Is(err, storage.ErrNotFound) {
			errs = append(errs, fmt.Errorf("freeing node port %d: %w", f.port, err))
		}
	}
	return errors.Join(errs...)
}

func (r *NodePortRepair) report(ctx context.Context, ev RepairEvent) {
	ev.Controller, ev.Type, ev.Action = portRepairController, corev1.EventTypeWarning, "PortAllocation"
	reportEvent(ctx, r.Store.Event, r.Log, ev)
}

func (r *NodePortRepair) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *NodePortRepair) grace() time.Duration {
	if r.Grace > 0 {
		return r.Grace
	}
	return time.Minute
}

// nodePortPlan is what one check writes and reports.
type nodePortPlan struct {
	mark   []portMark
	free   []portFree
	events []RepairEvent // Regarding, Reason and Note (PortOutOfRange's note ends with the range)
}

type portMark struct {
	port int
	svc  *corev1.Service
	rev  int64 // 0: create
	// note of the PortNotAllocated event reported once it is written.
	note string
}

type portFree struct {
	port int
	rev  int64
}

// planNodePorts compares the Services' node ports with the records, in
// the order of upstream's check (Services by namespace and name, their
// ports in order); leaks is updated for the next check.
func planNodePorts(svcs []*corev1.Service, recs []builtin.NodePortRecord, inRange func(int) bool, leaks map[int]int, now time.Time, grace time.Duration) nodePortPlan {
	sort.Slice(svcs, func(i, j int) bool {
		if svcs[i].Namespace != svcs[j].Namespace {
			return svcs[i].Namespace < svcs[j].Namespace
		}
		return svcs[i].Name < svcs[j].Name
	})
	byPort := map[int]builtin.NodePortRecord{}
	for _, rec := range recs {
		byPort[rec.Port] = rec
	}
	// holders lists, per port in range, the Services holding it, a
	// Service as often as it lists it.
	holders := map[int][]*corev1.Service{}
	var plan nodePortPlan
	var order []int
	for _, svc := range svcs {
		for _, port := range serviceNodePorts(svc) {
			if !inRange(port) {
				plan.events = append(plan.events, RepairEvent{Regarding: serviceRef(svc), Reason: "PortOutOfRange",
					Note: fmt.Sprintf("Port %d is not within the port range ", port)})
				continue
			}
			if holders[port] == nil {
				order = append(order, port)
			}
			holders[port] = append(holders[port], svc)
		}
	}
	for _, port := range order {
		hs := holders[port]
		rec, recorded := byPort[port]
		// The record's own Service keeps the port when it holds it;
		// otherwise the first Service in order gets it.
		owner := 0
		for i, h := range hs {
			if recorded && h.Namespace == rec.Namespace && h.Name == rec.Name {
				owner = i
				break
			}
		}
		svc := hs[owner]
		note := fmt.Sprintf("Port %d is not allocated; repairing", port)
		switch {
		case !recorded:
			plan.mark = append(plan.mark, portMark{port: port, svc: svc, note: note})
		case rec.Namespace != svc.Namespace || rec.Name != svc.Name:
			plan.mark = append(plan.mark, portMark{port: port, svc: svc, rev: rec.Revision, note: note})
		}
		for i, h := range hs {
			if i != owner {
				plan.events = append(plan.events, RepairEvent{Regarding: serviceRef(h), Reason: "PortAlreadyAllocated",
					Note: fmt.Sprintf("Port %d was assigned to multiple services; please recreate service", port)})
			}
		}
		delete(leaks, port) // held, so not leaked
	}
	for _, rec := range recs {
		if len(holders[rec.Port]) > 0 {
			continue
		}
		leaks[rec.Port]++
		if leaks[rec.Port] >= leakChecks && now.Sub(rec.Created) >= grace {
			plan.free = append(plan.free, portFree{port: rec.Port, rev: rec.Revision})
			delete(leaks, rec.Port)
		}
	}
	for port := range leaks {
		if _, ok := byPort[port]; !ok {
			delete(leaks, port) // freed meanwhile
		}
	}
	return plan
}

// serviceNodePorts lists the node ports svc holds, as upstream counts
// them: a node port listed again for another protocol counts once, again
// for the same protocol twice (which is then reported as assigned twice);
// the health check node port counts unless a UDP port has it.
func serviceNodePorts(svc *corev1.Service) []int {
	var out []int
	seen := map[int]map[corev1.Protocol]bool{}
	for _, p := range svc.Spec.Ports {
		np := int(p.NodePort)
		if np == 0 {
			continue
		}
		protos := seen[np]
		switch {
		case protos == nil:
			protos = map[corev1.Protocol]bool{}
			seen[np] = protos
			out = append(out, np)
		case protos[p.Protocol]:
			out = append(out, np)
		}
		protos[p.Protocol] = true
	}
	if hc := int(svc.Spec.HealthCheckNodePort); hc != 0 {
		if protos := seen[hc]; protos == nil || protos[corev1.ProtocolTCP] {
			out = append(out, hc)
		}
	}
	return out
}
