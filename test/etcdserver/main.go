// Command etcdserver runs crdserver's embedded etcd as a separate process,
// so tests can exercise crdserver against an external etcd (one they can
// kill) without downloading etcd release binaries.
//
//	etcdserver --data-dir DIR [--listen-client ADDR] [--port-file FILE]
//	           [--name NAME --listen-peer ADDR --initial-cluster NAME=URL,...]
//
// With --initial-cluster it is one member of a cluster (test/cluster starts
// three); it becomes ready once a quorum of members has formed.
//
// Once etcd serves requests, the client URL is printed on stdout and, with
// --port-file, written to FILE (atomically, so a reader never sees half of
// it). SIGINT and SIGTERM stop etcd cleanly.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/crdserver/crdserver/internal/storage/embedded"
)

func main() {
	dataDir := flag.String("data-dir", "", "etcd data directory (required)")
	listen := flag.String("listen-client", "127.0.0.1:0", "client address host:port; port 0 picks a free port")
	portFile := flag.String("port-file", "", "file to write the client URL into once ready")
	progress := flag.Duration("watch-progress-notify-interval", 5*time.Second, "interval of watch progress notifications")
	var member embedded.Config
	flag.StringVar(&member.Name, "name", "", "member name (required with --initial-cluster)")
	flag.StringVar(&member.PeerAddr, "listen-peer", "", "peer address host:port (required with --initial-cluster)")
	flag.StringVar(&member.InitialCluster, "initial-cluster", "", "every member of a new cluster: name=http://host:port,...; empty: a single member")
	flag.UintVar(&member.TickMs, "tick-ms", 0, "heartbeat interval in ms (default: embedded's)")
	flag.UintVar(&member.ElectionMs, "election-ms", 0, "election timeout in ms (default: embedded's)")
	flag.Parse()
	if err := run(*dataDir, *listen, *portFile, *progress, member); err != nil {
		fmt.Fprintln(os.Stderr, "etcdserver:", err)
		os.Exit(1)
	}
}

func run(dataDir, listen, portFile string, progress time.Duration, member embedded.Config) error {
	if dataDir == "" {
		return fmt.Errorf("--data-dir is required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	lg := slog.New(slog.NewTextHandler(os.Stderr, nil))
	s, err := embedded.Start(ctx, embedded.Config{
		Dir:                         dataDir,
		ClientAddr:                  listen,
		WatchProgressNotifyInterval: progress,
		Logger:                      lg,
		Name:                        member.Name,
		PeerAddr:                    member.PeerAddr,
		InitialCluster:              member.InitialCluster,
		TickMs:                      member.TickMs,
		ElectionMs:                  member.ElectionMs,
	})
	if err != nil {
		return err
	}
	defer s.Close()
	url := s.Endpoints()[0]
	if portFile != "" {
		tmp := filepath.Join(filepath.Dir(portFile), "."+filepath.Base(portFile)+".tmp")
		if err := os.WriteFile(tmp, []byte(url+"\n"), 0o644); err != nil {
			return err
		}
		if err := os.Rename(tmp, portFile); err != nil {
			return err
		}
	}
	fmt.Println(url)
	<-ctx.Done()
	return nil
}
