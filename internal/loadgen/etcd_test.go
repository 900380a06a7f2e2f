package loadgen

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/crdserver/crdserver/internal/storage/etcdtest"
)

// The etcd-put workload writes Count keys of the object size under its
// run's prefix, and cleanup deletes them all.
func TestEtcdPut(t *testing.T) {
	endpoints := etcdtest.StartEmbedded(t)
	b := &bench{cfg: Config{EtcdEndpoints: endpoints, ObjectSize: 300, Count: 25, Concurrency: 3}, log: slog.New(slog.DiscardHandler), runID: "t1"}
	ctx := context.Background()
	res, err := b.etcdPut(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Ops != 25 || res.Errors != 0 {
		t.Fatalf("etcd-put: %d ops, %d errors (%s); want 25, 0", res.Ops, res.Errors, res.FirstError)
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	resp, err := c.Get(ctx, "/crdserver-bench/t1/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 25 || len(resp.Kvs[0].Value) != 300 {
		t.Fatalf("after the workload: %d keys, want 25 of 300 bytes", len(resp.Kvs))
	}
	if err := b.etcdCleanup(ctx); err != nil {
		t.Fatal(err)
	}
	if resp, err = c.Get(ctx, "/crdserver-bench/", clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil || resp.Count != 0 {
		t.Errorf("after cleanup: %d keys (err %v), want none", resp.Count, err)
	}
}

// An endpoint that is not etcd fails the workload with a clear error
// instead of hanging in the client's endless reconnects.
func TestEtcdPutNotEtcd(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conn.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n"))
			conn.Close()
		}
	}()
	old := etcdProbeTimeout
	etcdProbeTimeout = 300 * time.Millisecond
	defer func() { etcdProbeTimeout = old }()
	b := &bench{cfg: Config{EtcdEndpoints: []string{"http://" + ln.Addr().String()}, ObjectSize: 10, Count: 1, Concurrency: 1}, log: slog.New(slog.DiscardHandler), runID: "t2"}
	if _, err := b.etcdPut(context.Background()); err == nil || !strings.Contains(err.Error(), "does not answer") {
		t.Errorf("etcd-put against a non-etcd endpoint: err = %v, want 'does not answer'", err)
	}
}
