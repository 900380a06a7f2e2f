package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/storage"
)

// DefaultServiceNodePortRange is upstream's --service-node-port-range
// default.
const DefaultServiceNodePortRange = "30000-32767"

// NodePorts allocates Services' node ports (and load balancers' health
// check node ports) from one range. Every port in use is a record under
// Prefix named by the port, naming its Service: creating that key is the
// allocation, so replicas sharing an etcd never give one port to two
// Services.
//
// A record outlives its Service when the Service goes by a path that does
// not release it (a namespace deletion, a crash between two writes); such
// a record is taken over by an allocation, once older than Grace, when its
// Service is gone or no longer has the port, and freed by the repair loop
// (controllers.NodePortRepair) as upstream's bitmap is repaired.
type NodePorts struct {
	// Base and Size: the range is Base to Base+Size-1.
	Base, Size int
	Storage    storage.Interface
	// Prefix is the key prefix of the port records; ServicePrefix that of
	// the Services (a Service's key is namespace/name under it).
	Prefix, ServicePrefix string
	Reclaim
}

// NewNodePorts parses portRange, "low-high" or "low+size" as upstream's
// flag (upstream's default when empty).
func NewNodePorts(portRange string, st storage.Interface, prefix, servicePrefix string) (*NodePorts, error) {
	if portRange == "" {
		portRange = DefaultServiceNodePortRange
	}
	var base, size int
	lo, hi, dash := strings.Cut(portRange, "-")
	lo2, n, plus := strings.Cut(portRange, "+")
	var err1, err2 error
	switch {
	case dash:
		base, err1 = strconv.Atoi(lo)
		var last int
		last, err2 = strconv.Atoi(hi)
		size = last - base + 1
	case plus:
		base, err1 = strconv.Atoi(lo2)
		size, err2 = strconv.Atoi(n)
		size++
	default:
		base, err1 = strconv.Atoi(portRange)
		size = 1
	}
	if err := errors.Join(err1, err2); err != nil || base <= 0 || size <= 0 || base+size-1 > 65535 {
		return nil, fmt.Errorf("service node port range %q: not a port range", portRange)
	}
	return &NodePorts{Base: base, Size: size, Storage: st, Prefix: prefix, ServicePrefix: servicePrefix}, nil
}

// String is the range as upstream writes it in its errors.
func (a *NodePorts) String() string {
	return fmt.Sprintf("%d-%d", a.Base, a.Base+a.Size-1)
}

// The allocator's errors, in upstream's words.
var (
	errPortAllocated = errors.New("provided port is already allocated")
)

// nodePortRecord is what a port's key holds.
type nodePortRecord struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	Created   time.Time `json:"created"`
}

// AllocateService fills and reserves svc's node ports on create, as
// upstream does: a port that asks for one gets it, one that does not gets
// a free one when its Service needs them (a NodePort, a LoadBalancer
// allocating them), ports sharing a port number share a node port, and a
// LoadBalancer with a Local external traffic policy a health check node
// port. undo frees them again, for a create that then fails.
func (a *NodePorts) AllocateService(ctx context.Context, svc map[string]any) (undo func(), err error) {
	op := a.start(ctx, svc, false)
	if err := op.create(svc); err != nil {
		op.undo()
		return nil, err
	}
	return op.undo, nil
}

// PreviewService is AllocateService for a dry run, reserving nothing: as
// upstream's dry run, a port asked for fails only when it is taken, and
// the ports given are made up from 32769 on.
func (a *NodePorts) PreviewService(ctx context.Context, svc map[string]any) error {
	return a.start(ctx, svc, true).create(svc)
}

// UpdateService reserves what an update of old to svc adds, as upstream:
// ports svc asks for that old does not have, free ones for ports without
// one, and a health check node port when one is newly needed. release
// frees what old had and svc no longer has, once svc is stored; undo frees
// what was reserved, when it is not. With dry, nothing is reserved.
func (a *NodePorts) UpdateService(ctx context.Context, svc, old map[string]any, dry bool) (release, undo func(), err error) {
	op := a.start(ctx, svc, dry)
	freed, err := op.update(svc, old)
	if err != nil {
		op.undo()
		return nil, nil, err
	}
	release = func() {
		for _, p := range freed {
			a.Release(context.WithoutCancel(ctx), p, op.ns, op.name)
		}
	}
	return release, op.undo, nil
}

