// Package etcd implements storage.Interface over an etcd v3 cluster, using
// the minimal client etcd maintains for Kubernetes
// (go.etcd.io/etcd/client/v3/kubernetes) for reads and compare-and-swap
// writes, and the plain client for deletes, watches and maintenance.
package etcd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unsafe"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/kubernetes"
	"go.uber.org/zap/zapcore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/crdserver/crdserver/internal/storage"
	"github.com/crdserver/crdserver/internal/storage/etcdlog"
)

// Config says how to reach etcd. The zero value of every field except
// Endpoints is usable.
type Config struct {
	// Endpoints are client URLs such as "http://127.0.0.1:2379" or
	// "https://etcd-0:2379".
	Endpoints []string
	// CAFile verifies the servers' certificates; CertFile and KeyFile are
	// the client certificate. Setting any of them switches to TLS.
	CAFile, CertFile, KeyFile string
	// DialTimeout bounds connecting and the version check in New
	// (default 10s).
	DialTimeout time.Duration
	// Logger receives the client library's errors and the compactor's
	// messages (default slog.Default()).
	Logger *slog.Logger
	// LocalRevision, when set, reads the current revision in-process: it
	// must be as consistent as a quorum read, which holds for a
	// single-member etcd in this process (embedded.Server.Revision).
	// CurrentRevision then costs no round trip.
	LocalRevision func() int64
	// KV, when set, serves reads and writes instead of the connection:
	// the embedded etcd's in-process KV (embedded.Server.KV) saves gRPC's
	// encoding and framing on both sides. Watches still use the
	// connection: etcd's in-process watch stream has no buffer between
	// client and server, and a burst of watch cancels can deadlock it
	// (etcd-io/etcd#18879).
	KV pb.KVClient
}

// Backend is a storage.Interface backed by etcd. Create it with New.
type Backend struct {
	client *kubernetes.Client
	log    *slog.Logger

	// watches is the parent context of every watch.
	watches watchParent

	localRev func() int64 // Config.LocalRevision

	// kv is Config.KV: creates and updates send it their transaction
	// themselves (see putAt).
	kv pb.KVClient

	leases *leases // for keys written with a TTL

	// stopGate ends the reachability gate's probes (external etcd only);
	// gateDone is closed once they have; members are the probes.
	stopGate context.CancelFunc
	gateDone chan struct{}
	members  *members
}

var (
	_ storage.Interface       = (*Backend)(nil)
	_ storage.LocalRevisioner = (*Backend)(nil)
	_ storage.WatchRestarter  = (*Backend)(nil)
)

// probeKey is read (count only, never written) to learn the current
// revision with a cheap linearizable request.
const probeKey = "/crdserver/revision-probe"

// New connects to etcd and checks that every endpoint that answers runs a
// version crdserver supports. It fails with storage.ErrUnavailable when no
// endpoint answers within cfg.DialTimeout.
func New(ctx context.Context, cfg Config) (*Backend, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("etcd: no endpoints configured")
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 10 * time.Second
	}
	lg := cfg.Logger
	if lg == nil {
		lg = slog.Default()
	}
	ccfg := clientv3.Config{
		Endpoints:   cfg.Endpoints,
		DialTimeout: cfg.DialTimeout,
		Logger:      etcdlog.New(lg, zapcore.ErrorLevel),
		// Detect a dead connection well before the request timeouts
		// callers use. A member that stops answering is taken out of
		// the endpoints by the member probes within seconds (see
		// members); keepalive is the backstop for a connection that
		// dies while its member still answers the probes' own, so it
		// may be slower, but not kube-apiserver's 30s+10s: etcd accepts
		// pings every 5s (--grpc-keepalive-min-time).
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 5 * time.Second,
	}
	if cfg.CAFile != "" || cfg.CertFile != "" || cfg.KeyFile != "" {
		tlsInfo := transport.TLSInfo{TrustedCAFile: cfg.CAFile, CertFile: cfg.CertFile, KeyFile: cfg.KeyFile}
		tc, err := tlsInfo.ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("etcd: loading TLS files: %w", err)
		}
		ccfg.TLS = tc
	}
	client, err := kubernetes.New(ccfg)
	if err != nil {
		return nil, fmt.Errorf("etcd: connecting to %s: %w: %w", strings.Join(cfg.Endpoints, ","), storage.ErrUnavailable, err)
	}
	vctx, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
	defer cancel()
	if err := checkVersions(vctx, client.Maintenance, cfg.Endpoints); err != nil {
		client.Close()
		return nil, err
	}
	b := &Backend{client: client, log: lg, localRev: cfg.LocalRevision, leases: newLeases(client.Client)}
	b.watches.restart()
	if cfg.KV != nil {
		client.KV = clientv3.NewKVFromKVClient(cfg.KV, nil)
		b.kv = cfg.KV
	} else {
		// An external etcd can become unreachable; requests then fail
		// within seconds instead of at their deadline (see gate).
		raw, g := client.KV, newGate(lg)
		client.KV = gatedKV{KV: raw, gate: g}
		ms, err := newMembers(lg, client.Client, ccfg, b.watches.restart)
		if err != nil {
			client.Close()
			return nil, fmt.Errorf("etcd: connecting to %s: %w: %w", strings.Join(cfg.Endpoints, ","), storage.ErrUnavailable, err)
		}
		gctx, stopGate := context.WithCancel(context.Background())
		b.stopGate, b.members = stopGate, ms
		b.gateDone = make(chan struct{})
		go func() {
			defer close(b.gateDone)
			// The gate's probe is the members': etcd is reachable when
			// some member serves a linearizable read.
			g.run(gctx, ms.probe)
		}()
	}
	return b, nil
}

