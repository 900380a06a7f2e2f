package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"

	"github.com/crdserver/crdserver/internal/loadgen"
)

// benchOptions are the bench command's settings: the load generator's
// configuration plus how to print the report.
type benchOptions struct {
	loadgen.Config
	// InstallCRD and Cleanup are the positive forms of the Config's Skip
	// fields: users say what to do, the Config's zero value is the usual run.
	InstallCRD bool
	Cleanup    bool
	JSON       bool
	// CPUProfile names a file for a CPU profile of the load generator
	// itself, to tell its cost from the server's.
	CPUProfile string
}

func benchFlags(o *benchOptions) *flag.FlagSet {
	fs := flag.NewFlagSet("crdserver bench", flag.ContinueOnError)
	c := &o.Config
	fs.StringVar(&c.Kubeconfig, "kubeconfig", "", "kubeconfig of the server to drive; empty uses $KUBECONFIG or ~/.kube/config")
	fs.StringVar(&c.Resource, "resource", loadgen.ResourceWidgets, "resource to load: widgets (a CRD of its own), celwidgets (the same CRD with four CEL rules) or namespaces")
	fs.BoolVar(&o.InstallCRD, "install-crd", true, "install the Widget CRD (deleted again with --cleanup)")
	fs.StringVar(&c.Namespace, "namespace", "", "namespace for widgets; empty creates <prefix>-<run id>")
	fs.StringVar(&c.Prefix, "prefix", "bench", "prefix of object names")
	fs.IntVar(&c.ObjectSize, "object-size", 2048, "approximate JSON size of each object in bytes")
	fs.Var((*listFlag)(&c.Workloads), "workloads", "comma-separated workloads, run in this order: "+strings.Join(loadgen.Workloads, ",")+" (default all of them but status and patch, which run only when named); also crds, openapi, fairness, admission and fields, run only when named")
	fs.IntVar(&c.Concurrency, "concurrency", 10, "operations in flight")
	fs.IntVar(&c.Count, "count", 0, "operations per workload (default 1000 when --duration is not set)")
	fs.DurationVar(&c.Duration, "duration", 0, "time per workload")
	fs.Float64Var(&c.Rate, "rate", 0, "operations per second each workload starts, at most --concurrency in flight (default: as fast as they are answered); latency counts from when each was due")
	fs.IntVar(&c.Objects, "objects", 1000, "objects to create first when the create workload is not run")
	fs.Int64Var(&c.PageSize, "page-size", 500, "page size of the list-paged, list-raw-paged and table-paged workloads")
	fs.Func("server-pid", "process id of the server on this machine: report its CPU time and RSS per workload (from /proc); comma-separated or repeated for several replicas: their sums", func(v string) error {
		for s := range strings.SplitSeq(v, ",") {
			pid, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil {
				return err
			}
			c.ServerPIDs = append(c.ServerPIDs, pid)
		}
		return nil
	})
	fs.Var((*listFlag)(&c.Servers), "servers", "more servers (replicas of the kubeconfig's, sharing its CA) to spread the raw client's requests over, comma-separated URLs")
	fs.IntVar(&c.Watchers, "watchers", 10, "watches opened by the watch workload")
	fs.DurationVar(&c.WatchTimeout, "watch-timeout", 0, "wait for undelivered watch events after the last update (default 30s)")
	fs.StringVar(&c.WatchAs, "watch-as", loadgen.WatchAsJSON, "form the watch workload's watchers ask for: json (whole objects), metadata (PartialObjectMetadata in JSON) or metadata-protobuf (PartialObjectMetadata in protobuf, as client-go's metadata client asks for it: controller-runtime's metadata informers, the garbage collector); --client-go takes json or metadata-protobuf (its metadata client)")
	fs.BoolVar(&c.ClientGo, "client-go", false, "send requests through client-go's dynamic client, decoding every answer (default: pre-encoded JSON, answers not decoded)")
	fs.BoolVar(&c.DisableCompression, "disable-compression", false, "ask for answers uncompressed, as kubectl --disable-compression does (client-go asks for gzip)")
	fs.BoolVar(&c.HTTP1, "http1", false, "raw client: speak HTTP/1.1 over a connection per operation in flight instead of HTTP/2 over one")
	fs.StringVar(&c.Conversion, "conversion", "", "give the Widget CRD a version v2, converted with the None strategy (none) or by a conversion webhook the load generator serves (webhook), and list it in the list-v2 workload")
	fs.BoolVar(&o.Cleanup, "cleanup", true, "delete everything the run created")
	fs.BoolVar(&c.Unchanged, "unchanged", false, "update, status, patch and apply write the same values every time, so that each object's writes after its first change nothing (the watch workload's still do)")
	fs.Var((*listFlag)(&c.EtcdEndpoints), "etcd-endpoints", "etcd endpoints to measure raw puts of the same size against (optional)")
	fs.StringVar(&c.EtcdCertFile, "etcd-cert", "", "client certificate for --etcd-endpoints")
	fs.StringVar(&c.EtcdKeyFile, "etcd-key", "", "client key for --etcd-endpoints")
	fs.StringVar(&c.EtcdCAFile, "etcd-ca", "", "CA bundle for --etcd-endpoints")
	fs.StringVar(&c.AsUser, "as-user", "", "run as this user, with a client certificate minted from the CA in --data-dir (bound to cluster-admin for the run where the server serves RBAC), instead of the kubeconfig's user")
	fs.Var((*listFlag)(&c.AsGroups), "as-group", "groups of --as-user and of the fairness workload's users, comma-separated or repeated (default "+loadgen.DefaultBenchGroup+" for the fairness workload)")
	fs.StringVar(&c.DataDir, "data-dir", ".crdserver", "the server's data directory, whose CA mints the certificates of --as-user and the fairness workload")
	fs.Float64Var(&c.QuietRate, "quiet-rate", 20, "fairness workload: requests per second of the quiet user; the noisy one runs --concurrency at once")
	fs.IntVar(&c.AdmissionRounds, "admission-rounds", 5, "admission workload: rounds of updates with one mutating webhook, with one validating webhook and with one ValidatingAdmissionPolicy, each run between two runs without admission")
	fs.IntVar(&c.AdmissionCopies, "admission-copies", 1, "admission workload: webhooks or policies each variant registers at once (the notes also give the CPU added per one)")
	fs.IntVar(&c.FieldsRounds, "fields-rounds", 3, "fields workload: runs of updates on objects the server records managedFields for, each between two runs on objects whose managedFields were cleared")
	fs.Float64Var(&c.NoisyRate, "noisy-rate", 0, "fairness workload: requests per second of the noisy user, spread over --concurrency workers; 0 sends as fast as it is answered")
	fs.BoolVar(&o.JSON, "json", false, "print the report as JSON instead of a table")
	fs.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of the load generator to this file")
	return fs
}

