// Package health serves /healthz, /livez and /readyz as kube-apiserver
// does: each endpoint runs its named checks, a check has a path of its own
// below the endpoint, ?verbose lists every check, and ?exclude=NAME skips
// one. Load balancers and `kubectl get --raw '/readyz?verbose'` read these
// answers, so their text is upstream's.
package health

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Check is one named health check. Func returns nil when healthy; its
// error goes to the log and to an authorized request for the check alone,
// never to the endpoint's summary, which is public.
type Check struct {
	Name string
	Func func(ctx context.Context) error
}

// Endpoint is one health endpoint: Name is its path's first segment
// ("healthz", "livez" or "readyz").
type Endpoint struct {
	Name   string
	Checks []Check
}

// Paths are the endpoint's path and each of its checks'.
func (e Endpoint) Paths() []string {
	paths := []string{"/" + e.Name}
	for _, c := range e.Checks {
		paths = append(paths, "/"+e.Name+"/"+c.Name)
	}
	return paths
}

// timeout bounds each check.
const timeout = 2 * time.Second

// Observer records each check an endpoint runs (upstream's
// /metrics/slis); not the excluded ones, nor a check run at its own path.
type Observer interface {
	ObserveHealthcheck(check, endpoint string, err error)
}

// Handler serves endpoints under /<name> and /<name>/<check>; any other
// path below them is a plain-text 404. obs, when not nil, records the
// checks the endpoints run.
func Handler(log *slog.Logger, obs Observer, endpoints ...Endpoint) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		first, rest, sub := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		i := slices.IndexFunc(endpoints, func(e Endpoint) bool { return e.Name == first })
		if i < 0 {
			http.NotFound(w, r)
			return
		}
		e := endpoints[i]
		if !sub {
			e.serve(w, r, log, obs)
			return
		}
		j := slices.IndexFunc(e.Checks, func(c Check) bool { return c.Name == rest })
		if j < 0 {
			http.NotFound(w, r)
			return
		}
		if err := run(r.Context(), e.Checks[j]); err != nil {
			http.Error(w, "internal server error: "+err.Error(), http.StatusInternalServerError)
			return
		}
		writeText(w)
		fmt.Fprint(w, "ok")
	})
}

func run(ctx context.Context, c Check) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return c.Func(ctx)
}

func writeText(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
}

// serve runs every check not excluded. A failure answers 500 with the
// whole list (reasons withheld); success answers "ok", or the list with
// ?verbose.
func (e Endpoint) serve(w http.ResponseWriter, r *http.Request, log *slog.Logger, obs Observer) {
	q := r.URL.Query()
	excluded := q["exclude"]
	unmatched := slices.Clone(excluded)
	var out strings.Builder
	var failed []string
	for _, c := range e.Checks {
		if slices.Contains(excluded, c.Name) {
			unmatched = slices.DeleteFunc(unmatched, func(n string) bool { return n == c.Name })
			fmt.Fprintf(&out, "[+]%s excluded: ok\n", c.Name)
			continue
		}
		err := run(r.Context(), c)
		if obs != nil {
			obs.ObserveHealthcheck(c.Name, e.Name, err)
		}
		if err != nil {
			fmt.Fprintf(&out, "[-]%s failed: reason withheld\n", c.Name)
			failed = append(failed, c.Name)
			log.Debug("health check failed", "endpoint", e.Name, "check", c.Name, "err", err)
			continue
		}
		fmt.Fprintf(&out, "[+]%s ok\n", c.Name)
	}
	if len(unmatched) > 0 {
		slices.Sort(unmatched)
		quoted := make([]string, len(unmatched))
		for i, n := range unmatched {
			quoted[i] = strconv.Quote(n)
		}
		fmt.Fprintf(&out, "warn: some health checks cannot be excluded: no matches for %s\n", strings.Join(quoted, ","))
	}
	if len(failed) > 0 {
		http.Error(w, out.String()+e.Name+" check failed", http.StatusInternalServerError)
		return
	}
	writeText(w)
	if _, verbose := q["verbose"]; !verbose {
		fmt.Fprint(w, "ok")
		return
	}
	fmt.Fprintf(w, "%s%s check passed\n", out.String(), e.Name)
}