// ReleaseService frees every node port a deleted svc held.
func (a *NodePorts) ReleaseService(ctx context.Context, svc map[string]any) {
	md := mapField(svc, "metadata")
	ns, _ := md["namespace"].(string)
	name, _ := md["name"].(string)
	for _, p := range heldPorts(svc) {
		a.Release(ctx, p, ns, name)
	}
}

// heldPorts are the node ports svc holds: its ports' and, when it needs
// one, its health check node port.
func heldPorts(svc map[string]any) []int {
	spec := mapField(svc, "spec")
	held := nodePortsOf(spec)
	if needsHealthCheck(spec) {
		if p := intOf(spec["healthCheckNodePort"]); p != 0 {
			held = append(held, p)
		}
	}
	return held
}

// nodePortOp is one request's allocation: what it reserved, to undo.
type nodePortOp struct {
	a        *NodePorts
	ctx      context.Context
	ns, name string
	dry      bool
	taken    []int
}

func (a *NodePorts) start(ctx context.Context, svc map[string]any, dry bool) *nodePortOp {
	md := mapField(svc, "metadata")
	ns, _ := md["namespace"].(string)
	name, _ := md["name"].(string)
	return &nodePortOp{a: a, ctx: ctx, ns: ns, name: name, dry: dry}
}

func (op *nodePortOp) undo() {
	if op.dry {
		return
	}
	for _, p := range op.taken {
		op.a.Release(context.WithoutCancel(op.ctx), p, op.ns, op.name)
	}
	op.taken = nil
}

func (op *nodePortOp) create(svc map[string]any) error {
	spec := mapField(svc, "spec")
	if needsNodePortType(spec) {
		ports := servicePorts(spec)
		given := map[int]int{} // port number -> node port
		for i, pm := range ports {
			np := intOf(pm["nodePort"])
			if np == 0 && !allocatesNodePorts(spec) {
				continue
			}
			number := intOf(pm["port"])
			had := given[number]
			switch {
			case had == 0:
				if np == 0 {
					np = requestedNodePort(number, ports)
				}
				if np != 0 {
					if err := op.allocate(np); err != nil {
						return op.invalid(i, np, err)
					}
				} else {
					var err error
					if np, err = op.allocateNext(); err != nil {
						return err
					}
				}
				pm["nodePort"] = int64(np)
				given[number] = np
			case np == 0:
				pm["nodePort"] = int64(had)
			case np != had:
				if err := op.allocate(np); err != nil {
					return op.invalid(i, np, err)
				}
			}
		}
	}
	if needsHealthCheck(spec) {
		return op.healthCheck(spec)
	}
	return nil
}

// update returns the ports to free once svc is stored.
func (op *nodePortOp) update(svc, old map[string]any) ([]int, error) {
	spec, oldSpec := mapField(svc, "spec"), mapField(old, "spec")
	oldPorts := nodePortsOf(oldSpec)
	var freed []int
	typ := spec["type"]
	if needsNodePortType(oldSpec) && (typ == string(corev1.ServiceTypeExternalName) || typ == string(corev1.ServiceTypeClusterIP)) {
		freed = append(freed, oldPorts...)
	}
	if needsNodePortType(spec) {
		reserved := map[int]bool{}
		for i, pm := range servicePorts(spec) {
			np := intOf(pm["nodePort"])
			if np == 0 && !allocatesNodePorts(spec) {
				continue
			}
			if np == 0 {
				var err error
				if np, err = op.allocateNext(); err != nil {
					return nil, err
				}
				pm["nodePort"] = int64(np)
			} else if !slices.Contains(oldPorts, np) && !reserved[np] {
				if err := op.allocate(np); err != nil {
					return nil, op.invalid(i, np, err)
				}
				reserved[np] = true
			}
		}
		kept := nodePortsOf(spec)
		for _, p := range oldPorts {
			if !slices.Contains(kept, p) {
				freed = append(freed, p)
			}
		}
	}
	needed, needs := needsHealthCheck(oldSpec), needsHealthCheck(spec)
	switch {
	case !needed && needs:
		if err := op.healthCheck(spec); err != nil {
			return nil, err
		}
	case needed && !needs:
		if p := intOf(oldSpec["healthCheckNodePort"]); p != 0 {
			freed = append(freed, p)
		}
	}
	return freed, nil
}