// parseBenchFlags turns the bench command line into options. It returns
// flag.ErrHelp for -h/--help.
func parseBenchFlags(args []string) (benchOptions, error) {
	var o benchOptions
	fs := benchFlags(&o)
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		return benchOptions{}, err
	}
	if fs.NArg() > 0 {
		return benchOptions{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	o.SkipInstallCRD = !o.InstallCRD
	o.SkipCleanup = !o.Cleanup
	if o.Concurrency < 1 {
		return benchOptions{}, fmt.Errorf("--concurrency %d: must be at least 1", o.Concurrency)
	}
	return o, nil
}

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseBenchFlags(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, "Usage: crdserver bench [flags]\n\nFlags:\n")
		fs := benchFlags(&benchOptions{})
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "crdserver bench: %v\nRun 'crdserver bench --help' for usage.\n", err)
		return 2
	}
	o.Logger = slog.Default()
	if os.Getenv("GOGC") == "" {
		// The load generator shares the machine with the server it
		// measures, and its heap stays small: collecting it a quarter
		// as often costs ~8% less CPU per get at concurrency 16, CPU
		// left to the server.
		defer debug.SetGCPercent(debug.SetGCPercent(400))
	}

	if o.CPUProfile != "" {
		f, err := os.Create(o.CPUProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintf(stderr, "crdserver bench: --cpuprofile: %v\n", err)
			return 1
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	report, err := loadgen.Run(ctx, o.Config)
	if report != nil && len(report.Results) > 0 {
		write := loadgen.WriteTable
		if o.JSON {
			write = loadgen.WriteJSON
		}
		if werr := write(stdout, report); werr != nil {
			err = errors.Join(err, werr)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "crdserver bench: %v\n", err)
		return 1
	}
	return 0
}
