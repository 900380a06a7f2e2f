// Command devcluster starts a 3-member etcd cluster and crdserver replicas
// on loopback, prints a kubeconfig per replica, and runs until interrupted:
//
//	go run ./test/cluster/cmd/devcluster --replicas 3 --etcd-members 3
//
// Every replica's kubeconfig works against every replica (they share one
// CA), as behind a load balancer. Ctrl-C stops everything; the data stays
// in --dir when one is given.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/crdserver/crdserver/test/cluster"
)

func main() {
	var opts cluster.Options
	flag.IntVar(&opts.Replicas, "replicas", 3, "crdserver replicas")
	flag.IntVar(&opts.EtcdMembers, "etcd-members", 3, "etcd members")
	flag.StringVar(&opts.Dir, "dir", "", "directory for data and logs (default: a temporary one, removed at exit)")
	flag.Parse()
	opts.ReplicaArgs = flag.Args()
	if err := run(opts); err != nil {
		fmt.Fprintln(os.Stderr, "devcluster:", err)
		os.Exit(1)
	}
}

func run(opts cluster.Options) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := cluster.Start(ctx, opts)
	if err != nil {
		return err
	}
	defer c.Close()
	fmt.Printf("etcd: %v (logs in %s)\n", c.Endpoints(), c.Dir)
	for _, r := range c.Replicas {
		fmt.Printf("replica %d: %s  KUBECONFIG=%s\n", r.Index, r.URL, r.Kubeconfig)
	}
	fmt.Println("ready; Ctrl-C stops the cluster")
	<-ctx.Done()
	return nil
}