// Close ends every watch and closes the connections.
func (b *Backend) Close() error {
	// The probes first: they restart watches.
	if b.stopGate != nil {
		b.stopGate()
		<-b.gateDone
		b.members.close()
	}
	b.watches.stop()
	return b.client.Close()
}

// Get implements storage.Interface.
func (b *Backend) Get(ctx context.Context, key string) (storage.KeyValue, error) {
	resp, err := b.client.Kubernetes.Get(ctx, key, kubernetes.GetOptions{})
	if err != nil {
		return storage.KeyValue{}, mapErr(ctx, "get", key, err)
	}
	if resp.KV == nil {
		return storage.KeyValue{}, fmt.Errorf("get %q: %w", key, storage.ErrNotFound)
	}
	return toKeyValue(resp.KV), nil
}

// List implements storage.Interface. Paging with the same Revision on every
// page yields a consistent snapshot, as long as it is not compacted.
func (b *Backend) List(ctx context.Context, prefix string, opts storage.ListOptions) (storage.ListResult, error) {
	if opts.StartKey != "" && !strings.HasPrefix(opts.StartKey, prefix) {
		return storage.ListResult{}, fmt.Errorf("list %q: start key %q is outside the prefix", prefix, opts.StartKey)
	}
	resp, err := b.client.Kubernetes.List(ctx, prefix, kubernetes.ListOptions{
		Revision: opts.Revision,
		Limit:    opts.Limit,
		Continue: opts.StartKey,
	})
	if err != nil {
		return storage.ListResult{}, mapErr(ctx, "list", prefix, err)
	}
	res := storage.ListResult{Items: make([]storage.KeyValue, len(resp.Kvs)), Revision: resp.Revision}
	// The response header carries the store's current revision, not the
	// one a historical read was served at.
	if opts.Revision > 0 {
		res.Revision = opts.Revision
	}
	for i, kv := range resp.Kvs {
		res.Items[i] = toKeyValue(kv)
	}
	// Count covers the whole range from the start key, ignoring Limit.
	if rest := resp.Count - int64(len(resp.Kvs)); rest > 0 {
		res.More, res.Remaining = true, rest
	}
	return res, nil
}

// Count implements storage.Interface.
func (b *Backend) Count(ctx context.Context, prefix string) (int64, error) {
	n, err := b.client.Kubernetes.Count(ctx, prefix, kubernetes.CountOptions{})
	if err != nil {
		return 0, mapErr(ctx, "count", prefix, err)
	}
	return n, nil
}

// Create implements storage.Interface.
func (b *Backend) Create(ctx context.Context, key string, value []byte) (int64, error) {
	return b.create(ctx, key, value, clientv3.NoLease)
}

// create is Create of a key attached to lease (NoLease: none).
func (b *Backend) create(ctx context.Context, key string, value []byte, lease clientv3.LeaseID) (int64, error) {
	// Expecting mod revision 0 means expecting the key to be absent.
	resp, err := b.putAt(ctx, key, value, 0, lease, false)
	if err != nil {
		if rev, ok := b.settle(ctx, key, value, 0, err); ok {
			return rev, nil
		}
		return 0, mapErr(ctx, "create", key, err)
	}
	if !resp.Succeeded {
		return 0, fmt.Errorf("create %q: %w", key, storage.ErrExists)
	}
	return resp.Header.Revision, nil
}

// Update implements storage.Interface.
func (b *Backend) Update(ctx context.Context, key string, value []byte, expectedRev int64) (int64, error) {
	return b.update(ctx, key, value, expectedRev, clientv3.NoLease)
}

