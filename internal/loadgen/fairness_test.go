package loadgen

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestPaceHoldsItsRate: the quiet user of the fairness workload sends at
// its rate however fast it is answered, and a slow answer delays the next
// request rather than bunching the ones after it.
func TestPaceHoldsItsRate(t *testing.T) {
	var starts []time.Time
	res := pace(context.Background(), "quiet", 100, 300*time.Millisecond, func(ctx context.Context, i int) error {
		starts = append(starts, time.Now())
		if i == 3 {
			time.Sleep(50 * time.Millisecond) // five intervals
			return errors.New("slow and failed")
		}
		return nil
	})
	// 30 intervals, five of them lost to the slow request.
	if n := res.Ops + res.Errors; n < 15 || n > 31 {
		t.Errorf("%d requests in 300ms at 100/s", n)
	}
	if res.Errors != 1 || res.FirstError != "slow and failed" {
		t.Errorf("errors %d %q", res.Errors, res.FirstError)
	}
	for i := 5; i < len(starts); i++ {
		if gap := starts[i].Sub(starts[i-1]); gap < 5*time.Millisecond {
			t.Fatalf("requests %d and %d %v apart: bunched after the slow one", i-1, i, gap)
		}
	}
}

func TestBenchUsersNotMasters(t *testing.T) {
	c := Config{AsUser: "u", AsGroups: []string{"devs", "system:masters"}}
	if err := c.complete(); err == nil || !strings.Contains(err.Error(), "system:masters") {
		t.Fatalf("complete: %v", err)
	}
}