// healthCheck reserves the health check node port spec asks for, or a
// free one; upstream answers a failure as an internal error.
func (op *nodePortOp) healthCheck(spec map[string]any) error {
	if p := intOf(spec["healthCheckNodePort"]); p != 0 {
		if err := op.allocate(p); err != nil {
			return apierrors.NewInternalError(fmt.Errorf("failed to allocate requested HealthCheck NodePort %v: %v", p, err))
		}
		return nil
	}
	p, err := op.allocateNext()
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("failed to allocate a HealthCheck NodePort %v: %v", p, err))
	}
	spec["healthCheckNodePort"] = int64(p)
	return nil
}

// invalid is upstream's 422 for a node port it cannot give.
func (op *nodePortOp) invalid(i, port int, err error) error {
	if apierrors.IsInternalError(err) {
		return err
	}
	errs := field.ErrorList{field.Invalid(field.NewPath("spec", "ports").Index(i).Child("nodePort"), port, err.Error())}
	return apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, op.name, errs)
}

// allocate reserves port. A dry run only checks that no other Service
// holds it: as upstream's, it does not check the range.
func (op *nodePortOp) allocate(port int) error {
	if slices.Contains(op.taken, port) {
		return errPortAllocated
	}
	if op.dry {
		if op.a.inRange(port) {
			held, err := op.a.held(op.ctx, port, op.ns, op.name)
			if err != nil {
				return apierrors.NewInternalError(err)
			}
			if held {
				return errPortAllocated
			}
		}
		op.taken = append(op.taken, port)
		return nil
	}
	if !op.a.inRange(port) {
		return fmt.Errorf("provided port is not in the valid range. The range of valid ports is %s", op.a)
	}
	err := op.a.reserve(op.ctx, port, op.ns, op.name, true)
	switch {
	case errors.Is(err, storage.ErrExists):
		return errPortAllocated
	case err != nil:
		return apierrors.NewInternalError(err)
	}
	op.taken = append(op.taken, port)
	return nil
}

// allocateNext reserves a free port. A dry run makes one up as upstream's
// does: one above the highest it gave, from 32769.
func (op *nodePortOp) allocateNext() (int, error) {
	if op.dry {
		p := 32769
		if len(op.taken) > 0 {
			p = slices.Max(op.taken) + 1
		}
		op.taken = append(op.taken, p)
		return p, nil
	}
	p, err := op.a.next(op.ctx, op.ns, op.name)
	if err != nil {
		return 0, apierrors.NewInternalError(fmt.Errorf("failed to allocate a nodePort: %w", err))
	}
	op.taken = append(op.taken, p)
	return p, nil
}

func (a *NodePorts) inRange(port int) bool { return port >= a.Base && port < a.Base+a.Size }

// next reserves a free port: as upstream, first from the upper part of
// the range, so that the lower part stays for ports clients ask for.
func (a *NodePorts) next(ctx context.Context, ns, name string) (int, error) {
	n := uint64(a.Size)
	i, err := searchFree(ctx, n, min(max(16, n/32), 128), func(i uint64, reclaim bool) error {
		return a.reserve(ctx, a.Base+int(i), ns, name, reclaim)
	})
	return a.Base + int(i), err
}

func (a *NodePorts) key(port int) string { return a.Prefix + strconv.Itoa(port) }

// reserve creates port's record for namespace/name; ErrExists when another
// Service holds it. With reclaim, a stale record is taken over (a
// compare-and-swap on its revision, so two replicas cannot both take it).
func (a *NodePorts) reserve(ctx context.Context, port int, ns, name string, reclaim bool) error {
	data, err := json.Marshal(nodePortRecord{Namespace: ns, Name: name, Created: a.now().UTC()})
	if err != nil {
		return err
	}
	return takeRecord(ctx, a.Storage, a.key(port), data, reclaim, func(value []byte) bool {
		var cur nodePortRecord
		return json.Unmarshal(value, &cur) == nil && a.stale(ctx, &cur, port, ns, name)
	})
}

