package loadgen

import (
	"context"
	"crypto/tls"
	"fmt"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/crdserver/crdserver/internal/certs"
)

// etcdProbeTimeout bounds the first request to etcd; tests shorten it.
var etcdProbeTimeout = 10 * time.Second

// etcdPut measures raw etcd puts of the same size as the objects, under a
// prefix of this run's own, which cleanup deletes: what etcd itself costs
// a client in another process, to compare creates with. (crdserver calls
// its embedded etcd in-process, without that gRPC hop.)
func (b *bench) etcdPut(ctx context.Context) (Result, error) {
	tlsCfg, err := b.etcdTLS()
	if err != nil {
		return Result{}, err
	}
	client, err := clientv3.New(clientv3.Config{
		Endpoints:   b.cfg.EtcdEndpoints,
		TLS:         tlsCfg,
		DialTimeout: 10 * time.Second,
		Logger:      zap.NewNop(),
		Context:     ctx,
	})
	if err != nil {
		return Result{}, fmt.Errorf("connecting to etcd: %w", err)
	}
	// The client connects lazily and retries forever: a wrong endpoint
	// would hang the first put instead of failing.
	probeCtx, cancel := context.WithTimeout(ctx, etcdProbeTimeout)
	_, err = client.Get(probeCtx, "/crdserver-bench/probe", clientv3.WithCountOnly())
	cancel()
	if err != nil {
		client.Close()
		return Result{}, fmt.Errorf("etcd at %v does not answer: %w", b.cfg.EtcdEndpoints, err)
	}
	prefix := "/crdserver-bench/" + b.runID + "/"
	b.etcdCleanup = func(ctx context.Context) error {
		defer client.Close()
		if _, err := client.Delete(ctx, prefix, clientv3.WithPrefix()); err != nil {
			return fmt.Errorf("deleting etcd keys under %s: %w", prefix, err)
		}
		return nil
	}

	value := make([]byte, b.cfg.ObjectSize)
	for i := range value {
		value[i] = 'a' + byte(i%26)
	}
	b.log.Info("workload starting", "workload", "etcd-put", "endpoints", b.cfg.EtcdEndpoints)
	return b.runner().Run(ctx, "etcd-put", func(ctx context.Context, i int) error {
		_, err := client.Put(ctx, prefix+strconv.Itoa(i), string(value))
		return err
	}), nil
}

// etcdTLS returns the client TLS configuration for etcd, or nil for plain
// connections when no file is given.
func (b *bench) etcdTLS() (*tls.Config, error) {
	c := b.cfg
	if c.EtcdCertFile == "" && c.EtcdKeyFile == "" && c.EtcdCAFile == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.EtcdCertFile != "" || c.EtcdKeyFile != "" {
		cert, err := tls.LoadX509KeyPair(c.EtcdCertFile, c.EtcdKeyFile)
		if err != nil {
			return nil, fmt.Errorf("loading etcd client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	if c.EtcdCAFile != "" {
		pool, err := certs.LoadCAPool(c.EtcdCAFile)
		if err != nil {
			return nil, fmt.Errorf("etcd CA: %w", err)
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}
