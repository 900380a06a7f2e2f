// Command run runs upstream Kubernetes' API machinery e2e specs against a
// fresh crdserver and prints what passed and what failed:
//
//	go run -C compat/e2e ./cmd/run [flags]
//
// It builds the e2e test binary of this module once (cached in the user's
// cache directory), builds crdserver from this checkout and starts it on a
// temporary data directory and a free port, runs the selected specs with
// the framework flags that suit a server without nodes, and reads the JUnit
// report. With --against=kube-apiserver it does the same against a
// kube-apiserver built from the same Kubernetes release, on an etcd from
// test/etcdserver, so the two figures can be compared.
//
// kubectl (for the specs that call it) is $KUBECTL, kubectl on PATH, or
// upstream's kubectl built from the Go module proxy (test/kubectlbin).
//
// The exit status is 0 when no spec failed, 1 when some did, 2 on any other
// error.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// The subset of issue 15: API machinery specs about custom resources and
// the machinery around them, without the ones that need a quiet cluster,
// break it on purpose, are known to flake or take long. It also takes the
// machinery every client meets (server-side apply, watch lists and their
// metadata and Table forms, client-go's negotiation, request timeouts,
// OpenAPI v3, the version, storage version migration), the garbage
// collector's custom resource specs and its dependency circle (of stored
// pods), and the API specs of the built-ins served that need no pods
// (ConfigMaps, Secrets, Leases, RuntimeClasses, PodTemplates, CronJobs;
// CSRs, service accounts and their tokens, access and self-subject reviews,
// Events, Services, Endpoints, EndpointSlices, Ingresses, IngressClasses,
// NetworkPolicies, LimitRanges), the API specs of the kinds a kubelet,
// scheduler or CSI driver would act on, which pass with none running
// (stored Pods read as Tables and applied, a pod's token automount,
// PersistentVolumes and claims, StorageClasses, CSIDrivers,
// VolumeAttachments, CSIStorageCapacities, ClusterTrustBundles,
// PodCertificateRequests, ComponentStatuses, ServiceCIDRs and IPAddresses),
// the RuntimeClass admission plugin's refusals, API priority and fairness's
// objects and classification, kubectl's cluster-info dump, quotas, waits
// and node status, the metrics and SLIs endpoints, and the ResourceQuota
// specs (objects, replication controllers, pods' compute, claims' storage,
// scopes; not a claim's volume attributes class changed once bound: no
// volume controller binds it). kube-apiserver alone fails the ResourceQuota
// specs that wait for a quota's status to be counted: it runs no
// kube-controller-manager.
const (
	defaultFocus = `\[sig-api-machinery\].*(CustomResource|CRD|FieldValidation|Discovery|ValidatingAdmissionPolicy|MutatingAdmissionPolicy|ratchet|x-kubernetes-validations|Watchers|Servers with support for API chunking|Servers with support for Table)` +
		`|\[sig-api-machinery\] (ServerSideApply|API Streaming|client-go|Server request timeout|OpenAPIV3|server version|StorageVersionMigration|Garbage collector should (support .* deletion of custom resources|not be blocked by dependency circle)|Generated clientset should create v1 cronJobs|Namespaces should (apply|patch|ensure that all services|delete fast enough)` +
		`|ResourceQuota should (create a ResourceQuota and (ensure its status is promptly calculated|capture the life of a ((service|secret|configMap|replica set|replication controller|custom resource|pod)\.|persistent volume claim))|be able to update and delete ResourceQuota|manage the lifecycle of a ResourceQuota|apply changes to a resourcequota status|verify ResourceQuota with (best effort|terminating) scope|verify ResourceQuota with cross namespace pod affinity scope)` +
		`|ResourceQuota \[Feature:PodPriority\] should verify ResourceQuota's (multiple )?priority class scope|ResourceQuota \[FeatureGate:VolumeAttributesClass\] .*against 2 pvcs with same volume attributes class)` +
		`|\[sig-node\] (ConfigMap should (fail to create ConfigMap with empty key|run through a ConfigMap lifecycle|update ConfigMap successfully)|Secrets should (fail to create secret due to empty secret key|patch a secret)|Lease lease API|RuntimeClass should (support RuntimeClasses API operations|reject a Pod requesting a (deleted|non-existent) RuntimeClass)|PodTemplates)` +
		`|\[sig-scheduling\] LimitRange should (list, patch and delete a LimitRange by collection|create a LimitRange with defaults and ensure pod has those defaults applied)` +
		`|\[sig-storage\] ((ConfigMap|Secrets) should be immutable|CSINodes CSI Conformance should run through the lifecycle)|\[sig-apps\] (CronJob should support CronJob API operations|DisruptionController (Listing PodDisruptionBudgets for all namespaces should list and delete|should create a PodDisruptionBudget))` +
		`|\[sig-auth\] (Certificates API .*should support CSR API operations|SelfSubjectReview (should support SelfSubjectReview API operations|testing SSR in different API groups authentication/v1\b)|ServiceAccounts should (update a ServiceAccount|run through the lifecycle|create a serviceAccountToken|guarantee kube-root-ca.crt)|SubjectReview should support)` +
		`|\[sig-instrumentation\] (Events API|Events should)` +
		`|\[sig-storage\] (CSIInlineVolumes should (support CSIVolumeSource in Pod API|run through the lifecycle of a CSIDriver)|VolumeAttachment Conformance|CSIStorageCapacity should support|PersistentVolumes CSI Conformance|StorageClasses CSI Conformance|VolumeAttributesClass .*lifecycle)` +
		`|\[sig-auth\] (ServiceAccounts should allow opting out of API token automount|PodCertificateRequest API .*should support PodCertificateRequest API operations|.*CRUD Tests certificates\.k8s\.io/v1 ClusterTrustBundles)` +
		`|\[sig-cli\] Kubectl client (Kubectl get componentstatuses|Kubectl cluster-info dump|Kubectl create quota|kubectl subresource flag GET on status subresource of built-in type \(node\)|kubectl wait should ignore not found error with --for=delete)` +
		`|\[sig-instrumentation\] MetricsGrabber should grab all metrics (from API server|slis from API server)` +
		`|\[sig-network\] (Services should (delete a collection of services|find a service from listing all namespaces|complete a service status lifecycle)|IngressClass API|Ingress API|DefaultIngressClass|IngressClass should allow IngressClass to have Namespace-scoped|EndpointSlice should support creating EndpointSlice API operations|Netpol API|Endpoints should test the lifecycle|API Server should|ServiceCIDR and IPAddress API)` +
		`|\[sig-cli\] (Kubectl client (Kubectl (api-versions|cluster-info should|describe should check if kubectl describe prints relevant information for cronjob|diff|validation|version)|Proxy server|kubectl subresource flag should not)|kubectl apply (should reuse port|apply set/view|Kubectl prune))` +
		`|\[sig-api-machinery\] API priority and fairness should (ensure that requests can be classified|support (FlowSchema|PriorityLevelConfiguration) API operations)`
	// [Serial] specs are not skipped: the suite runs one spec at a time.
	defaultSkip = `\[Disruptive\]|\[Flaky\]|\[Slow\]|` + podSpecs
	// podSpecs are specs in the focus that deploy pods (conversion webhook
	// servers, an aggregated API server), which a server without nodes
	// never runs: against kube-apiserver they hang until interrupted.
	podSpecs = `CustomResourceConversionWebhook|CustomResourceFieldSelectors|OpenAPI V3 for Aggregated APIServer`
)

