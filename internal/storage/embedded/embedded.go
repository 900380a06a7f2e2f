// Package embedded runs an etcd member inside the crdserver process,
// listening on loopback only, for the default storage and for tests: a
// single member, or (with Config.InitialCluster) one member of a cluster
// whose other members run in other processes, as test/cluster starts them.
package embedded

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3rpc"
	"go.etcd.io/etcd/server/v3/proxy/grpcproxy/adapter"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/crdserver/crdserver/internal/storage/etcdlog"
)

// Config configures an embedded etcd. Only Dir is required.
type Config struct {
	// Dir holds the data (WAL, snapshots, bbolt database). It is created if
	// missing; an existing one is reopened with its data.
	Dir string
	// ClientAddr is the host:port clients connect to (default
	// "127.0.0.1:0": a free port, see Server.Endpoints). It must be an IP
	// address or localhost.
	ClientAddr string
	// QuotaBackendBytes caps the database size (default 8 GiB); writes
	// fail once it is reached until space is reclaimed.
	QuotaBackendBytes int64
	// WatchProgressNotifyInterval is how often idle watches receive a
	// progress notification (default 5s).
	WatchProgressNotifyInterval time.Duration
	// Logger receives etcd's errors (default slog.Default()). Lower levels
	// are dropped: etcd narrates its routine operation at info and warn.
	Logger *slog.Logger

	// Name names the member (default "crdserver"). In a cluster every
	// member needs its own.
	Name string
	// PeerAddr is the host:port other members reach this one at. It
	// must be a fixed port in a cluster; a single member defaults to
	// "127.0.0.1:0", which it never dials.
	PeerAddr string
	// InitialCluster lists every member of a new cluster as
	// "name=http://host:port,..." (etcd's --initial-cluster), this one
	// included. Empty: a single-member cluster. It is read only when Dir
	// holds no data yet; a restarted member rejoins from its own data.
	InitialCluster string
	// TickMs and ElectionMs are etcd's heartbeat interval and election
	// timeout. A single member defaults to 10 and 50 (it elects itself,
	// there is no network to be patient with); a cluster to 100 and 1000,
	// etcd's own defaults, since its members share a loaded machine.
	TickMs, ElectionMs uint
}

// Server is a running embedded etcd.
type Server struct {
	etcd      *embed.Etcd
	level     zap.AtomicLevel
	endpoints []string
	closeOnce sync.Once
}

// DefaultQuotaBackendBytes is the default database size limit.
const DefaultQuotaBackendBytes = 8 << 30

// Start starts etcd and returns once it serves requests (it has elected
// itself leader and applied its own membership), or fails when ctx ends
// first.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	// Shutting down, etcd reports every listener it closes as an error;
	// Close silences it by raising the level.
	level := zap.NewAtomicLevelAt(zapcore.ErrorLevel)
	ecfg, err := etcdConfig(cfg, level)
	if err != nil {
		return nil, err
	}
	e, err := embed.StartEtcd(ecfg)
	if err != nil {
		return nil, fmt.Errorf("embedded etcd in %s: %w", cfg.Dir, err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		level.SetLevel(zapcore.FatalLevel)
		e.Close()
		return nil, fmt.Errorf("embedded etcd in %s: %w", cfg.Dir, err)
	case <-ctx.Done():
		level.SetLevel(zapcore.FatalLevel)
		e.Close()
		return nil, fmt.Errorf("embedded etcd in %s: not ready: %w", cfg.Dir, ctx.Err())
	}
	s := &Server{etcd: e, level: level}
	for _, l := range e.Clients {
		s.endpoints = append(s.endpoints, "http://"+l.Addr().String())
	}
	if len(s.endpoints) == 0 {
		e.Close()
		return nil, errors.New("embedded etcd: no client listener")
	}
	return s, nil
}

