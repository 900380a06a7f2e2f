// Package crdtest runs a crdserver inside a Go test: an API server on a
// free port, with memory storage by default and everything else under a
// temporary directory, ready for client-go or controller-runtime in
// milliseconds with the test's CRDs Established, and stopped when the
// test ends. Servers share nothing, so each parallel test can have its own.
package crdtest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"

	"github.com/crdserver/crdserver/internal/certs"
	"github.com/crdserver/crdserver/internal/server"
)

// Server is a running in-process crdserver.
type Server struct {
	// URL is the server's https address.
	URL string
	// Kubeconfig is the path of an admin kubeconfig for it.
	Kubeconfig string
	// Config is a client configuration for the admin user.
	Config *rest.Config

	srv       *server.Server
	dataDir   string
	webhooks  *webhookServers // nil without Options.Webhooks
	removeDir string          // a data directory StartServer made
	// transport is the one client-go hands every client of Config. It
	// caches transports weakly: holding it keeps it the one they get, so
	// that Stop can close their idle connections.
	transport http.RoundTripper
}

// Storage values for Options.Storage.
const (
	// StorageMemory keeps objects in the test process's memory: the
	// fastest start, and nothing written to disk but certificates.
	StorageMemory = server.StorageMemory
	// StorageEtcd runs an embedded etcd in DataDir (or uses
	// Options.EtcdServers), for tests of etcd itself or of several
	// replicas sharing one.
	StorageEtcd = server.StorageEtcd
)

// Options adjust the server. The zero value is a good default: memory
// storage and no CRDs.
type Options struct {
	// DataDir keeps the server's certificates, kubeconfig and etcd data;
	// default a t.TempDir() (a new temporary directory for StartServer).
	DataDir string
	// Storage is StorageMemory (the default) or StorageEtcd; setting
	// EtcdServers implies StorageEtcd.
	Storage string
	// EtcdServers uses an external etcd instead of the embedded one.
	EtcdServers []string
	// EtcdPrefix separates servers sharing one etcd.
	EtcdPrefix string

	// CRDs are created before Start returns, and waited on until
	// Established, together with those read from CRDDirectoryPaths and
	// CRDFS.
	CRDs []*apiextensionsv1.CustomResourceDefinition
	// CRDDirectoryPaths are files, directories (their .yaml, .yml and
	// .json files, not recursively) or glob patterns of CRD manifests;
	// a file may hold several YAML documents. Documents of other kinds
	// are skipped, as envtest skips them.
	CRDDirectoryPaths []string
	// CRDFS, if set, is walked for CRD manifests as a directory of
	// CRDDirectoryPaths is read, but recursively: for CRDs embedded in
	// the test binary with embed.FS.
	CRDFS fs.FS
	// IgnoreMissingCRDPaths skips CRDDirectoryPaths that do not exist
	// (or glob patterns that match nothing) instead of failing.
	IgnoreMissingCRDPaths bool

	// Webhooks are served by the test process over TLS and registered
	// with the server before Start returns (see Webhook).
	Webhooks []Webhook

	// Clock, if set, is the time the server's expiries follow, so that a
	// test steps over them instead of waiting: pass a
	// k8s.io/utils/clock/testing FakeClock and Step it. Events expire
	// after the event TTL (one hour) of the Clock, and ServiceAccount
	// tokens are issued and checked at its time. Timestamps on objects
	// (creationTimestamp, managedFields) stay real. It needs memory
	// storage, the default: etcd expires events by its own clock.
	Clock clock.WithDelayedExecution
}

// Start starts a server for the duration of t, with the CRDs of opts
// (at most one Options) Established. It fails t if the server does not
// start or a CRD is missing or invalid.
func Start(t testing.TB, opts ...Options) *Server {
	t.Helper()
	var o Options
	switch len(opts) {
	case 0:
	case 1:
		o = opts[0]
	default:
		t.Fatalf("crdtest: Start takes at most one Options, got %d", len(opts))
	}
	if o.DataDir == "" {
		o.DataDir = t.TempDir()
	}
	s, err := StartServer(context.Background(), o)
	if err != nil {
		t.Fatalf("crdtest: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("crdtest: stopping: %v", err)
		}
	})
	return s
}

