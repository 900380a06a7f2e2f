package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/storage"
)

// DefaultServiceClusterIPRange is upstream's --service-cluster-ip-range
// default.
const DefaultServiceClusterIPRange = "10.0.0.0/24"

// ClusterIPs allocates Services' cluster IPs from one range, as upstream's
// allocator does since MultiCIDRServiceAllocator: every address in use is
// an IPAddress object (networking.k8s.io/v1) named by the address, whose
// parentRef names the Service. Creating that key is the allocation, so
// replicas sharing an etcd never give one address to two Services.
//
// A record outlives its Service when the Service goes by a path that
// does not release it (a namespace deletion, a crash between the two
// writes); such a record is taken over by an allocation once it is older
// than Grace and its Service is gone or holds another address, and deleted
// by the repair loop (controllers.ClusterIPRepair) as upstream's does.
// Grace covers a create whose Service is not stored yet.
type ClusterIPs struct {
	Range   netip.Prefix
	Storage storage.Interface
	// Prefix is the key prefix of the IPAddress records; ServicePrefix
	// that of the Services (a Service's key is namespace/name under it).
	Prefix, ServicePrefix string
	Reclaim
}

// Reclaim says when an allocation's record whose object no longer holds
// what it records may be taken over: once older than Grace (a minute by
// default), by Now's clock (time.Now by default).
type Reclaim struct {
	Grace time.Duration
	Now   func() time.Time
}

// ErrRangeFull is upstream's error when no address is free.
var ErrRangeFull = errors.New("range is full")

// NewClusterIPs parses cidr (upstream's default when empty).
func NewClusterIPs(cidr string, st storage.Interface, prefix, servicePrefix string) (*ClusterIPs, error) {
	if cidr == "" {
		cidr = DefaultServiceClusterIPRange
	}
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return nil, fmt.Errorf("service cluster IP range: %w", err)
	}
	if p.Bits() == p.Addr().BitLen() {
		return nil, fmt.Errorf("service cluster IP range %s holds no address", cidr)
	}
	return &ClusterIPs{Range: p.Masked(), Storage: st, Prefix: prefix, ServicePrefix: servicePrefix}, nil
}

// First is the range's first usable address, the kubernetes Service's.
func (a *ClusterIPs) First() netip.Addr { return a.Range.Addr().Next() }

// size is the number of usable addresses: the network address is never
// given (nor, in IPv4, the broadcast one); capped, as a random start in
// a huge IPv6 range needs no more.
func (a *ClusterIPs) size() uint64 {
	host := a.Range.Addr().BitLen() - a.Range.Bits()
	n := uint64(1) << min(host, 62)
	if a.Range.Addr().Is4() {
		return n - 2
	}
	return n - 1
}

// at returns the i-th usable address (0 is First).
func (a *ClusterIPs) at(i uint64) netip.Addr {
	b := a.First().As16()
	v := new(big.Int).SetBytes(b[:])
	v.Add(v, new(big.Int).SetUint64(i))
	v.FillBytes(b[:])
	addr := netip.AddrFrom16(b)
	if a.Range.Addr().Is4() {
		return addr.Unmap()
	}
	return addr
}

func (a *ClusterIPs) inRange(ip netip.Addr) bool {
	if !a.Range.Contains(ip) || ip == a.Range.Addr() {
		return false
	}
	last := a.at(a.size() - 1)
	return ip.Compare(last) <= 0
}

