// Package metrics holds one server's Prometheus metrics and serves them in
// the text exposition format. Names, labels and buckets are upstream's
// (k8s.io/apiserver's endpoint, storage and watch cache metrics), so that
// dashboards and alerts written for kube-apiserver read crdserver unchanged.
//
// Metrics live in a registry of their own per server, not in a global one:
// several servers in one process (crdtest) count apart.
package metrics

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Component is the component label of every request metric: upstream's
// value for requests the API server serves itself.
const Component = "apiserver"

// latencyBuckets are upstream's buckets of apiserver_request_duration_seconds
// and etcd_request_duration_seconds, chosen there for the latency SLOs.
var latencyBuckets = []float64{0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3,
	4, 5, 6, 8, 10, 15, 20, 30, 45, 60}

// requestLabels are the labels of upstream's request latency histogram;
// its counter adds "code".
var requestLabels = []string{"verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component"}

// Metrics is one server's metrics. Its methods are safe for concurrent use;
// a nil *Metrics records nothing.
type Metrics struct {
	reg *prometheus.Registry

	requests    *prometheus.CounterVec
	latency     *prometheus.HistogramVec
	longRunning *prometheus.GaugeVec
	watchEvents *prometheus.CounterVec
	etcd        *prometheus.HistogramVec
	admission   *prometheus.HistogramVec
	conversion  *prometheus.HistogramVec
	deprecated  *prometheus.GaugeVec

	// series caches each request label set's counter and histogram:
	// client_golang's lookup by label values (validate, hash, lock) costs
	// several times the counting itself, on every request.
	series sync.Map // seriesKey → *requestSeries
}

type seriesKey struct {
	Request
	code int
}

type requestSeries struct {
	count   prometheus.Counter
	latency prometheus.Observer
}

// New returns a server's metrics, with the Go runtime and process
// collectors upstream's registry has too.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_request_total",
			Help: "Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.",
		}, append(requestLabels, "code")),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_request_duration_seconds",
			Help:    "Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.",
			Buckets: latencyBuckets,
		}, requestLabels),
		longRunning: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_longrunning_requests",
			Help: "Gauge of all active long-running apiserver requests broken out by verb, group, version, resource, scope and component. Not all requests are tracked this way.",
		}, []string{"verb", "group", "version", "resource", "subresource", "scope", "component"}),
		watchEvents: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_watch_events_total",
			Help: "Number of events sent in watch clients",
		}, []string{"group", "version", "resource"}),
		etcd: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "etcd_request_duration_seconds",
			Help:    "Etcd request latency in seconds for each operation and object type.",
			Buckets: latencyBuckets,
		}, []string{"operation", "group", "resource"}),
		admission: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_admission_webhook_admission_duration_seconds",
			Help:    "Admission webhook latency histogram in seconds, identified by name and broken out for each operation and API resource and type (validate or admit).",
			Buckets: []float64{0.005, 0.025, 0.1, 0.5, 1.0, 2.5, 10, 25},
		}, []string{"name", "type", "operation", "rejected"}),
		conversion: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_crd_conversion_webhook_duration_seconds",
			Help:    "CRD webhook conversion duration in seconds",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}, []string{"crd_name", "from_version", "to_version", "succeeded"}),
		deprecated: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_requested_deprecated_apis",
			Help: "Gauge of deprecated APIs that have been requested, broken out by API group, version, resource, subresource, and removed_release.",
		}, []string{"group", "version", "resource", "subresource", "removed_release"}),
	}
	m.reg.MustRegister(m.requests, m.latency, m.longRunning, m.watchEvents, m.etcd, m.admission, m.conversion, m.deprecated,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the metrics in Prometheus' text format (or what the
// scraper negotiates).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Register adds a collector, for values read when scraped (object counts).
func (m *Metrics) Register(c prometheus.Collector) {
	m.reg.MustRegister(c)
}

// Request is what a request is counted by: upstream's labels but the code.
type Request struct {
	Verb, DryRun, Group, Version, Resource, Subresource, Scope string
}

// ObserveRequest counts a finished request and its latency.
func (m *Metrics) ObserveRequest(r Request, code int, elapsed time.Duration) {
	if m == nil {
		return
	}
	k := seriesKey{r, code}
	v, ok := m.series.Load(k)
	if !ok {
		v, _ = m.series.LoadOrStore(k, &requestSeries{
			count:   m.requests.WithLabelValues(r.Verb, r.DryRun, r.Group, r.Version, r.Resource, r.Subresource, r.Scope, Component, codeString(code)),
			latency: m.latency.WithLabelValues(r.Verb, r.DryRun, r.Group, r.Version, r.Resource, r.Subresource, r.Scope, Component),
		})
	}
	s := v.(*requestSeries)
	s.count.Inc()
	s.latency.Observe(elapsed.Seconds())
}

// LongRunning returns the gauge of open long-running requests (watches)
// like r; the caller adds one while it serves one.
func (m *Metrics) LongRunning(r Request) prometheus.Gauge {
	return m.longRunning.WithLabelValues(r.Verb, r.Group, r.Version, r.Resource, r.Subresource, r.Scope, Component)
}

// DeprecatedRequested notes that a deprecated version of a resource was
// requested, as upstream's gauge does: set to 1 and left so.
func (m *Metrics) DeprecatedRequested(group, version, resource, subresource, removedRelease string) {
	if m == nil {
		return
	}
	m.deprecated.WithLabelValues(group, version, resource, subresource, removedRelease).Set(1)
}

// Counter is the one method of a counter the packages that count need;
// prometheus.Counter has it.
type Counter interface{ Add(float64) }

// WatchEvents returns the counter of events sent to watch clients of a
// group, version and resource. Watches look it up once, then count with
// one atomic add per write.
func (m *Metrics) WatchEvents(group, version, resource string) Counter {
	if m == nil {
		return nopCounter{}
	}
	return m.watchEvents.WithLabelValues(group, version, resource)
}

type nopCounter struct{}

func (nopCounter) Add(float64) {}

// AdmissionWebhook records the latency of one call of an admission webhook;
// typ is "admit" (mutating) or "validating", operation the admission
// operation (CREATE, UPDATE, ...), rejected whether it refused.
func (m *Metrics) AdmissionWebhook(name, typ, operation string, rejected bool, elapsed time.Duration) {
	if m == nil {
		return
	}
	m.admission.WithLabelValues(name, typ, operation, strconv.FormatBool(rejected)).Observe(elapsed.Seconds())
}

// ConversionWebhook records the latency of one ConversionReview of a CRD.
func (m *Metrics) ConversionWebhook(crd, from, to string, succeeded bool, elapsed time.Duration) {
	if m == nil {
		return
	}
	m.conversion.WithLabelValues(crd, from, to, strconv.FormatBool(succeeded)).Observe(elapsed.Seconds())
}

// codes holds the decimal text of every HTTP status, so that labelling a
// request allocates nothing.
var codes = func() (c [600]string) {
	for i := range c {
		c[i] = strconv.Itoa(i)
	}
	return c
}()

func codeString(code int) string {
	if code >= 0 && code < len(codes) {
		return codes[code]
	}
	return strconv.Itoa(code)
}
