package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/crdserver/crdserver/internal/migrate"
)

func migrateFlags(c *migrate.Config, timeout *time.Duration) *flag.FlagSet {
	fs := flag.NewFlagSet("crdserver migrate", flag.ContinueOnError)
	fs.StringVar(&c.Kubeconfig, "kubeconfig", "", "kubeconfig of the server; empty uses $KUBECONFIG or ~/.kube/config")
	fs.DurationVar(timeout, "timeout", 0, "give up waiting after this long (the migration goes on); 0 waits until it ends")
	fs.DurationVar(&c.Poll, "poll", 250*time.Millisecond, "how often to read the migration's progress")
	return fs
}

// runMigrate runs `crdserver migrate [flags] <resource.group>`: it creates
// a StorageVersionMigration and draws its progress until it ends.
func runMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var cfg migrate.Config
	var timeout time.Duration
	fs := migrateFlags(&cfg, &timeout)
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		migrateUsage(stdout)
		return 0
	}
	if err == nil && fs.NArg() != 1 {
		err = errors.New("want exactly one resource, as <plural>.<group>")
	}
	if err == nil {
		cfg.Resource = fs.Arg(0)
		_, err = migrate.ParseResource(cfg.Resource)
	}
	if err != nil {
		fmt.Fprintf(stderr, "crdserver migrate: %v\nRun 'crdserver migrate --help' for usage.\n", err)
		return 2
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	cfg.Out = stdout
	if _, err := migrate.Run(ctx, cfg); err != nil {
		fmt.Fprintf(stderr, "crdserver migrate: %v\n", err)
		return 1
	}
	return 0
}

func migrateUsage(w io.Writer) {
	fmt.Fprint(w, `Usage:
  crdserver migrate [flags] <plural>.<group>

Rewrites every stored object of the resource at its current storage version
through a storagemigration.k8s.io/v1 StorageVersionMigration, drawing its
progress, and, for a CRD's resource, leaves the storage version alone in
status.storedVersions once done.

Flags:
`)
	fs := migrateFlags(&migrate.Config{}, new(time.Duration))
	fs.SetOutput(w)
	fs.PrintDefaults()
}
