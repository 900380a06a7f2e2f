package loadgen

import (
	"slices"
	"testing"
	"time"
)

// TestAdmissionAdded: a variant's cost is measured against the runs on
// either side of it, so a machine that gets busier run by run (here 100 µs
// more each run) does not count as a cost.
func TestAdmissionAdded(t *testing.T) {
	us := time.Microsecond
	var runs []admissionRun
	drift := time.Duration(0)
	next := func(v string, cost time.Duration) {
		runs = append(runs, admissionRun{variant: v, p50: time.Millisecond + drift + cost, cpu: 700*us + drift + cost})
		drift += 100 * us
	}
	next(admissionNone, 0)
	for range 2 {
		next(admissionMutating, 150*us)
		next(admissionNone, 0)
		next(admissionPolicy, 10*us)
		next(admissionNone, 0)
	}
	for _, c := range []struct {
		variant string
		want    []time.Duration
	}{
		{admissionMutating, []time.Duration{150 * us, 150 * us}},
		{admissionPolicy, []time.Duration{10 * us, 10 * us}},
		{admissionValidating, nil},
	} {
		lat, cpu := added(runs, c.variant)
		if !slices.Equal(lat, c.want) || !slices.Equal(cpu, c.want) {
			t.Errorf("%s: added latency %v, CPU %v; want %v for both", c.variant, lat, cpu, c.want)
		}
	}
}
