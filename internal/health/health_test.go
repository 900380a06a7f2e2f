package health_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/crdserver/crdserver/internal/health"
)

func TestHandler(t *testing.T) {
	ok := func(context.Context) error { return nil }
	down := func(context.Context) error { return errors.New("etcd unreachable") }
	live := []health.Check{{Name: "ping", Func: ok}, {Name: "etcd", Func: ok}}
	ready := []health.Check{{Name: "ping", Func: ok}, {Name: "poststarthook/rbac/bootstrap-roles", Func: ok}, {Name: "informer-sync", Func: down}}
	h := health.Handler(slog.New(slog.NewTextHandler(io.Discard, nil)), nil,
		health.Endpoint{Name: "livez", Checks: live}, health.Endpoint{Name: "readyz", Checks: ready})

	// Wanted answers are kube-apiserver 1.37's for the same checks.
	tests := []struct {
		path string
		code int
		body string
	}{
		{"/livez", 200, "ok"},
		{"/livez?verbose", 200, "[+]ping ok\n[+]etcd ok\nlivez check passed\n"},
		{"/livez?verbose&exclude=etcd&exclude=nope&exclude=alsonot", 200,
			"[+]ping ok\n[+]etcd excluded: ok\nwarn: some health checks cannot be excluded: no matches for \"alsonot\",\"nope\"\nlivez check passed\n"},
		{"/livez/etcd", 200, "ok"},
		{"/livez/nope", 404, "404 page not found\n"},
		{"/livez/", 404, "404 page not found\n"},
		{"/readyz", 500, "[+]ping ok\n[+]poststarthook/rbac/bootstrap-roles ok\n[-]informer-sync failed: reason withheld\nreadyz check failed\n"},
		{"/readyz?exclude=informer-sync", 200, "ok"},
		{"/readyz/poststarthook/rbac/bootstrap-roles", 200, "ok"},
		{"/readyz/informer-sync", 500, "internal server error: etcd unreachable\n"},
		{"/healthz", 404, "404 page not found\n"},
	}
	for _, tt := range tests {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", tt.path, nil))
		if rec.Code != tt.code || rec.Body.String() != tt.body {
			t.Errorf("GET %s: %d %q, want %d %q", tt.path, rec.Code, rec.Body, tt.code, tt.body)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "text/plain; charset=utf-8" {
			t.Errorf("GET %s: Content-Type %q", tt.path, ct)
		}
	}
}

// The endpoints' runs are observed as kube-apiserver's /metrics/slis
// records them: excluded checks and a check's own path are not.
func TestObserver(t *testing.T) {
	ok := func(context.Context) error { return nil }
	down := func(context.Context) error { return errors.New("etcd unreachable") }
	obs := &observed{}
	h := health.Handler(slog.New(slog.NewTextHandler(io.Discard, nil)), obs,
		health.Endpoint{Name: "livez", Checks: []health.Check{{Name: "ping", Func: ok}, {Name: "etcd", Func: ok}}},
		health.Endpoint{Name: "readyz", Checks: []health.Check{{Name: "ping", Func: ok}, {Name: "informer-sync", Func: down}}})
	for _, p := range []string{"/livez", "/readyz", "/readyz?exclude=informer-sync", "/livez/etcd", "/readyz/informer-sync"} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", p, nil))
	}
	want := "ping livez ok; etcd livez ok; ping readyz ok; informer-sync readyz etcd unreachable; ping readyz ok"
	if got := strings.Join(obs.runs, "; "); got != want {
		t.Errorf("observed %s\nwant     %s", got, want)
	}
}

type observed struct{ runs []string }

func (o *observed) ObserveHealthcheck(check, endpoint string, err error) {
	res := "ok"
	if err != nil {
		res = err.Error()
	}
	o.runs = append(o.runs, check+" "+endpoint+" "+res)
}
