package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// SLIs are the results of the health checks /healthz, /livez and /readyz
// ran, served at /metrics/slis as kube-apiserver serves them
// (component-base's slis registry): each check's last result per endpoint
// (kubernetes_healthcheck, 1 or 0), how often it passed and failed
// (kubernetes_healthchecks_total), and the process's start time.
type SLIs struct {
	reg   *prometheus.Registry
	last  *prometheus.GaugeVec
	total *prometheus.CounterVec
}

// processStart is when the process started, as upstream's
// process_start_time_seconds tells it.
var processStart = time.Now()

func NewSLIs() *SLIs {
	s := &SLIs{
		reg: prometheus.NewRegistry(),
		last: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kubernetes_healthcheck",
			Help: "[STABLE] This metric records the result of a single healthcheck.",
		}, []string{"name", "type"}),
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubernetes_healthchecks_total",
			Help: "[STABLE] This metric records the results of all healthcheck.",
		}, []string{"name", "type", "status"}),
	}
	s.reg.MustRegister(s.last, s.total, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "process_start_time_seconds",
		Help: "[ALPHA] Start time of the process since unix epoch in seconds.",
	}, func() float64 { return float64(processStart.UnixNano()) / 1e9 }))
	return s
}

// ObserveHealthcheck records one run of check name by endpoint typ
// ("healthz", "livez" or "readyz"); err nil is a pass.
func (s *SLIs) ObserveHealthcheck(name, typ string, err error) {
	v, status := 1.0, "success"
	if err != nil {
		v, status = 0, "error"
	}
	s.last.WithLabelValues(name, typ).Set(v)
	s.total.WithLabelValues(name, typ, status).Inc()
}

// Handler serves /metrics/slis.
func (s *SLIs) Handler() http.Handler { return promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{}) }