// AllocateService fills and reserves svc's cluster IP: the one it asks for
// or a free one. undo frees it again, for a create that then fails.
// Services without a cluster IP (ExternalName, headless) reserve nothing.
func (a *ClusterIPs) AllocateService(ctx context.Context, svc map[string]any) (undo func(), err error) {
	spec := mapField(svc, "spec")
	md := mapField(svc, "metadata")
	name, _ := md["name"].(string)
	ns, _ := md["namespace"].(string)
	if spec["type"] == string(corev1.ServiceTypeExternalName) {
		return func() {}, nil
	}
	requested, _ := spec["clusterIP"].(string)
	if requested == corev1.ClusterIPNone {
		setFamilies(spec, corev1.ClusterIPNone, a.Range.Addr())
		return func() {}, nil
	}
	var ip netip.Addr
	if requested != "" {
		ip, err = netip.ParseAddr(requested)
		if err != nil {
			return func() {}, nil // validation refuses it
		}
		if !a.inRange(ip) {
			return nil, a.invalid(name, requested, fmt.Sprintf("the provided IP (%s) is not in the valid range. The range of valid IPs is %s", requested, a.Range))
		}
		if err := a.reserve(ctx, ip, ns, name, true); err != nil {
			if errors.Is(err, storage.ErrExists) {
				return nil, a.invalid(name, requested, "provided IP is already allocated")
			}
			return nil, apierrors.NewInternalError(err)
		}
	} else if ip, err = a.next(ctx, ns, name); err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("failed to allocate a serviceIP for Service %q: %w", name, err))
	}
	setFamilies(spec, ip.String(), ip)
	return func() { a.Release(context.WithoutCancel(ctx), ip.String(), ns, name) }, nil
}

// PreviewService is AllocateService for a dry run: it fills what that
// would for an address svc asks for, and fails where that would, reserving
// nothing. A Service that asks for none gets the range's first address,
// its network's, which no Service is given: upstream's dry run does not
// look for a free one either.
func (a *ClusterIPs) PreviewService(ctx context.Context, svc map[string]any) error {
	spec := mapField(svc, "spec")
	md := mapField(svc, "metadata")
	name, _ := md["name"].(string)
	ns, _ := md["namespace"].(string)
	requested, _ := spec["clusterIP"].(string)
	switch {
	case spec["type"] == string(corev1.ServiceTypeExternalName):
		return nil
	case requested == "":
		network := a.Range.Masked().Addr()
		setFamilies(spec, network.String(), network)
		return nil
	case requested == corev1.ClusterIPNone:
		setFamilies(spec, corev1.ClusterIPNone, a.Range.Addr())
		return nil
	}
	ip, err := netip.ParseAddr(requested)
	if err != nil {
		return nil // validation refuses it
	}
	if !a.inRange(ip) {
		return a.invalid(name, requested, fmt.Sprintf("the provided IP (%s) is not in the valid range. The range of valid IPs is %s", requested, a.Range))
	}
	kv, err := a.Storage.Get(ctx, a.Prefix+ip.String())
	switch {
	case errors.Is(err, storage.ErrNotFound):
	case err != nil:
		return apierrors.NewInternalError(err)
	default:
		var cur networkingv1.IPAddress
		if json.Unmarshal(kv.Value, &cur) != nil || !a.stale(ctx, &cur, ns, name) {
			return a.invalid(name, requested, "provided IP is already allocated")
		}
	}
	setFamilies(spec, ip.String(), ip)
	return nil
}

// invalid is upstream's 422 for a requested address it cannot give.
func (a *ClusterIPs) invalid(name, ip, why string) error {
	errs := field.ErrorList{field.Invalid(field.NewPath("spec", "clusterIPs"), []string{ip}, fmt.Sprintf("failed to allocate IP %s: %s", ip, why))}
	return apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, name, errs)
}

// setFamilies fills what upstream fills beside spec.clusterIP.
func setFamilies(spec map[string]any, ip string, family netip.Addr) {
	spec["clusterIP"] = ip
	// clusterIPs a client sent are validation's to check against it.
	if spec["clusterIPs"] == nil {
		spec["clusterIPs"] = []any{ip}
	}
	fam := corev1.IPv4Protocol
	if family.Is6() {
		fam = corev1.IPv6Protocol
	}
	if spec["ipFamilies"] == nil {
		spec["ipFamilies"] = []any{string(fam)}
	}
	if spec["ipFamilyPolicy"] == nil {
		spec["ipFamilyPolicy"] = string(corev1.IPFamilyPolicySingleStack)
	}
}

