// Package crdtest runs a crdserver inside a Go test: an API server with
// embedded storage on a temporary directory and a free port, ready for
// client-go or controller-runtime in milliseconds, stopped when the test ends.
package crdtest

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

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

	srv *server.Server
}

// Options adjust the server. The zero value is a good default.
type Options struct {
	// DataDir keeps the server's data; default a t.TempDir().
	DataDir string
	// EtcdServers uses an external etcd instead of the embedded one.
	EtcdServers []string
	// EtcdPrefix separates servers sharing one etcd.
	EtcdPrefix string
}

// Start starts a server for the duration of t.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	s, err := StartServer(context.Background(), opts.withDefaults(t))
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

func (o Options) withDefaults(t testing.TB) Options {
	if o.DataDir == "" {
		o.DataDir = t.TempDir()
	}
	return o
}

// StartServer starts a server outside a test; call Stop when done.
func StartServer(ctx context.Context, opts Options) (*Server, error) {
	srv, err := server.Start(ctx, server.Config{
		DataDir:     opts.DataDir,
		BindAddress: "127.0.0.1",
		SecurePort:  0,
		EtcdServers: opts.EtcdServers,
		EtcdPrefix:  opts.EtcdPrefix,
	})
	if err != nil {
		return nil, err
	}
	s := &Server{URL: srv.URL, Kubeconfig: srv.Kubeconfig, srv: srv}
	cfg, err := clientcmd.BuildConfigFromFlags("", srv.Kubeconfig)
	if err != nil {
		_ = srv.Shutdown()
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = 1000, 2000
	s.Config = cfg
	if err := s.waitReady(ctx, 30*time.Second); err != nil {
		_ = srv.Shutdown()
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
	deadline := time.Now().Add(timeout)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/readyz", nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("crdserver not ready after %s (last error: %v)", timeout, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Stop shuts the server down gracefully.
func (s *Server) Stop() error { return s.srv.Shutdown() }