// held reports whether another Service than namespace/name holds port.
func (a *NodePorts) held(ctx context.Context, port int, ns, name string) (bool, error) {
	kv, err := a.Storage.Get(ctx, a.key(port))
	if errors.Is(err, storage.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var cur nodePortRecord
	return json.Unmarshal(kv.Value, &cur) != nil || !a.stale(ctx, &cur, port, ns, name), nil
}

// stale reports whether rec's Service no longer holds port. A record of
// the asking Service itself whose stored Service lacks the port is stale
// at once (a retried write); another's only after the grace period, since
// its write may still be on its way to storage.
func (a *NodePorts) stale(ctx context.Context, rec *nodePortRecord, port int, ns, name string) bool {
	own := rec.Namespace == ns && rec.Name == name
	if !own && a.now().Sub(rec.Created) < a.grace() {
		return false
	}
	return !a.holds(ctx, rec.Namespace, rec.Name, port)
}

// holds reports whether the stored Service namespace/name has port (true
// when that cannot be read: a port is never freed on a guess).
func (a *NodePorts) holds(ctx context.Context, ns, name string, port int) bool {
	kv, err := a.Storage.Get(ctx, a.ServicePrefix+ns+"/"+name)
	if errors.Is(err, storage.ErrNotFound) {
		return false
	}
	if err != nil {
		return true
	}
	var svc map[string]any
	if json.Unmarshal(kv.Value, &svc) != nil {
		return true
	}
	return slices.Contains(heldPorts(svc), port)
}

// Release frees port if its record names namespace/name and that Service
// is not stored with it (a compare-and-swap delete, so a record another
// Service took meanwhile stays).
func (a *NodePorts) Release(ctx context.Context, port int, ns, name string) {
	key := a.key(port)
	kv, err := a.Storage.Get(ctx, key)
	if err != nil {
		return
	}
	var rec nodePortRecord
	if json.Unmarshal(kv.Value, &rec) != nil || rec.Namespace != ns || rec.Name != name {
		return
	}
	if a.holds(ctx, ns, name, port) {
		return
	}
	_, _, _ = a.Storage.Delete(ctx, key, kv.ModRevision) // a stale record is reclaimed later
}

// needsNodePortType: NodePort and LoadBalancer Services may have node
// ports.
func needsNodePortType(spec map[string]any) bool {
	return spec["type"] == string(corev1.ServiceTypeNodePort) || spec["type"] == string(corev1.ServiceTypeLoadBalancer)
}

// allocatesNodePorts: a NodePort Service gets node ports, and so does a
// LoadBalancer unless allocateLoadBalancerNodePorts is false.
func allocatesNodePorts(spec map[string]any) bool {
	switch spec["type"] {
	case string(corev1.ServiceTypeNodePort):
		return true
	case string(corev1.ServiceTypeLoadBalancer):
		return spec["allocateLoadBalancerNodePorts"] != false
	}
	return false
}

// needsHealthCheck: a LoadBalancer routing only to local endpoints.
func needsHealthCheck(spec map[string]any) bool {
	return spec["type"] == string(corev1.ServiceTypeLoadBalancer) &&
		spec["externalTrafficPolicy"] == string(corev1.ServiceExternalTrafficPolicyLocal)
}

func servicePorts(spec map[string]any) []map[string]any {
	list, _ := spec["ports"].([]any)
	var out []map[string]any
	for _, p := range list {
		if pm, ok := p.(map[string]any); ok {
			out = append(out, pm)
		}
	}
	return out
}

// nodePortsOf lists the node ports spec's ports have.
func nodePortsOf(spec map[string]any) []int {
	var out []int
	for _, pm := range servicePorts(spec) {
		if p := intOf(pm["nodePort"]); p != 0 {
			out = append(out, p)
		}
	}
	return out
}

// requestedNodePort is the node port a port of number asks for, if any.
func requestedNodePort(number int, ports []map[string]any) int {
	for _, pm := range ports {
		if intOf(pm["port"]) == number {
			if np := intOf(pm["nodePort"]); np != 0 {
				return np
			}
		}
	}
	return 0
}

// patchNodePorts keeps, on an update between types with node ports, the
// node ports old's ports had for the ports of svc that leave them out
// (matched by name, unless that node port is in use by another port), and
// the health check node port; on an update to a type without them that
// changes none, it drops them, as upstream's strategy does.
func patchNodePorts(spec, oldSpec map[string]any) {
	if allocatesNodePorts(oldSpec) && allocatesNodePorts(spec) {
		oldPorts, newPorts := nodePortsOf(oldSpec), nodePortsOf(spec)
		byName := map[string]int{}
		for _, pm := range servicePorts(oldSpec) {
			n, _ := pm["name"].(string)
			byName[n] = intOf(pm["nodePort"])
		}
		for _, pm := range servicePorts(spec) {
			if intOf(pm["nodePort"]) != 0 {
				continue
			}
			n, _ := pm["name"].(string)
			p := byName[n]
			if p != 0 && !(slices.Contains(oldPorts, p) && slices.Contains(newPorts, p)) {
				pm["nodePort"] = int64(p)
			}
		}
	}
	if needsHealthCheck(oldSpec) && needsHealthCheck(spec) && intOf(spec["healthCheckNodePort"]) == 0 {
		if v, ok := oldSpec["healthCheckNodePort"]; ok {
			spec["healthCheckNodePort"] = v
		}
	}
	if needsNodePortType(oldSpec) && !needsNodePortType(spec) {
		oldPorts := nodePortsOf(oldSpec)
		same := true
		for _, p := range nodePortsOf(spec) {
			same = same && slices.Contains(oldPorts, p)
		}
		if same {
			for _, pm := range servicePorts(spec) {
				delete(pm, "nodePort")
			}
		}
	}
	if needsHealthCheck(oldSpec) && !needsHealthCheck(spec) && intOf(spec["healthCheckNodePort"]) == intOf(oldSpec["healthCheckNodePort"]) {
		delete(spec, "healthCheckNodePort")
	}
}

// intOf reads a JSON number however it was decoded.
func intOf(v any) int {
	switch n := v.(type) {
	case int64:
		return int(n)
	case float64:
		return int(n)
	case int:
		return n
	case int32:
		return int(n)
	case json.Number:
		i, _ := n.Int64()
		return int(i)
	}
	return 0
}

// NodePortRecord is one port's record, as the repair loop reads it.
type NodePortRecord struct {
	Port            int
	Namespace, Name string // the Service it names
	Created         time.Time
	Revision        int64 // its mod revision, the precondition of writes
}

// Records lists every port's record, in port order as stored. A record
// that cannot be read names no Service, so the repair loop sees it as
// leaked and frees it in time.
func (a *NodePorts) Records(ctx context.Context) ([]NodePortRecord, error) {
	var out []NodePortRecord
	opts := storage.ListOptions{Limit: 1000}
	for {
		res, err := a.Storage.List(ctx, a.Prefix, opts)
		if err != nil {
			return nil, fmt.Errorf("listing node port records: %w", err)
		}
		for _, kv := range res.Items {
			port, err := strconv.Atoi(strings.TrimPrefix(kv.Key, a.Prefix))
			if err != nil {
				continue // not a port's key
			}
			var rec nodePortRecord
			_ = json.Unmarshal(kv.Value, &rec)
			out = append(out, NodePortRecord{Port: port, Namespace: rec.Namespace, Name: rec.Name, Created: rec.Created, Revision: kv.ModRevision})
		}
		if !res.More || len(res.Items) == 0 {
			return out, nil
		}
		opts.Revision = res.Revision
		opts.StartKey = res.Items[len(res.Items)-1].Key + "\x00"
	}
}

// Mark records port as the Service namespace/name's: created when rev is
// 0 (storage.ErrExists when a record exists), else replacing the record at
// revision rev (storage.ErrConflict when it changed since).
func (a *NodePorts) Mark(ctx context.Context, port int, ns, name string, rev int64) error {
	data, err := json.Marshal(nodePortRecord{Namespace: ns, Name: name, Created: a.now().UTC()})
	if err != nil {
		return err
	}
	if rev == 0 {
		_, err = a.Storage.Create(ctx, a.key(port), data)
	} else {
		_, err = a.Storage.Update(ctx, a.key(port), data, rev)
	}
	return err
}

// Free deletes port's record if it is still at revision rev.
func (a *NodePorts) Free(ctx context.Context, port int, rev int64) error {
	_, _, err := a.Storage.Delete(ctx, a.key(port), rev)
	return err
}
