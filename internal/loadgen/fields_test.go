package loadgen

import (
	"testing"
	"time"
)

// TestFieldsNotes: each run with managedFields is compared with the mean
// of the runs without on either side, so a machine that gets slower run
// by run does not count against recording them; without CPU figures the
// note gives the throughput alone.
func TestFieldsNotes(t *testing.T) {
	us := time.Microsecond
	var runs []fieldsRun
	for i := range 7 {
		// Each run 50 updates/s slower than the one before; a run with
		// managedFields loses 10% more and costs 60 µs more.
		r := fieldsRun{tracked: i%2 == 1, opsPerS: 2000 - 50*float64(i), cpu: 600*us + 10*time.Duration(i)*us}
		if r.tracked {
			r.opsPerS *= 0.9
			r.cpu += 60 * us
		}
		runs = append(runs, r)
	}
	for _, c := range []struct {
		withCPU bool
		want    string
	}{
		{true, "managed fields: recording them costs updates 10.0% of their throughput (median of 3 runs, spread 10.0% to 10.0%) and adds 60µs of server CPU per update (spread 60µs to 60µs) to the 630µs an update without them takes"},
		{false, "managed fields: recording them costs updates 10.0% of their throughput (median of 3 runs, spread 10.0% to 10.0%)"},
	} {
		got := fieldsNotes(runs, c.withCPU)
		if len(got) != 1 || got[0] != c.want {
			t.Errorf("with CPU %v: notes\n%q\nwant\n%q", c.withCPU, got, c.want)
		}
	}
	if got := fieldsNotes(runs[:1], true); got != nil {
		t.Errorf("one run without managedFields: notes %q, want none", got)
	}
}
