// Command crdserver serves CustomResourceDefinitions and their objects with
// the Kubernetes API, so kubectl, client-go and helm work against it.
//
//	crdserver [flags]        run the server
//	crdserver bench [flags]  drive a Kubernetes API server and report latencies
//	crdserver lint FILE|DIR  check CRD manifests as the server would, offline
//	crdserver migrate [flags] <plural>.<group>
//	                         rewrite a resource's objects at its storage version
//
// This file holds flags only: everything they set is a server.Config (or a
// loadgen.Config for bench), and the server itself lives in internal/server.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/crdserver/crdserver/internal/server"
	"github.com/crdserver/crdserver/internal/version"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main with its inputs and outputs explicit; it returns the exit code:
// 0 on success, 1 on failure, 2 for bad flags (as package flag does).
func run(args []string, stdout, stderr io.Writer) int {
	// SIGTERM and SIGINT cancel ctx; a second signal kills the process the
	// default way, since NotifyContext's stop restores the default handling
	// once ctx is done.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop()
	}()
	slog.SetDefault(slog.New(slog.NewTextHandler(stderr, nil)))

	if len(args) > 0 {
		switch args[0] {
		case "bench":
			return runBench(ctx, args[1:], stdout, stderr)
		case "lint":
			return runLint(args[1:], stdout, stderr)
		case "migrate":
			return runMigrate(ctx, args[1:], stdout, stderr)
		}
	}

	cfg, logOpts, err := parseFlags(args)
	switch {
	case errors.Is(err, errShowVersion):
		fmt.Fprintln(stdout, versionString())
		return 0
	case errors.Is(err, flag.ErrHelp):
		usage(stdout)
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "crdserver: %v\nRun 'crdserver --help' for usage.\n", err)
		return 2
	}
	slog.SetDefault(newLogger(stderr, logOpts))
	if err := runServer(ctx, cfg); err != nil {
		slog.Error("crdserver failed", "err", err)
		return 1
	}
	return 0
}

// runServer starts the server and blocks until ctx ends and it has stopped.
func runServer(ctx context.Context, cfg server.Config) error {
	return server.Run(ctx, cfg)
}

// errShowVersion is what parseFlags returns for --version.
var errShowVersion = errors.New("version requested")

// logOptions say how the server logs: --log-format and -v.
type logOptions struct {
	format    string // "text" or "json"
	verbosity int
}

