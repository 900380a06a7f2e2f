package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// CacheStats are one resource's watch cache numbers at a scrape.
type CacheStats struct {
	schema.GroupResource
	Objects                                              int
	EventsReceived, EventsDispatched, TerminatedWatchers uint64
}

var (
	objectsDesc = prometheus.NewDesc("apiserver_storage_objects",
		"Number of stored objects at the time of last check split by kind. In case of a fetching error, the value will be -1.",
		[]string{"resource"}, nil)
	receivedDesc = prometheus.NewDesc("apiserver_watch_cache_events_received_total",
		"Counter of events received in watch cache broken by resource type.",
		[]string{"group", "resource"}, nil)
	dispatchedDesc = prometheus.NewDesc("apiserver_watch_cache_events_dispatched_total",
		"Counter of events dispatched in watch cache broken by resource type.",
		[]string{"group", "resource"}, nil)
	terminatedDesc = prometheus.NewDesc("apiserver_terminated_watchers_total",
		"Counter of watchers closed due to unresponsiveness broken by resource type.",
		[]string{"group", "resource"}, nil)
)

// Caches reports the watch caches' numbers, read from stats at every
// scrape: the caches count with plain atomics and know nothing of
// Prometheus, and a resource whose cache is gone leaves no stale series.
func Caches(stats func() []CacheStats) prometheus.Collector {
	return cacheCollector(stats)
}

type cacheCollector func() []CacheStats

func (c cacheCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- objectsDesc
	ch <- receivedDesc
	ch <- dispatchedDesc
	ch <- terminatedDesc
}

func (c cacheCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c() {
		// upstream's storage objects label is the group resource,
		// "crontabs.stable.example.com".
		ch <- prometheus.MustNewConstMetric(objectsDesc, prometheus.GaugeValue, float64(s.Objects), s.GroupResource.String())
		ch <- prometheus.MustNewConstMetric(receivedDesc, prometheus.CounterValue, float64(s.EventsReceived), s.Group, s.Resource)
		ch <- prometheus.MustNewConstMetric(dispatchedDesc, prometheus.CounterValue, float64(s.EventsDispatched), s.Group, s.Resource)
		ch <- prometheus.MustNewConstMetric(terminatedDesc, prometheus.CounterValue, float64(s.TerminatedWatchers), s.Group, s.Resource)
	}
}