func main() {
	var o options
	flag.StringVar(&o.against, "against", "crdserver", "server to test: crdserver, kube-apiserver, or both (one after the other)")
	flag.StringVar(&o.focus, "focus", defaultFocus, "Ginkgo focus: regular expression of the specs to run")
	flag.StringVar(&o.skip, "skip", defaultSkip, "Ginkgo skip: regular expression of the specs not to run")
	flag.DurationVar(&o.timeout, "timeout", 30*time.Minute, "time limit of one suite run")
	flag.StringVar(&o.out, "out", "", "directory for logs and reports (default: a new temporary directory)")
	flag.DurationVar(&o.stall, "stall", 2*time.Minute, "interrupt a spec when no spec has finished for this long (0: never)")
	flag.BoolVar(&o.verbose, "v", false, "stream the suite's output instead of only writing it to the log")
	flag.BoolVar(&o.keep, "keep", false, "keep the servers' binaries and data in the output directory, not only their logs and reports")
	flag.StringVar(&o.requests, "requests", "", "instead of the suite, send this file's requests to crdserver and kube-apiserver and print where their answers differ (see requests.go; testdata/requests.txt)")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "run: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	failed, err := run(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "run:", err)
		os.Exit(2)
	}
	if failed {
		os.Exit(1)
	}
}

type options struct {
	against     string
	focus, skip string
	timeout     time.Duration
	out         string
	verbose     bool
	stall       time.Duration
	requests    string
	keep        bool
}

// maxRounds bounds the rounds of one server's run: each interrupted spec
// costs one.
const maxRounds = 10

