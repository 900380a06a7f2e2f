package filters

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crdserver/crdserver/internal/audit"
	"github.com/crdserver/crdserver/internal/authn"
)

// BenchmarkAuditWrite is the cost audit adds to a write (a 2 KiB create)
// at each level, including writing the events to a file: the log is
// closed, so every event is on disk, before the timer stops. "off" is the
// same chain without a policy. Compare the difference per op with a
// write's server CPU (crdserver bench, SRV-CPU/OP, about 1.2ms).
func BenchmarkAuditWrite(b *testing.B) {
	body := `{"apiVersion":"bench.crdserver.io/v1","kind":"Widget","metadata":{"name":"w","namespace":"ns"},"spec":{"data":"` + strings.Repeat("x", 2000) + `"}}`
	for _, level := range []string{"off", "Metadata", "Request", "RequestResponse"} {
		b.Run(level, func(b *testing.B) {
			var cfg AuditConfig
			var log *audit.Log
			if level != "off" {
				p, err := audit.ParsePolicy([]byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: " + level + "}]"))
				if err != nil {
					b.Fatal(err)
				}
				if log, err = audit.NewLog(audit.LogConfig{Path: filepath.Join(b.TempDir(), "audit.log")}); err != nil {
					b.Fatal(err)
				}
				cfg = AuditConfig{Policy: p, Sink: log}
			}
			user := &authn.User{Name: "admin", Groups: []string{"system:masters", "system:authenticated"}}
			h := Chain(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusCreated)
				w.Write([]byte(body))
			}), AuditID, RequestInfo,
				Authenticate(authn.AuthenticatorFunc(func(*http.Request) (*authn.User, bool, error) { return user, true, nil }), nil),
				Audit(cfg))
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := processCPU()
			for range b.N {
				r := httptest.NewRequest("POST", "/apis/bench.crdserver.io/v1/namespaces/ns/widgets", strings.NewReader(body))
				r.Header.Set("Content-Type", "application/json")
				h.ServeHTTP(httptest.NewRecorder(), r)
			}
			if log != nil {
				log.Close()
				if log.Dropped() > 0 {
					b.Logf("%d events dropped", log.Dropped())
				}
			}
			// The process's CPU time, the writer goroutine's included: on
			// a shared machine it varies far less than the time per op.
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// processCPU is the user and system CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
