package server

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"errors"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/ptr"

	"github.com/crdserver/crdserver/internal/builtin"
	"github.com/crdserver/crdserver/internal/storage"
)

// Upstream's identity Lease: its label, its timing.
const (
	identityLeaseLabel    = "apiserver.kubernetes.io/identity"
	identityLeaseDuration = 3600 * time.Second
	identityLeaseRenew    = 10 * time.Second
	identityLeaseGC       = time.Hour
	peerAddressAnnotation = "kubernetes.io/peer-advertise-address"
	hostnameLabel         = "kubernetes.io/hostname"
)

// identityLease keeps a Lease in kube-system that says this replica is
// serving, as each kube-apiserver keeps one (labelled
// apiserver.kubernetes.io/identity=kube-apiserver): renewed every ten
// seconds, valid for an hour. Every replica deletes the leases of any
// replica that stopped renewing an hour ago, as upstream's garbage
// collector does; the deletes are compare-and-swap, so a lease renewed
// meanwhile stays.
type identityLease struct {
	st       storage.Interface
	prefix   string // the key prefix of kube-system's leases
	name     string
	holder   string
	hostname string
	peer     string // host:port this replica serves on
	now      func() time.Time
	log      *slog.Logger
	// written, if set, is set once the lease is first written.
	written *atomic.Bool
}

func newIdentityLease(s *Server) *identityLease {
	hostname, _ := os.Hostname()
	peer := ""
	if u, err := url.Parse(s.URL); err == nil {
		peer = u.Host
	}
	name := identityLeaseName(hostname, peer)
	return &identityLease{
		st:       s.raw,
		prefix:   keyPrefix(s.cfg.EtcdPrefix, builtin.Leases().GroupResource()) + metav1.NamespaceSystem + "/",
		name:     name,
		holder:   name + "_" + string(uuid.NewUUID()),
		hostname: hostname,
		peer:     peer,
		now:      time.Now,
		log:      s.log,
		written:  &s.leaseWritten,
	}
}

// identityLeaseName is apiserver- and a hash of the host and the address
// the replica serves on: the same across restarts on that address, as
// upstream's (a hash of the host alone) is, and another for each replica
// of one host.
func identityLeaseName(hostname, addr string) string {
	hash := sha256.Sum256([]byte(hostname + "\x00kube-apiserver\x00" + addr))
	return "apiserver-" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(hash[:16]))
}

// run renews the lease until ctx ends, and collects expired ones.
func (l *identityLease) run(ctx context.Context) {
	renew := time.NewTicker(identityLeaseRenew)
	defer renew.Stop()
	gc := time.NewTicker(identityLeaseGC)
	defer gc.Stop()
	l.collect(ctx)
	for {
		if err := l.renew(ctx); err != nil && ctx.Err() == nil {
			l.log.Warn("renewing the identity lease", "lease", l.name, "err", err)
		} else if err == nil && l.written != nil {
			l.written.Store(true)
		}
		select {
		case <-ctx.Done():
			return
		case <-renew.C:
		case <-gc.C:
			l.collect(ctx)
		}
	}
}

// renew creates the lease, or takes it and moves its renewTime on.
func (l *identityLease) renew(ctx context.Context) error {
	now := metav1.NewMicroTime(l.now())
	return writeReconciled(ctx, l.st, l.prefix+l.name, coordinationv1.SchemeGroupVersion.WithKind("Lease"), func(have *coordinationv1.Lease) (*coordinationv1.Lease, bool) {
		lease := have
		if lease == nil {
			lease = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: l.name}}
		}
		if lease.Labels == nil {
			lease.Labels = map[string]string{}
		}
		lease.Labels[identityLeaseLabel] = "kube-apiserver"
		lease.Labels[hostnameLabel] = l.hostname
		if l.peer != "" {
			if lease.Annotations == nil {
				lease.Annotations = map[string]string{}
			}
			lease.Annotations[peerAddressAnnotation] = l.peer
		}
		lease.Spec.HolderIdentity = ptr.To(l.holder)
		lease.Spec.LeaseDurationSeconds = ptr.To(int32(identityLeaseDuration / time.Second))
		lease.Spec.RenewTime = &now
		// The server's update moves its managedFields entry's time, as
		// upstream's field manager moves it for every write that changes
		// what the manager owns (the renew time, each time).
		written := metav1.NewTime(l.now().UTC().Truncate(time.Second))
		for i := range lease.ManagedFields {
			if f := &lease.ManagedFields[i]; f.Manager == kubeAPIServer && f.Operation == metav1.ManagedFieldsOperationUpdate {
				f.Time = &written
			}
		}
		return lease, true
	})
}

// collect deletes the identity leases that expired.
func (l *identityLease) collect(ctx context.Context) {
	kvs, err := l.st.List(ctx, l.prefix, storage.ListOptions{})
	if err != nil {
		if ctx.Err() == nil {
			l.log.Warn("listing identity leases", "err", err)
		}
		return
	}
	for _, kv := range kvs.Items {
		var lease coordinationv1.Lease
		if err := json.Unmarshal(kv.Value, &lease); err != nil || lease.Labels[identityLeaseLabel] != "kube-apiserver" || !leaseExpired(&lease, l.now()) {
			continue
		}
		if _, _, err := l.st.Delete(ctx, kv.Key, kv.ModRevision); err != nil && !errors.Is(err, storage.ErrConflict) && !errors.Is(err, storage.ErrNotFound) {
			l.log.Warn("deleting an expired identity lease", "lease", lease.Name, "err", err)
		}
	}
}

// leaseExpired reports whether lease was last renewed longer ago than its
// duration, or says neither, as upstream's collector decides.
func leaseExpired(lease *coordinationv1.Lease, now time.Time) bool {
	s := lease.Spec
	return s.RenewTime == nil || s.LeaseDurationSeconds == nil ||
		s.RenewTime.Add(time.Duration(*s.LeaseDurationSeconds)*time.Second).Before(now)
}