// update is Update of a key attached to lease (NoLease: none, which
// detaches the key from any lease it had).
func (b *Backend) update(ctx context.Context, key string, value []byte, expectedRev int64, lease clientv3.LeaseID) (int64, error) {
	if expectedRev <= 0 {
		// A compare on mod revision 0 would succeed for an absent key and
		// create it; an update never creates.
		if _, err := b.Get(ctx, key); err != nil {
			return 0, fmt.Errorf("update: %w", err)
		}
		return 0, fmt.Errorf("update %q at revision %d: %w", key, expectedRev, storage.ErrConflict)
	}
	resp, err := b.putAt(ctx, key, value, expectedRev, lease, true)
	if err != nil {
		if rev, ok := b.settle(ctx, key, value, expectedRev, err); ok {
			return rev, nil
		}
		return 0, mapErr(ctx, "update", key, err)
	}
	if !resp.Succeeded {
		kvs := resp.Responses[0].GetResponseRange().GetKvs()
		if len(kvs) == 0 {
			return 0, fmt.Errorf("update %q: %w", key, storage.ErrNotFound)
		}
		return 0, fmt.Errorf("update %q at revision %d (now %d): %w", key, expectedRev, kvs[0].ModRevision, storage.ErrConflict)
	}
	return resp.Header.Revision, nil
}

// putAt writes value to key if the key's mod revision is expectedRev (0:
// the key is absent), and otherwise, when readOnFailure, reads the key
// (the first response). It is etcd's kubernetes.Client.OptimisticPut
// without its copy of the value into a string. The client's request
// copies value again (OpPut takes a string); in-process (Config.KV),
// putRequest's holds value itself, which etcd only reads while Txn runs:
// it proposes the request encoded, and applies the decoded copy. Every
// write of an object saves a copy of all of it.
func (b *Backend) putAt(ctx context.Context, key string, value []byte, expectedRev int64, lease clientv3.LeaseID, readOnFailure bool) (*clientv3.TxnResponse, error) {
	if b.kv != nil {
		// What the client's txn.Commit does with the request it builds.
		resp, err := b.kv.Txn(ctx, putRequest(key, value, expectedRev, lease, readOnFailure))
		if err != nil {
			return nil, clientv3.ContextError(ctx, err)
		}
		return (*clientv3.TxnResponse)(resp), nil
	}
	txn := b.client.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(key), "=", expectedRev)).
		Then(clientv3.OpPut(key, unsafe.String(unsafe.SliceData(value), len(value)), clientv3.WithLease(lease)))
	if readOnFailure {
		txn = txn.Else(clientv3.OpGet(key))
	}
	return txn.Commit()
}

// putRequest is the transaction putAt's client builds, holding value
// rather than a copy of it: if key's mod revision is expectedRev, put
// value (attached to lease), else, when readOnFailure, get key.
func putRequest(key string, value []byte, expectedRev int64, lease clientv3.LeaseID, readOnFailure bool) *pb.TxnRequest {
	k := []byte(key) // only read, by every part
	req := &pb.TxnRequest{
		Compare: []*pb.Compare{{
			Key: k, Target: pb.Compare_MOD, Result: pb.Compare_EQUAL,
			TargetUnion: &pb.Compare_ModRevision{ModRevision: expectedRev},
		}},
		Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: k, Value: value, Lease: int64(lease)}}}},
	}
	if readOnFailure {
		req.Failure = []*pb.RequestOp{{Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{Key: k}}}}
	}
	return req
}

// settleTimeout bounds settle's reads.
const settleTimeout = 5 * time.Second

