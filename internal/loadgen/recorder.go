package loadgen

import (
	"math"
	"slices"
	"sync"
	"time"
)

// Recorder collects the latencies of successful operations and counts the
// failed ones. It is safe for concurrent use. Every sample is kept (8 bytes
// each) so percentiles are exact rather than bucketed; a benchmark run of a
// few million operations stays within tens of megabytes.
type Recorder struct {
	mu       sync.Mutex // guards the fields below
	samples  []time.Duration
	errors   int
	firstErr string
}

// Observe records one successful operation that took d.
func (r *Recorder) Observe(d time.Duration) {
	r.mu.Lock()
	r.samples = append(r.samples, d)
	r.mu.Unlock()
}

// Fail records one failed operation; the first error's text is kept for the
// report.
func (r *Recorder) Fail(err error) {
	r.mu.Lock()
	if r.errors == 0 && err != nil {
		r.firstErr = err.Error()
	}
	r.errors++
	r.mu.Unlock()
}

// Summary describes what a Recorder saw. Latencies are zero when no operation
// succeeded.
type Summary struct {
	Ops        int // successful operations
	Errors     int
	P50        time.Duration
	P90        time.Duration
	P99        time.Duration
	Max        time.Duration
	FirstError string
}

// Summary computes percentiles over everything recorded so far.
func (r *Recorder) Summary() Summary {
	r.mu.Lock()
	sorted := slices.Clone(r.samples)
	s := Summary{Ops: len(r.samples), Errors: r.errors, FirstError: r.firstErr}
	r.mu.Unlock()

	slices.Sort(sorted)
	s.P50 = Percentile(sorted, 50)
	s.P90 = Percentile(sorted, 90)
	s.P99 = Percentile(sorted, 99)
	s.Max = Percentile(sorted, 100)
	return s
}

// Percentile returns the p-th percentile (0 < p <= 100) of sorted by the
// nearest-rank method: the smallest sample such that at least p percent of
// the samples are less than or equal to it. It is always one of the samples,
// never an interpolation, and zero for no samples.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}