// StartServer starts a server outside a test; call Stop when done. With
// no DataDir it makes a temporary directory, which Stop removes.
func StartServer(ctx context.Context, opts Options) (_ *Server, err error) {
	docs, err := opts.crdDocuments()
	if err != nil {
		return nil, err
	}
	removeDir := false
	if opts.DataDir == "" {
		if opts.DataDir, err = os.MkdirTemp("", "crdtest-"); err != nil {
			return nil, fmt.Errorf("creating a data directory: %w", err)
		}
		removeDir = true
	}
	if len(opts.EtcdServers) > 0 {
		if err := shareCA(opts.DataDir, opts.EtcdServers); err != nil {
			return nil, err
		}
	}
	storage := opts.Storage
	if storage == "" && len(opts.EtcdServers) == 0 {
		storage = StorageMemory
	}
	if opts.Clock != nil && storage != StorageMemory {
		return nil, errors.New("a Clock needs memory storage: etcd expires events by its own clock")
	}
	srv, err := server.Start(ctx, server.Config{
		DataDir:     opts.DataDir,
		BindAddress: "127.0.0.1",
		SecurePort:  0,
		Storage:     storage,
		EtcdServers: opts.EtcdServers,
		EtcdPrefix:  opts.EtcdPrefix,
		// Tests stop servers constantly; nothing in flight deserves long.
		ShutdownTimeout: 5 * time.Second,
		// A controller-runtime webhook server stopped at the end of a test
		// would wait a second for an idle HTTP/2 connection of ours.
		WebhookHTTP1: true,
		Clock:        opts.Clock,
	})
	if err != nil {
		if removeDir {
			os.RemoveAll(opts.DataDir)
		}
		return nil, err
	}
	s := &Server{URL: srv.URL, Kubeconfig: srv.Kubeconfig, srv: srv, dataDir: opts.DataDir}
	defer func() {
		if err != nil {
			s.Stop()
		}
		if removeDir {
			if err != nil {
				os.RemoveAll(opts.DataDir)
			} else {
				s.removeDir = opts.DataDir
			}
		}
	}()
	cfg, err := clientcmd.BuildConfigFromFlags("", srv.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = -1, 0 // no client-side rate limit against a test server
	s.Config = cfg
	if s.transport, err = rest.TransportFor(cfg); err != nil {
		return nil, fmt.Errorf("client transport: %w", err)
	}
	if err := s.waitReady(ctx, 30*time.Second); err != nil {
		return nil, err
	}
	if len(opts.Webhooks) > 0 {
		if s.webhooks, err = startWebhooks(opts.Webhooks); err != nil {
			return nil, err
		}
		if err := s.webhooks.setConversion(docs); err != nil {
			return nil, err
		}
		configs, err := s.webhooks.configurations()
		if err != nil {
			return nil, err
		}
		docs = append(docs, configs...)
	}
	if err := s.apply(ctx, docs); err != nil {
		return nil, err
	}
	return s, nil
}

// waitReady polls /readyz until it answers 200.
func (s *Server) waitReady(ctx context.Context, timeout time.Duration) error {
	client, err := rest.HTTPClientFor(s.Config)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/readyz", nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("crdserver not ready after %s (last error: %v)", timeout, err)
		case <-time.After(wait):
		}
	}
}

// Stop shuts the server down gracefully.
func (s *Server) Stop() error {
	// client-go shares one transport among the clients of a Config (see
	// transport). Its idle connections would hold Shutdown for the second HTTP/2 waits
	// for a client to hang up after GOAWAY; close them first.
	if s.transport != nil {
		utilnet.CloseIdleConnectionsFor(s.transport)
	}
	err := s.srv.Shutdown()
	if s.webhooks != nil {
		s.webhooks.close()
	}
	if s.removeDir != "" {
		os.RemoveAll(s.removeDir)
	}
	return err
}

// ConfigFor is a client configuration for another user than the admin:
// a client certificate for user in groups, signed by the server's CA, as
// kube-apiserver's x509 authenticator reads them (CommonName, then
// Organizations). RBAC decides what the user may do; with no bindings
// beyond the defaults, that is discovery and the self reviews. Groups may
// not include system:masters unless the test wants an admin.
func (s *Server) ConfigFor(user string, groups ...string) (*rest.Config, error) {
	certPEM, keyPEM, err := certs.IssueClient(filepath.Join(s.dataDir, "pki"), user, groups)
	if err != nil {
		return nil, fmt.Errorf("crdtest: config for %q: %w", user, err)
	}
	cfg := rest.AnonymousClientConfig(s.Config)
	cfg.CertData, cfg.KeyData = certPEM, keyPEM
	return cfg, nil
}

// firstOnEtcd maps an etcd endpoint list to the data directory of the
// first server this process started on it.
var firstOnEtcd sync.Map

// shareCA gives a server on an external etcd the CA (and service account
// key) of the first server this process started on the same etcd, as
// replicas of one cluster must have: a replica with another CA refuses to
// start.
func shareCA(dir string, endpoints []string) error {
	first, loaded := firstOnEtcd.LoadOrStore(strings.Join(endpoints, ","), dir)
	if !loaded || first == dir {
		return nil
	}
	return certs.CopyShared(filepath.Join(first.(string), "pki"), filepath.Join(dir, "pki"))
}