// etcdConfig translates cfg. level filters etcd's logs.
func etcdConfig(cfg Config, level zapcore.LevelEnabler) (*embed.Config, error) {
	if cfg.Dir == "" {
		return nil, errors.New("embedded etcd: no data directory")
	}
	if cfg.ClientAddr == "" {
		cfg.ClientAddr = "127.0.0.1:0"
	}
	if _, _, err := net.SplitHostPort(cfg.ClientAddr); err != nil {
		return nil, fmt.Errorf("embedded etcd: client address: %w", err)
	}
	if cfg.QuotaBackendBytes <= 0 {
		cfg.QuotaBackendBytes = DefaultQuotaBackendBytes
	}
	if cfg.WatchProgressNotifyInterval <= 0 {
		cfg.WatchProgressNotifyInterval = 5 * time.Second
	}

	ec := embed.NewConfig()
	ec.Name = cmp.Or(cfg.Name, "crdserver")
	ec.Dir = cfg.Dir
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(etcdlog.New(cfg.Logger, level,
		// On a fresh data dir the storage version monitor runs before the
		// first backend commit has stored the raft term; it retries a few
		// seconds later and succeeds.
		"failed to update storage version"))

	client := url.URL{Scheme: "http", Host: cfg.ClientAddr}
	ec.ListenClientUrls = []url.URL{client}
	ec.AdvertiseClientUrls = []url.URL{client}
	// A single member never dials its peer URL, but etcd needs one to
	// name the member. Port 0 takes any free port and keeps the member's
	// identity (derived from the advertised URL) the same across restarts.
	peer := url.URL{Scheme: "http", Host: cmp.Or(cfg.PeerAddr, "127.0.0.1:0")}
	ec.ListenPeerUrls = []url.URL{peer}
	ec.AdvertisePeerUrls = []url.URL{peer}
	if cfg.InitialCluster == "" {
		ec.InitialCluster = ec.InitialClusterFromName(ec.Name)
		// A single member elects itself after one election timeout; with
		// a short tick that is a few tens of milliseconds instead of a
		// second.
		ec.TickMs, ec.ElectionMs = 10, 50
		// etcd keeps the newest raft log entries in memory for slow
		// followers to catch up from (default 5,000, each a whole
		// object). A lone member has no followers.
		ec.SnapshotCatchUpEntries = 100
	} else {
		if cfg.PeerAddr == "" {
			return nil, errors.New("embedded etcd: a cluster member needs a peer address")
		}
		ec.InitialCluster = cfg.InitialCluster
		ec.InitialClusterToken = "crdserver"
		ec.TickMs, ec.ElectionMs = 100, 1000
	}
	if cfg.TickMs > 0 {
		ec.TickMs = cfg.TickMs
	}
	if cfg.ElectionMs > 0 {
		ec.ElectionMs = cfg.ElectionMs
	}

	ec.QuotaBackendBytes = cfg.QuotaBackendBytes
	ec.WatchProgressNotifyInterval = cfg.WatchProgressNotifyInterval
	// Compaction is crdserver's job (etcd.Backend.RunCompactor), done the
	// same way for embedded and external etcd.
	ec.AutoCompactionRetention = "0"
	// No HTTP/JSON gateway, no metrics endpoint: crdserver talks gRPC only.
	ec.EnableGRPCGateway = false
	// Acknowledged writes must survive a crash: keep fsync (the default).
	ec.UnsafeNoFsync = false
	return ec, nil
}

// Endpoints returns the client URLs, e.g. "http://127.0.0.1:41234".
func (s *Server) Endpoints() []string { return append([]string(nil), s.endpoints...) }

// KV returns a KV client that calls this server directly instead of
// through gRPC on its client port (clientv3.NewKVFromKVClient makes a
// clientv3.KV of it).
func (s *Server) KV() pb.KVClient {
	return adapter.KvServerToKvClient(v3rpc.NewQuotaKVServer(s.etcd.Server))
}

// Revision returns the store's current revision without a round trip.
// It is meant for a single member (Config.InitialCluster empty), which is
// alone in its cluster and answers a write only once it has
// applied it, so this revision covers every write acknowledged to any
// client: it is as consistent as a quorum read. It takes the store's read
// locks, so like a read it may wait out a backend commit.
func (s *Server) Revision() int64 { return s.etcd.Server.KV().Rev() }

// Close stops etcd and waits until its files are closed. It is safe to call
// more than once.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.level.SetLevel(zapcore.FatalLevel)
		s.etcd.Close()
	})
	return nil
}