// run builds what is needed, then runs the suite against each server asked
// for. failed reports whether any spec failed.
func run(ctx context.Context, o options) (failed bool, err error) {
	var targets []string
	switch o.against {
	case "crdserver", "kube-apiserver":
		targets = []string{o.against}
	case "both":
		targets = []string{"crdserver", "kube-apiserver"}
	default:
		return false, fmt.Errorf("--against=%q: want crdserver, kube-apiserver or both", o.against)
	}
	paths, err := locate()
	if err != nil {
		return false, err
	}
	if o.out == "" {
		if o.out, err = os.MkdirTemp("", "crdserver-upstream-e2e-"); err != nil {
			return false, err
		}
	}
	if o.out, err = filepath.Abs(o.out); err != nil {
		return false, err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return false, err
	}
	fmt.Printf("logs and reports in %s\n", o.out)
	if !o.keep {
		// Each run would otherwise leave two binaries and two servers'
		// data behind, a quarter of a gigabyte, in a directory nobody
		// removes. The servers have stopped by the time this runs.
		defer tidy(o.out)
	}
	if o.requests != "" {
		return runRequests(ctx, paths, o.out, o.requests)
	}

	start := time.Now()
	bin, err := buildSuite(ctx, paths)
	if err != nil {
		return false, err
	}
	kubectl, err := findKubectl()
	if err != nil {
		return false, err
	}
	fmt.Printf("built in %s: %s; kubectl %s\n", since(start), bin, kubectl)

	var results []*result
	for _, name := range targets {
		dir := filepath.Join(o.out, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return false, err
		}
		res, err := runAgainst(ctx, o, paths, name, dir, bin, kubectl)
		if err != nil {
			return false, fmt.Errorf("%s: %w", name, err)
		}
		results = append(results, res)
		res.print(os.Stdout)
		failed = failed || len(res.failed) > 0 || len(res.suiteFailures) > 0
	}
	if len(results) == 2 {
		compare(os.Stdout, results[0], results[1])
	}
	return failed, nil
}

// tidy removes what the servers' directories under out hold beyond logs,
// reports and credentials: the binaries built into them and the servers'
// storage.
func tidy(out string) {
	for _, server := range []string{"crdserver", "kube-apiserver"} {
		for _, heavy := range []string{"crdserver", "data", "etcdserver", "etcd"} {
			path := filepath.Join(out, server, heavy)
			if err := os.RemoveAll(path); err != nil {
				fmt.Fprintf(os.Stderr, "run: removing %s: %v\n", path, err)
			}
		}
	}
}

// runAgainst starts the named server in dir, runs the suite against it and
// reads the report.
func runAgainst(ctx context.Context, o options, paths paths, name, dir, bin, kubectl string) (*result, error) {
	start := time.Now()
	var srv *process
	var err error
	switch name {
	case "crdserver":
		srv, err = startCrdserver(ctx, paths, dir)
	case "kube-apiserver":
		srv, err = startKubeAPIServer(ctx, paths, dir)
	}
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	fmt.Printf("%s serving at %s after %s (log %s)\n", name, srv.url, since(start), srv.logPath)

	skip, err := skipCrashers(o.skip, srv)
	if err != nil {
		return nil, err
	}
	if err := registerNode(ctx, srv); err != nil {
		return nil, err
	}
	// Rounds: a round that stalls is interrupted, and the next one skips
	// every spec that already has an outcome.
	start = time.Now()
	var res *result
	var logs []string
	for round := 1; ; round++ {
		reportDir := filepath.Join(dir, fmt.Sprintf("report-%d", round))
		logPath := filepath.Join(dir, fmt.Sprintf("e2e-%d.log", round))
		logs = append(logs, logPath)
		roundSkip := skip
		if res != nil {
			for _, n := range res.ran() {
				roundSkip += "|" + regexp.QuoteMeta(n)
			}
		}
		stalled, err := runSuite(ctx, suiteRun{
			bin:        bin,
			kubeconfig: srv.kubeconfig,
			kubectl:    kubectl,
			focus:      o.focus,
			skip:       roundSkip,
			timeout:    o.timeout,
			reportDir:  reportDir,
			logPath:    logPath,
			workDir:    dir,
			verbose:    o.verbose,
			stall:      o.stall,
		})
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		r, rerr := readReport(filepath.Join(reportDir, "junit_01.xml"))
		if rerr != nil {
			if err != nil {
				return nil, fmt.Errorf("the suite failed (%v) without a readable report (%v); see %s", err, rerr, logPath)
			}
			return nil, rerr
		}
		if res == nil {
			res = r
		} else {
			res.merge(r)
		}
		if !stalled || round == maxRounds || r.total() == 0 {
			break
		}
	}
	res.server, res.took, res.log = name, time.Since(start), strings.Join(logs, " ")
	return res, nil
}

func since(t time.Time) string { return time.Since(t).Round(100 * time.Millisecond).String() }

// firstLine is s's first non-blank line, trimmed.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}
