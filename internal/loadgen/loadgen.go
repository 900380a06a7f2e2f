// Package loadgen drives a Kubernetes API server (crdserver or any other)
// with one workload at a time — create, get, update, list, watch, delete — at
// a fixed concurrency, and reports throughput and latency percentiles for
// each. Optionally it measures raw etcd puts of the same size, as the floor
// any etcd-backed server stands on.
//
// The measuring core is small and clock-injectable: Recorder (exact
// percentiles) and Runner (C workers until a count or a duration). The rest
// builds objects and calls the API server, through a raw HTTP client by
// default or client-go's dynamic client.
package loadgen

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Workloads names every workload in the order Run runs them (the order in
// Config.Workloads does not matter). "list" lists everything in one request;
// "list-paged" lists with limit/continue pages of Config.PageSize. "watch"
// opens Config.Watchers watches, then updates objects and measures the time
// from the start of each update to its delivery at each watcher; it reports
// the updates as "watch-update" and the deliveries as "watch". "apply"
// server-side applies each object as it is with a new update number, as
// one manager, forcing conflicts (the objects were created by another).
var Workloads = []string{"create", "get", "update", "status", "patch", "apply", "list", "list-raw", "list-v2", "list-paged", "list-raw-paged", "table", "table-paged", "metadata", "metadata-protobuf", "watch", "delete"}

// "status", run only when named, replaces objects' status through the
// status subresource, as controllers report what they see: the update
// workload's objects, with status.readyReplicas set to the update number.
// "patch", run only when named, sends the update workload's change as a
// JSON merge patch, as kubectl patch and controller-runtime's client do.

// "list-raw-paged", "table", "table-paged" and "metadata" list in pages,
// as kubectl get does and as metadata informers do (views.go);
// "metadata-protobuf", run only when named, is "metadata" in the protobuf
// client-go's metadata client asks for first.

// "list-v2" is list-raw at the Widget's version v2, which the run adds when
// Config.Conversion is set (and skips otherwise): the cost of converting
// every listed object, by the None strategy or a webhook. Its first list,
// alone, is reported as "list-v2-cold": nothing is converted yet then.

// The "crds" workload, run only when named, creates --count CRDs one after
// another and measures each one's time to Established. The "openapi"
// workload, also run only when named, changes the schema of those CRDs
// and measures how soon /openapi/v3 shows each change (openapi.go).

// namedOnly reports whether workload w of the Workloads list runs only
// when named.
func namedOnly(w string) bool { return w == "status" || w == "patch" || w == "metadata-protobuf" }

// Config describes one benchmark run. The zero value of every field is a
// working default.
type Config struct {
	// Kubeconfig is the kubeconfig file to use; empty means client-go's
	// default loading rules ($KUBECONFIG, then ~/.kube/config).
	Kubeconfig string
	// Resource is ResourceWidgets (default), ResourceCELWidgets or
	// ResourceNamespaces.
	Resource string
	// SkipInstallCRD assumes the Widget CRD exists instead of installing it.
	SkipInstallCRD bool
	// Namespace holds the widgets; default "<Prefix>-<run id>", created for
	// the run and deleted after it. An existing namespace is used and kept.
	Namespace string
	// Prefix starts every object name; default "bench".
	Prefix string
	// ObjectSize is the JSON size in bytes of each object sent on create
	// (approximately: names differ in length); default 2048.
	ObjectSize int

	// Workloads to run, from the Workloads list; default all of them but
	// status and patch.
	Workloads []string
	// Concurrency is the number of operations in flight; default 10.
	Concurrency int
	// Count bounds the operations of each workload; Duration bounds its
	// time. With neither set, Count is 1000.
	Count    int
	Duration time.Duration
	// Rate, when positive, starts each workload's operations at this many
	// per second, at most Concurrency in flight, instead of as fast as
	// they are answered (see Runner.Rate).
	Rate float64
	// Objects are created (unmeasured) before the other workloads when
	// "create" is not among them; default 1000.
	Objects int
	// PageSize is the limit of each page of "list-paged"; default 500.
	PageSize int64
	// Watchers is the number of watches of the "watch" workload; default 10.
	Watchers int
	// WatchTimeout bounds the wait for events still undelivered after the
	// last update of the "watch" workload; missing events count as errors.
	// Default 30s.
	WatchTimeout time.Duration
	// WatchAs is the form the watchers of the "watch" workload ask for:
	// WatchAsJSON (default, whole objects), WatchAsMetadata or
	// WatchAsMetadataProtobuf (watchas.go). With ClientGo, only
	// WatchAsJSON and WatchAsMetadataProtobuf: client-go's metadata
	// client always asks for protobuf first.
	WatchAs string

	// ClientGo sends the requests of create, get, update, delete and watch
	// through client-go's dynamic client, which decodes every answer, as
	// an operator would. By default they go through a raw client that
	// sends pre-encoded JSON and reads answers without decoding them
	// (raw.go), so that the load generator's own CPU, on a machine it
	// shares with the server, weighs less in the figures.
	ClientGo bool

	// HTTP1 makes the raw client speak HTTP/1.1 over a pool of
	// connections, as clients without HTTP/2 do (the Python client, curl),
	// instead of HTTP/2 over one connection as client-go does.
	HTTP1 bool

	// DisableCompression stops the clients asking for gzipped answers,
	// as kubectl's --disable-compression does: client-go asks for them
	// by default, and a server may then compress answers over 128 KiB.
	DisableCompression bool

	// Conversion, when set (ConversionNone or ConversionWebhook), adds a
	// version v2 to the Widget CRD it installs, converted with the None
	// strategy or by a conversion webhook the load generator serves itself.
	Conversion string

	// SkipCleanup keeps everything the run created.
	SkipCleanup bool

	// Unchanged makes the update, status, patch and apply workloads write
	// the same values every time: an object's first write changes it, and
	// every later one changes nothing, as controllers' writes often do (a
	// status reported again, a configuration applied again). The watch
	// workload's updates still change their objects.
	Unchanged bool

	// EtcdEndpoints, when set, add an "etcd-put" result: raw puts of
	// ObjectSize bytes straight to etcd, under /crdserver-bench/<run id>/.
	EtcdEndpoints []string
	EtcdCertFile  string
	EtcdKeyFile   string
	EtcdCAFile    string

	// ServerPIDs, when set, are the process ids of the servers under load
	// on this machine: each result then carries the CPU time and RSS they
	// used together (ServerUsage, read from /proc).
	ServerPIDs []int

	// Servers are more servers to spread the raw client's requests over:
	// replicas sharing the kubeconfig's server's storage and CA (its
	// client certificate must be good for them). Requests go to the
	// kubeconfig's server and these in turn.
	Servers []string

	// AsUser, when set, runs the workloads as this user in AsGroups
	// instead of the kubeconfig's, with a client certificate minted from
	// the server's CA under DataDir; where the server serves RBAC, the
	// groups (or the user) are bound to cluster-admin for the run. The
	// kubeconfig's identity still binds them and removes the binding.
	AsUser   string
	AsGroups []string
	// DataDir is the server's data directory, whose pki/ holds the CA that
	// AsUser and the "fairness" workload mint certificates from. Default
	// ".crdserver", the server's default.
	DataDir string
	// QuietRate is the request rate of the quiet user of the "fairness"
	// workload; the noisy user runs Concurrency requests at once, as fast
	// as they are answered, unless NoisyRate sets its rate. Default 20 per
	// second.
	QuietRate float64
	NoisyRate float64

	// AdmissionRounds is how many times the "admission" workload
	// alternates its variants (admission.go); default 5.
	AdmissionRounds int
	// AdmissionCopies is how many webhooks or policies each variant of
	// the "admission" workload registers at once; default 1.
	AdmissionCopies int

	// FieldsRounds is how many runs with managedFields the "fields"
	// workload makes, each between two without (fields.go); default 3.
	FieldsRounds int

	// Logger receives progress; nil means slog.Default().
	Logger *slog.Logger
}

// Report is the outcome of Run.
type Report struct {
	Server      string
	Resource    string
	ObjectSize  int
	Concurrency int
	Count       int
	Duration    time.Duration
	Rate        float64
	Watchers    int
	WatchAs     string
	ClientGo    bool
	HTTP1       bool
	Results     []Result
	// Notes are further figures of the run, one sentence each.
	Notes []string
}

func (c *Config) complete() error {
	if c.Resource == "" {
		c.Resource = ResourceWidgets
	}
	if c.Resource != ResourceWidgets && c.Resource != ResourceCELWidgets && c.Resource != ResourceNamespaces {
		return fmt.Errorf("unknown resource %q: want %s, %s or %s", c.Resource, ResourceWidgets, ResourceCELWidgets, ResourceNamespaces)
	}
	switch c.Conversion {
	case "", ConversionNone, ConversionWebhook:
	default:
		return fmt.Errorf("unknown conversion %q: want %s or %s", c.Conversion, ConversionNone, ConversionWebhook)
	}
	if c.Prefix == "" {
		c.Prefix = "bench"
	}
	if c.ObjectSize == 0 {
		c.ObjectSize = 2048
	}
	if len(c.Workloads) == 0 {
		c.Workloads = slices.DeleteFunc(slices.Clone(Workloads), namedOnly)
	}
	for _, w := range c.Workloads {
		if !slices.Contains(Workloads, w) && w != "crds" && w != "openapi" && w != "fairness" && w != "admission" && w != "fields" {
			return fmt.Errorf("unknown workload %q: want some of %s", w, strings.Join(Workloads, ","))
		}
	}
	if c.Concurrency == 0 {
		c.Concurrency = 10
	}
	if c.Count == 0 && c.Duration == 0 {
		c.Count = 1000
	}
	if c.Objects == 0 {
		c.Objects = 1000
	}
	if c.AdmissionRounds == 0 {
		c.AdmissionRounds = 5
	}
	if c.AdmissionCopies == 0 {
		c.AdmissionCopies = 1
	}
	if c.FieldsRounds == 0 {
		c.FieldsRounds = 3
	}
	if c.PageSize == 0 {
		c.PageSize = 500
	}
	if c.Watchers == 0 {
		c.Watchers = 10
	}
	if c.WatchTimeout == 0 {
		c.WatchTimeout = 30 * time.Second
	}
	switch c.WatchAs {
	case "":
		c.WatchAs = WatchAsJSON
	case WatchAsJSON, WatchAsMetadata, WatchAsMetadataProtobuf:
	default:
		return fmt.Errorf("unknown watch form %q: want %s, %s or %s", c.WatchAs, WatchAsJSON, WatchAsMetadata, WatchAsMetadataProtobuf)
	}
	if c.ClientGo && c.WatchAs == WatchAsMetadata {
		return fmt.Errorf("watch form %s with client-go: its metadata client asks for protobuf first; use %s, or the raw client", WatchAsMetadata, WatchAsMetadataProtobuf)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.DataDir == "" {
		c.DataDir = ".crdserver"
	}
	if c.QuietRate == 0 {
		c.QuietRate = 20
	}
	switch {
	case c.QuietRate < 0 || c.NoisyRate < 0:
		return errors.New("quiet and noisy rates must not be negative")
	case slices.Contains(c.AsGroups, "system:masters"):
		// Its members bypass the fair queues and authorization: a run
		// in it would measure neither.
		return errors.New("the load generator's users must not be in system:masters")
	case c.Concurrency < 0 || c.Count < 0 || c.Duration < 0 || c.Objects < 0 || c.PageSize < 0 || c.Watchers < 0 || c.WatchTimeout < 0 || c.Rate < 0:
		return errors.New("concurrency, count, duration, rate, objects, page size, watchers and watch timeout must not be negative")
	case c.AdmissionRounds < 0 || c.AdmissionCopies < 0 || c.FieldsRounds < 0:
		return errors.New("admission rounds and copies and fields rounds must not be negative")
	case c.ObjectSize < 0:
		return errors.New("object size must not be negative")
	}
	return nil
}

// RESTConfig loads a kubeconfig (empty: client-go's default rules) and lifts
// client-side rate limiting out of the way, so the server alone sets the pace.
func RESTConfig(kubeconfig string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	cfg.QPS = 100000
	cfg.Burst = 100000
	cfg.UserAgent = "crdserver-bench"
	return cfg, nil
}

// Run sets up the target resource, runs the selected workloads one after
// another, measures etcd if asked, and cleans up (also when ctx is cancelled
// midway). It returns the report of what ran even when an error occurs later;
// cleanup failures are returned as an error next to a complete report.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.complete(); err != nil {
		return nil, err
	}
	restCfg, err := RESTConfig(cfg.Kubeconfig)
	if err != nil {
		return nil, err
	}
	restCfg.DisableCompression = cfg.DisableCompression
	admin := restCfg
	var ungrant func(context.Context) error
	if cfg.AsUser != "" {
		if ungrant, err = grant(ctx, admin, "crdserver-bench-"+cfg.AsUser, cfg.AsUser, cfg.AsGroups); err != nil {
			return nil, err
		}
		defer func() {
			if ungrant != nil {
				ungrant(context.WithoutCancel(ctx))
			}
		}()
		if restCfg, err = asUser(admin, cfg.DataDir, cfg.AsUser, cfg.AsGroups); err != nil {
			return nil, err
		}
		if err := waitAllowed(ctx, restCfg); err != nil {
			return nil, err
		}
	}
	client, err := dynamic.NewForConfig(restCfg)
	if err != nil {
		return nil, fmt.Errorf("creating client: %w", err)
	}
	b, err := newBench(cfg, client)
	if err != nil {
		return nil, err
	}
	if b.http, err = httpClient(restCfg, cfg); err != nil {
		return nil, fmt.Errorf("creating HTTP client: %w", err)
	}
	b.host = restCfg.Host
	b.hosts = append([]string{restCfg.Host}, cfg.Servers...)
	b.restCfg, b.admin = restCfg, admin
	if cfg.ClientGo && cfg.WatchAs == WatchAsMetadataProtobuf {
		if b.meta, err = b.metadataResource(restCfg); err != nil {
			return nil, fmt.Errorf("creating metadata client: %w", err)
		}
	}
	report := &Report{
		Server:      restCfg.Host,
		Resource:    cfg.Resource,
		ObjectSize:  cfg.ObjectSize,
		Concurrency: cfg.Concurrency,
		Count:       cfg.Count,
		Duration:    cfg.Duration,
		Rate:        cfg.Rate,
		Watchers:    cfg.Watchers,
		WatchAs:     cfg.WatchAs,
		ClientGo:    cfg.ClientGo,
		HTTP1:       cfg.HTTP1,
	}
	cfg.Logger.Info("bench starting", "server", restCfg.Host, "resource", cfg.Resource, "run", b.runID,
		"concurrency", cfg.Concurrency, "count", cfg.Count, "duration", cfg.Duration, "rate", cfg.Rate, "objectSize", cfg.ObjectSize)

	defer func() {
		if b.hook != nil {
			b.hook.close()
		}
	}()
	runErr := b.run(ctx, report)
	if cfg.SkipCleanup {
		return report, runErr
	}
	// Clean up even after Ctrl-C, within a bound of its own.
	cleanCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
	defer cancel()
	if err := b.cleanup(cleanCtx); err != nil {
		return report, errors.Join(runErr, fmt.Errorf("cleanup: %w", err))
	}
	return report, runErr
}

// httpClient is the raw client's HTTP client: client-go's (HTTP/2), or
// one speaking HTTP/1.1 with a connection per operation in flight.
func httpClient(restCfg *rest.Config, cfg Config) (*http.Client, error) {
	if !cfg.HTTP1 {
		return rest.HTTPClientFor(restCfg)
	}
	tlsCfg, err := rest.TLSConfigFor(restCfg)
	if err != nil {
		return nil, err
	}
	conns := cfg.Concurrency + cfg.Watchers
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig:     tlsCfg,
		TLSNextProto:        map[string]func(string, *tls.Conn) http.RoundTripper{}, // no HTTP/2
		MaxIdleConnsPerHost: conns,
		MaxConnsPerHost:     conns,
		Proxy:               http.ProxyFromEnvironment,
		DisableCompression:  cfg.DisableCompression,
	}}, nil
}

func newRunID() string {
	var b [4]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
