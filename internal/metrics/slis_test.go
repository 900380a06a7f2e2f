package metrics

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
)

// /metrics/slis as kube-apiserver writes it for the same runs: the last
// result of each check per endpoint, counts by outcome, and the start time.
func TestSLIs(t *testing.T) {
	s := NewSLIs()
	down := errors.New("etcd unreachable")
	s.ObserveHealthcheck("etcd", "livez", nil)
	s.ObserveHealthcheck("etcd", "livez", nil)
	s.ObserveHealthcheck("informer-sync", "readyz", down)
	s.ObserveHealthcheck("informer-sync", "readyz", nil)
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics/slis", nil))
	got, _, _ := strings.Cut(rec.Body.String(), "# HELP process_start_time_seconds")
	want := `# HELP kubernetes_healthcheck [STABLE] This metric records the result of a single healthcheck.
# TYPE kubernetes_healthcheck gauge
kubernetes_healthcheck{name="etcd",type="livez"} 1
kubernetes_healthcheck{name="informer-sync",type="readyz"} 1
# HELP kubernetes_healthchecks_total [STABLE] This metric records the results of all healthcheck.
# TYPE kubernetes_healthchecks_total counter
kubernetes_healthchecks_total{name="etcd",status="success",type="livez"} 2
kubernetes_healthchecks_total{name="informer-sync",status="error",type="readyz"} 1
kubernetes_healthchecks_total{name="informer-sync",status="success",type="readyz"} 1
`
	if got != want {
		t.Errorf("/metrics/slis:\n%s\nwant\n%s", got, want)
	}
	if !strings.Contains(rec.Body.String(), "# HELP process_start_time_seconds [ALPHA] Start time of the process since unix epoch in seconds.\n# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds ") {
		t.Errorf("no process_start_time_seconds in\n%s", rec.Body)
	}
}