// next reserves a free address. As upstream, dynamic addresses come
// first from the upper part of the range, from a random start, so that
// the lower part stays for addresses clients ask for.
func (a *ClusterIPs) next(ctx context.Context, ns, name string) (netip.Addr, error) {
	n := a.size()
	i, err := searchFree(ctx, n, min(max(16, n/16), 256), func(i uint64, reclaim bool) error {
		return a.reserve(ctx, a.at(i), ns, name, reclaim)
	})
	if err != nil {
		return netip.Addr{}, err
	}
	return a.at(i), nil
}

// searchFree reserves, through reserve, the first of n offsets of a range
// it finds free, in upstream's allocators' order: from a random start in
// the part from offset up, then in the part below; a full range is
// searched once more for stale records (reclaim). reserve answers
// storage.ErrExists for an offset taken; ErrRangeFull when all are.
func searchFree(ctx context.Context, n, offset uint64, reserve func(i uint64, reclaim bool) error) (uint64, error) {
	if offset >= n {
		offset = 0
	}
	for _, reclaim := range []bool{false, true} {
		for _, band := range [][2]uint64{{offset, n}, {0, offset}} {
			lo, hi := band[0], band[1]
			if lo >= hi {
				continue
			}
			start := lo + rand.Uint64N(hi-lo)
			for i := uint64(0); i < hi-lo; i++ {
				at := lo + (start-lo+i)%(hi-lo)
				err := reserve(at, reclaim)
				if err == nil {
					return at, nil
				}
				if !errors.Is(err, storage.ErrExists) {
					return 0, err
				}
				if err := ctx.Err(); err != nil {
					return 0, err
				}
			}
		}
	}
	return 0, ErrRangeFull
}

// reserve creates ip's record for namespace/name; ErrExists when another
// Service holds it. With reclaim, a stale record is taken over (a
// compare-and-swap on its revision, so two replicas cannot both take it).
func (a *ClusterIPs) reserve(ctx context.Context, ip netip.Addr, ns, name string, reclaim bool) error {
	data, err := json.Marshal(a.record(ip, ns, name))
	if err != nil {
		return err
	}
	return takeRecord(ctx, a.Storage, a.Prefix+ip.String(), data, reclaim, func(value []byte) bool {
		var cur networkingv1.IPAddress
		return json.Unmarshal(value, &cur) == nil && a.stale(ctx, &cur, ns, name)
	})
}

// takeRecord creates key with data; storage.ErrExists when it exists
// and, with reclaim, its value is not stale. A stale one is replaced by a
// compare-and-swap on its revision, so two replicas cannot both take it.
func takeRecord(ctx context.Context, st storage.Interface, key string, data []byte, reclaim bool, stale func(value []byte) bool) error {
	_, err := st.Create(ctx, key, data)
	if !errors.Is(err, storage.ErrExists) || !reclaim {
		return err
	}
	kv, gerr := st.Get(ctx, key)
	if gerr != nil || !stale(kv.Value) {
		return err
	}
	if _, uerr := st.Update(ctx, key, data, kv.ModRevision); uerr != nil {
		return err
	}
	return nil
}

// stale reports whether rec's Service no longer holds its address. A
// record of the asking Service itself whose Service is not stored is
// stale at once (a retried create, or replicas racing to create the
// kubernetes Service); another's only after the grace period, since its
// create may still be on its way to storage.
func (a *ClusterIPs) stale(ctx context.Context, rec *networkingv1.IPAddress, ns, name string) bool {
	ref := rec.Spec.ParentRef
	if ref == nil {
		return false
	}
	own := ref.Namespace == ns && ref.Name == name
	if !own && a.now().Sub(rec.CreationTimestamp.Time) < a.grace() {
		return false
	}
	return !a.holds(ctx, ref.Namespace, ref.Name, rec.Name)
}

