package loadgen

import (
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func TestPercentile(t *testing.T) {
	oneToHundred := make([]time.Duration, 100)
	for i := range oneToHundred {
		oneToHundred[i] = ms(i + 1)
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 50, 0},
		{"single p50", []time.Duration{ms(7)}, 50, ms(7)},
		{"single p99", []time.Duration{ms(7)}, 99, ms(7)},
		{"1..100 p50", oneToHundred, 50, ms(50)},
		{"1..100 p90", oneToHundred, 90, ms(90)},
		{"1..100 p99", oneToHundred, 99, ms(99)},
		{"1..100 max", oneToHundred, 100, ms(100)},
		{"1..100 p0 is min", oneToHundred, 0, ms(1)},
		{"two p50 is lower", []time.Duration{ms(1), ms(2)}, 50, ms(1)},
		{"two p51 is upper", []time.Duration{ms(1), ms(2)}, 51, ms(2)},
		{"ten p99 is max", []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 99, 10},
		{"ten p90", []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 90, 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Percentile(tt.sorted, tt.p); got != tt.want {
				t.Errorf("Percentile(%v) = %v, want %v", tt.p, got, tt.want)
			}
		})
	}
}

func TestRecorderSummary(t *testing.T) {
	var r Recorder
	// Record 1..1000ms in random order from several goroutines.
	perm := rand.Perm(1000)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for _, v := range perm[w*250 : (w+1)*250] {
				r.Observe(ms(v + 1))
			}
		})
	}
	wg.Go(func() {
		r.Fail(errors.New("boom"))
	})
	wg.Wait()
	r.Fail(errors.New("second"))

	got := r.Summary()
	want := Summary{Ops: 1000, Errors: 2, P50: ms(500), P90: ms(900), P99: ms(990), Max: ms(1000), FirstError: "boom"}
	if got != want {
		t.Errorf("Summary() = %+v\nwant %+v", got, want)
	}
}

func TestRecorderEmpty(t *testing.T) {
	var r Recorder
	if got := r.Summary(); got != (Summary{}) {
		t.Errorf("empty Summary() = %+v", got)
	}
}