// newLogger is the logger o asks for, writing to w. Verbosity v enables
// slog level -v and above, as logr's slog bridge maps klog's V(v): at -v=2
// the server logs every request, as upstream does.
func newLogger(w io.Writer, o logOptions) *slog.Logger {
	opts := &slog.HandlerOptions{Level: slog.Level(-o.verbosity), ReplaceAttr: infoLevels}
	if o.format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// infoLevels names the levels between Debug and Info, klog's V(1) to V(3),
// INFO as klog does (slog would say DEBUG+2): they are information shown
// by choice, not debugging.
func infoLevels(groups []string, a slog.Attr) slog.Attr {
	if a.Key == slog.LevelKey && len(groups) == 0 {
		if l, ok := a.Value.Any().(slog.Level); ok && l > slog.LevelDebug && l < slog.LevelInfo {
			a.Value = slog.StringValue(slog.LevelInfo.String())
		}
	}
	return a
}

// parseFlags turns the server's command line into a server.Config and the
// logging options. It returns flag.ErrHelp for -h/--help and
// errShowVersion for --version. Flags take one or two dashes.
func parseFlags(args []string) (server.Config, logOptions, error) {
	cfg, logOpts, err := parseServerFlags(args)
	if err != nil {
		return server.Config{}, logOptions{}, err
	}
	return cfg, logOpts, nil
}

// parseServerFlags is parseFlags but for the zero values on error.
func parseServerFlags(args []string) (server.Config, logOptions, error) {
	var cfg server.Config
	var logOpts logOptions
	var showVersion bool
	fs := serverFlags(&cfg, &logOpts, &showVersion)
	fs.SetOutput(io.Discard) // run prints errors and usage itself
	if err := fs.Parse(args); err != nil {
		return cfg, logOpts, err
	}
	if showVersion {
		return cfg, logOpts, errShowVersion
	}
	if fs.NArg() > 0 {
		return cfg, logOpts, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	cfg.Flags = flagValues(fs)
	return cfg, logOpts, validate(cfg, logOpts)
}

// flagValues is what /flagz shows: every flag of fs, set or not, with its
// value as the flag prints it. fs must not change once parsed.
func flagValues(fs *flag.FlagSet) func() map[string]string {
	return func() map[string]string {
		values := make(map[string]string)
		fs.VisitAll(func(f *flag.Flag) { values[f.Name] = f.Value.String() })
		return values
	}
}

func validate(cfg server.Config, logOpts logOptions) error {
	switch {
	case logOpts.format != "text" && logOpts.format != "json":
		return fmt.Errorf("--log-format %q: must be text or json", logOpts.format)
	case logOpts.verbosity < 0:
		return fmt.Errorf("-v %d: must not be negative", logOpts.verbosity)
	case cfg.SecurePort < 0 || cfg.SecurePort > 65535:
		return fmt.Errorf("--secure-port %d: must be between 0 and 65535", cfg.SecurePort)
	case net.ParseIP(cfg.BindAddress) == nil:
		return fmt.Errorf("--bind-address %q: not an IP address", cfg.BindAddress)
	case (cfg.TLSCertFile == "") != (cfg.TLSPrivateKeyFile == ""):
		return errors.New("--tls-cert-file and --tls-private-key-file must be given together")
	case cfg.Storage != server.StorageEtcd && cfg.Storage != server.StorageMemory:
		return fmt.Errorf("--storage %q: must be %s or %s", cfg.Storage, server.StorageEtcd, server.StorageMemory)
	case cfg.Storage == server.StorageMemory && len(cfg.EtcdServers) > 0:
		return errors.New("--storage=memory and --etcd-servers are exclusive")
	case (cfg.EtcdCertFile == "") != (cfg.EtcdKeyFile == ""):
		return errors.New("--etcd-certfile and --etcd-keyfile must be given together")
	case cfg.ShutdownTimeout < 0:
		return fmt.Errorf("--shutdown-timeout %v: must not be negative", cfg.ShutdownTimeout)
	}
	return nil
}

// serverFlags binds the server's flags to cfg. The defaults shown are the
// values a Config gets from an empty command line.
func serverFlags(cfg *server.Config, logOpts *logOptions, showVersion *bool) *flag.FlagSet {
	fs := flag.NewFlagSet("crdserver", flag.ContinueOnError)
	fs.StringVar(&logOpts.format, "log-format", "text", "log format: text or json")
	fs.IntVar(&logOpts.verbosity, "v", 0, "log verbosity; 2 and above log every request, 4 and above debug details")
	fs.StringVar(&cfg.DataDir, "data-dir", ".crdserver", "directory for the embedded etcd data, the generated certificates and admin.kubeconfig")
	fs.StringVar(&cfg.BindAddress, "bind-address", "127.0.0.1", "IP address to serve on")
	fs.IntVar(&cfg.SecurePort, "secure-port", 6443, "HTTPS port; 0 picks a free port")
	fs.StringVar(&cfg.Storage, "storage", server.StorageEtcd, "where objects are kept: etcd (embedded, or --etcd-servers), or memory (lost at exit; for tests and throwaway servers)")
	fs.Var((*listFlag)(&cfg.EtcdServers), "etcd-servers", "external etcd endpoints, comma-separated or repeated; empty starts an embedded etcd")
	fs.StringVar(&cfg.EtcdPrefix, "etcd-prefix", "/registry", "prefix of every key in etcd")
	fs.StringVar(&cfg.EtcdCAFile, "etcd-cafile", "", "CA bundle to verify the external etcd's certificates")
	fs.StringVar(&cfg.EtcdCertFile, "etcd-certfile", "", "client certificate for the external etcd")
	fs.StringVar(&cfg.EtcdKeyFile, "etcd-keyfile", "", "client key for the external etcd")
	fs.StringVar(&cfg.TLSCertFile, "tls-cert-file", "", "serving certificate (PEM) to use instead of the generated one")
	fs.StringVar(&cfg.TLSPrivateKeyFile, "tls-private-key-file", "", "key of --tls-cert-file")
	fs.StringVar(&cfg.ClientCAFile, "client-ca-file", "", "CA bundle to verify client certificates instead of the generated CA")
	fs.Var((*listFlag)(&cfg.TLSSANs), "tls-san", "extra DNS name or IP for the generated serving certificate, comma-separated or repeated")
	fs.StringVar(&cfg.ServiceClusterIPRange, "service-cluster-ip-range", "10.0.0.0/24", "CIDR from which Services get their cluster IPs; the kubernetes Service gets the first address")
	fs.StringVar(&cfg.ServiceNodePortRange, "service-node-port-range", "30000-32767", "port range (low-high) from which NodePort and LoadBalancer Services get their node ports")
	fs.IntVar(&cfg.MaxRequestsInflight, "max-requests-inflight", 400, "non-long-running requests served at once, shared fairly among users; more wait in their user's queue (429 when it is full); negative disables the limit")
	cfg.RequestTimeout = time.Minute
	fs.Var(neverDuration{&cfg.RequestTimeout}, "request-timeout", "how long a non-long-running request may take before it gets 504; 0 disables")
	fs.IntVar(&cfg.MaxWatchesPerUser, "max-watches-per-user", 500, "watches one user (other than system:masters) may hold open; negative disables the limit")
	fs.Var(featureGates(cfg), "feature-gates", "comma-separated name=true|false pairs, as upstream's; the one crdserver reads is APIResponseCompression (default true: answers over 128 KiB are gzipped for clients that accept it)")
	fs.StringVar(&cfg.AuthorizationMode, "authorization-mode", "RBAC", "how requests are authorized: RBAC or AlwaysAllow")
	fs.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", 30*time.Second, "how long graceful shutdown may take")
	cfg.EventTTL = time.Hour
	fs.Var(neverDuration{&cfg.EventTTL}, "event-ttl", "how long events live after their last write; 0 keeps them until deleted")
	fs.Var(enabledFlag{&cfg.DisableProfiling}, "profiling", "serve Go profiles at /debug/pprof to system:masters")
	authnFlags(fs, cfg)
	auditAndEncryptionFlags(fs, cfg)
	fs.BoolVar(showVersion, "version", false, "print the version and exit")
	return fs
}

func usage(w io.Writer) {
	fmt.Fprint(w, `Usage:
  crdserver [flags]        serve the Kubernetes API for custom resources
  crdserver bench [flags]  load-test a Kubernetes API server (crdserver bench --help)
  crdserver migrate [flags] <plural>.<group>
                           migrate a resource to its storage version (crdserver migrate --help)

Flags:
`)
	fs := serverFlags(&server.Config{}, &logOptions{}, new(bool))
	fs.SetOutput(w)
	fs.PrintDefaults()
}

// versionString is what --version prints: crdserver's own version (set at
// link time, see package version) and the Kubernetes version it serves.
func versionString() string {
	info := version.Get()
	s := fmt.Sprintf("crdserver %s (Kubernetes %s, %s, %s", version.Version, info.GitVersion, info.GoVersion, info.Platform)
	if info.GitCommit != "" {
		s += ", commit " + info.GitCommit
	}
	return s + ")"
}

// listFlag is a []string flag that takes comma-separated values and may be
// repeated; every use appends.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	for s := range strings.SplitSeq(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}