// holds reports whether the stored Service namespace/name has ip (true
// when that cannot be read: an address is never freed on a guess).
func (a *ClusterIPs) holds(ctx context.Context, ns, name, ip string) bool {
	kv, err := a.Storage.Get(ctx, a.ServicePrefix+ns+"/"+name)
	if errors.Is(err, storage.ErrNotFound) {
		return false
	}
	if err != nil {
		return true
	}
	var svc corev1.Service
	return json.Unmarshal(kv.Value, &svc) != nil || svc.Spec.ClusterIP == ip
}

// ipAddressFields are the fields the allocator's write of an IPAddress
// owns.
var ipAddressFields = []byte(`{"f:metadata":{"f:labels":{".":{},"f:ipaddress.kubernetes.io/ip-family":{},"f:ipaddress.kubernetes.io/managed-by":{}}},` +
	`"f:spec":{"f:parentRef":{".":{},"f:name":{},"f:namespace":{},"f:resource":{}}}}`)

func (a *ClusterIPs) record(ip netip.Addr, ns, name string) *networkingv1.IPAddress {
	fam := corev1.IPv4Protocol
	if ip.Is6() {
		fam = corev1.IPv6Protocol
	}
	created := metav1.NewTime(a.now().UTC().Truncate(time.Second))
	return &networkingv1.IPAddress{
		TypeMeta: metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "IPAddress"},
		ObjectMeta: metav1.ObjectMeta{
			Name:              ip.String(),
			UID:               uuid.NewUUID(),
			CreationTimestamp: created,
			// As upstream's allocator writes it, through its own client.
			ManagedFields: []metav1.ManagedFieldsEntry{{
				Manager: "kube-apiserver", Operation: metav1.ManagedFieldsOperationUpdate,
				APIVersion: "networking.k8s.io/v1", Time: &created, FieldsType: "FieldsV1",
				FieldsV1: &metav1.FieldsV1{Raw: ipAddressFields},
			}},
			Labels: map[string]string{
				networkingv1.LabelIPAddressFamily: string(fam),
				networkingv1.LabelManagedBy:       "ipallocator.k8s.io",
			},
		},
		Spec: networkingv1.IPAddressSpec{ParentRef: &networkingv1.ParentReference{Resource: "services", Namespace: ns, Name: name}},
	}
}

// Release frees ip if its record names namespace/name and that Service is
// not stored with it (a compare-and-swap delete, so a record another
// Service took meanwhile stays).
func (a *ClusterIPs) Release(ctx context.Context, ip, ns, name string) {
	key := a.Prefix + ip
	kv, err := a.Storage.Get(ctx, key)
	if err != nil {
		return
	}
	var rec networkingv1.IPAddress
	if json.Unmarshal(kv.Value, &rec) != nil || rec.Spec.ParentRef == nil ||
		rec.Spec.ParentRef.Namespace != ns || rec.Spec.ParentRef.Name != name {
		return
	}
	// A failed create of a name that exists (or that a concurrent create
	// stored) must not free the stored Service's address.
	if a.holds(ctx, ns, name, ip) {
		return
	}
	_, _, _ = a.Storage.Delete(ctx, key, kv.ModRevision) // a stale record is reclaimed later
}

func (r Reclaim) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r Reclaim) grace() time.Duration {
	if r.Grace > 0 {
		return r.Grace
	}
	return time.Minute
}

// Restore creates ip's record for the Service namespace/name, as the
// repair loop does for a Service whose address has none; storage.ErrExists
// when a record of ip exists, whoever it names (a create-if-absent, so
// replicas repairing together write it once).
func (a *ClusterIPs) Restore(ctx context.Context, ip netip.Addr, ns, name string) error {
	return a.reserve(ctx, ip, ns, name, false)
}
