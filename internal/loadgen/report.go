package loadgen

import (
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// WriteTable writes the report as a fixed-width table, one row per result,
// followed by the first error of every result that had errors.
func WriteTable(w io.Writer, r *Report) error {
	limit := fmt.Sprintf("count=%d", r.Count)
	if r.Duration > 0 {
		limit = fmt.Sprintf("duration=%v", r.Duration)
		if r.Count > 0 {
			limit = fmt.Sprintf("count=%d duration=%v", r.Count, r.Duration)
		}
	}
	if r.Rate > 0 {
		limit += fmt.Sprintf(" rate=%g/s", r.Rate)
	}
	client := "raw"
	switch {
	case r.ClientGo:
		client = "client-go"
	case r.HTTP1:
		client = "raw-http1"
	}
	watchers := fmt.Sprintf("watchers=%d", r.Watchers)
	if r.WatchAs != "" && r.WatchAs != WatchAsJSON {
		watchers += " watchAs=" + r.WatchAs
	}
	fmt.Fprintf(w, "server=%s resource=%s objectSize=%dB concurrency=%d %s %s client=%s\n",
		r.Server, r.Resource, r.ObjectSize, r.Concurrency, limit, watchers, client)
	fmt.Fprintf(w, "%-12s %9s %7s %10s %10s %10s %10s %10s%s\n", "WORKLOAD", "OPS", "ERRORS", "OPS/S", "P50", "P90", "P99", "MAX", usageHeader(r))
	for _, res := range r.Results {
		fmt.Fprintf(w, "%-12s %9d %7d %10.1f %10s %10s %10s %10s%s\n",
			res.Name, res.Ops, res.Errors, res.OpsPerSecond(),
			formatLatency(res.P50), formatLatency(res.P90), formatLatency(res.P99), formatLatency(res.Max), usageCells(res))
	}
	for _, res := range r.Results {
		if res.FirstError != "" {
			fmt.Fprintf(w, "%s: %d errors; first: %s\n", res.Name, res.Errors, res.FirstError)
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintln(w, n)
	}
	return nil
}

// usageHeader is the heading of the server usage columns, when a result
// has them.
func usageHeader(r *Report) string {
	for _, res := range r.Results {
		if res.Server != nil {
			return fmt.Sprintf(" %12s %9s %9s %9s", "SRV-CPU/OP", "RSS-BEFORE", "RSS-PEAK", "RSS-AFTER")
		}
	}
	return ""
}

// usageCells are a result's server usage columns: CPU per operation and
// RSS in MiB.
func usageCells(res Result) string {
	u := res.Server
	if u == nil {
		return ""
	}
	perOp := time.Duration(0)
	if n := res.Ops + res.Errors; n > 0 {
		perOp = u.CPU / time.Duration(n)
	}
	mib := func(b int64) string { return fmt.Sprintf("%.1fMiB", float64(b)/(1<<20)) }
	return fmt.Sprintf(" %12s %9s %9s %9s", formatLatency(perOp), mib(u.RSSBefore), mib(u.RSSPeak), mib(u.RSSAfter))
}

// formatLatency prints milliseconds with three decimals, one unit for every
// cell so columns compare at a glance.
func formatLatency(d time.Duration) string {
	return fmt.Sprintf("%.3fms", float64(d)/float64(time.Millisecond))
}

// jsonReport is the --json form of a Report; latencies in milliseconds.
type jsonReport struct {
	Server          string       `json:"server"`
	Resource        string       `json:"resource"`
	ObjectSize      int          `json:"objectSize"`
	Concurrency     int          `json:"concurrency"`
	Count           int          `json:"count,omitempty"`
	DurationSeconds float64      `json:"durationSeconds,omitempty"`
	Rate            float64      `json:"rate,omitempty"`
	Watchers        int          `json:"watchers"`
	WatchAs         string       `json:"watchAs,omitempty"`
	ClientGo        bool         `json:"clientGo,omitempty"`
	HTTP1           bool         `json:"http1,omitempty"`
	Results         []jsonResult `json:"results"`
	Notes           []string     `json:"notes,omitempty"`
}

type jsonResult struct {
	Workload       string  `json:"workload"`
	Ops            int     `json:"ops"`
	Errors         int     `json:"errors"`
	ElapsedSeconds float64 `json:"elapsedSeconds"`
	OpsPerSecond   float64 `json:"opsPerSecond"`
	P50Ms          float64 `json:"p50Ms"`
	P90Ms          float64 `json:"p90Ms"`
	P99Ms          float64 `json:"p99Ms"`
	MaxMs          float64 `json:"maxMs"`
	FirstError     string  `json:"firstError,omitempty"`
	// Server usage, when measured: CPU seconds in all, RSS in bytes.
	ServerCPUSeconds float64 `json:"serverCPUSeconds,omitempty"`
	ServerRSSBefore  int64   `json:"serverRSSBefore,omitempty"`
	ServerRSSPeak    int64   `json:"serverRSSPeak,omitempty"`
	ServerRSSAfter   int64   `json:"serverRSSAfter,omitempty"`
}

// WriteJSON writes the report as one indented JSON document.
func WriteJSON(w io.Writer, r *Report) error {
	out := jsonReport{
		Server:          r.Server,
		Resource:        r.Resource,
		ObjectSize:      r.ObjectSize,
		Concurrency:     r.Concurrency,
		Count:           r.Count,
		DurationSeconds: r.Duration.Seconds(),
		Rate:            r.Rate,
		Watchers:        r.Watchers,
		ClientGo:        r.ClientGo,
		HTTP1:           r.HTTP1,
		Results:         []jsonResult{},
		Notes:           r.Notes,
	}
	// The watchers' form is named when it is not json, as in the table:
	// reports from before there was a choice have none.
	if r.WatchAs != WatchAsJSON {
		out.WatchAs = r.WatchAs
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	for _, res := range r.Results {
		jr := jsonResult{
			Workload:       res.Name,
			Ops:            res.Ops,
			Errors:         res.Errors,
			ElapsedSeconds: res.Elapsed.Seconds(),
			OpsPerSecond:   res.OpsPerSecond(),
			P50Ms:          ms(res.P50),
			P90Ms:          ms(res.P90),
			P99Ms:          ms(res.P99),
			MaxMs:          ms(res.Max),
			FirstError:     res.FirstError,
		}
		if u := res.Server; u != nil {
			jr.ServerCPUSeconds = u.CPU.Seconds()
			jr.ServerRSSBefore, jr.ServerRSSPeak, jr.ServerRSSAfter = u.RSSBefore, u.RSSPeak, u.RSSAfter
		}
		out.Results = append(out.Results, jr)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