// settle tells whether a put that failed with err happened after all. A
// connection lost after etcd committed the put (the member that took it
// was killed, say) leaves the outcome unknown, and answering "unavailable"
// invites the client to repeat it: the repeat then fails its precondition
// and reports a conflict for a write that happened. So after such a
// failure settle reads the key (a linearizable read, through any member):
// if it holds exactly value, written after revision after, the put
// happened and its revision is returned. Values crdserver writes carry a
// uid and a managedFields time, so another writer's identical bytes are
// not a practical worry; if they were, the state is what the caller asked
// for. A put still in flight may land after the read: the caller then
// hears "unavailable", which was true of the answer it could get.
func (b *Backend) settle(ctx context.Context, key string, value []byte, after int64, err error) (int64, bool) {
	if !unavailable(err) || errors.Is(err, errUnreachable) || ctx.Err() != nil {
		return 0, false // not sent, or not ambiguous, or nobody to tell
	}
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	for {
		resp, err := b.client.KV.Get(ctx, key)
		if err == nil {
			if len(resp.Kvs) == 1 && resp.Kvs[0].ModRevision > after && bytes.Equal(resp.Kvs[0].Value, value) {
				b.log.Warn("etcd: a put whose answer was lost happened", "key", key, "revision", resp.Kvs[0].ModRevision)
				return resp.Kvs[0].ModRevision, true
			}
			return 0, false
		}
		select {
		case <-ctx.Done():
			return 0, false
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Delete implements storage.Interface. It is one transaction: the compare,
// the delete returning the previous value, and on failure a read telling
// "gone" from "changed".
func (b *Backend) Delete(ctx context.Context, key string, expectedRev int64) (storage.KeyValue, int64, error) {
	cmp := clientv3.Compare(clientv3.ModRevision(key), "=", expectedRev)
	if expectedRev <= 0 {
		cmp = clientv3.Compare(clientv3.CreateRevision(key), ">", 0)
	}
	resp, err := b.client.Txn(ctx).If(cmp).
		Then(clientv3.OpDelete(key, clientv3.WithPrevKV())).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return storage.KeyValue{}, 0, mapErr(ctx, "delete", key, err)
	}
	if !resp.Succeeded {
		kvs := resp.Responses[0].GetResponseRange().GetKvs()
		if len(kvs) == 0 {
			return storage.KeyValue{}, 0, fmt.Errorf("delete %q: %w", key, storage.ErrNotFound)
		}
		return storage.KeyValue{}, 0, fmt.Errorf("delete %q at revision %d (now %d): %w", key, expectedRev, kvs[0].ModRevision, storage.ErrConflict)
	}
	prev := resp.Responses[0].GetResponseDeleteRange().GetPrevKvs()
	if len(prev) != 1 {
		return storage.KeyValue{}, 0, fmt.Errorf("delete %q: etcd returned %d previous values", key, len(prev))
	}
	return toKeyValue(prev[0]), resp.Header.Revision, nil
}

// CurrentRevision implements storage.Interface with a linearizable
// count-only read of a key that never exists, or in-process when
// Config.LocalRevision is set.
func (b *Backend) CurrentRevision(ctx context.Context) (int64, error) {
	if rev, ok := b.LocalRevision(); ok {
		return rev, nil
	}
	return b.quorumRevision(ctx)
}

// LocalRevision implements storage.LocalRevisioner.
func (b *Backend) LocalRevision() (int64, bool) {
	if b.localRev == nil {
		return 0, false
	}
	return b.localRev(), true
}

// quorumRevision reads the current revision through etcd's client API.
func (b *Backend) quorumRevision(ctx context.Context) (int64, error) {
	resp, err := b.client.KV.Get(ctx, probeKey, clientv3.WithCountOnly())
	if err != nil {
		return 0, mapErr(ctx, "read revision", probeKey, err)
	}
	return resp.Header.Revision, nil
}

// Healthy reports whether etcd serves a linearizable read, which needs a
// leader and a quorum. Without a deadline on ctx it waits at most 2s.
func (b *Backend) Healthy(ctx context.Context) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
	}
	// A local revision is known even when etcd cannot serve a read.
	_, err := b.quorumRevision(ctx)
	return err
}

// Compact discards the history before rev. Reads and watches at older
// revisions fail with storage.ErrCompacted afterwards. Compacting to a
// revision at or below the current compaction is not an error.
func (b *Backend) Compact(ctx context.Context, rev int64) error {
	_, err := b.client.Compact(ctx, rev)
	if err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
		return mapErr(ctx, "compact", fmt.Sprint(rev), err)
	}
	return nil
}

func toKeyValue(kv *mvccpb.KeyValue) storage.KeyValue {
	return storage.KeyValue{Key: string(kv.Key), Value: kv.Value, ModRevision: kv.ModRevision}
}

// mapErr wraps a client error with the operation, translating the etcd
// errors callers branch on into storage's sentinels. Connection failures,
// lost leaders and timeouts become storage.ErrUnavailable; the original
// error stays in the chain.
func mapErr(ctx context.Context, op, key string, err error) error {
	switch {
	case errors.Is(err, rpctypes.ErrCompacted):
		return fmt.Errorf("%s %q: %w", op, key, storage.ErrCompacted)
	case errors.Is(err, rpctypes.ErrFutureRev):
		return fmt.Errorf("%s %q: %w", op, key, storage.ErrFutureRev)
	case errors.Is(ctx.Err(), context.Canceled):
		// The caller gave up; etcd is not to blame.
		return fmt.Errorf("%s %q: %w", op, key, ctx.Err())
	case unavailable(err):
		return fmt.Errorf("%s %q: %w: %w", op, key, storage.ErrUnavailable, err)
	}
	return fmt.Errorf("%s %q: %w", op, key, err)
}

func unavailable(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, storage.ErrUnavailable) {
		return true
	}
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		return ee.Code() == codes.Unavailable || ee.Code() == codes.DeadlineExceeded
	}
	if s, ok := status.FromError(err); ok {
		return s.Code() == codes.Unavailable || s.Code() == codes.DeadlineExceeded
	}
	return false
}
