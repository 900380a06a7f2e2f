package loadgen

import (
	"context"
	"errors"
	"strings"
	"sync"
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
	// The slow request's successor starts at once, the next one an
	// interval later: the five missed are not made up in a burst.
	if len(starts) < 6 {
		t.Fatalf("%d requests", len(starts))
	}
	if gap := starts[5].Sub(starts[4]); gap < 9*time.Millisecond {
		t.Errorf("requests 4 and 5 %v apart: bunched after the slow one", gap)
	}
}

func TestBenchUsersNotMasters(t *testing.T) {
	c := Config{AsUser: "u", AsGroups: []string{"devs", "system:masters"}}
	if err := c.complete(); err == nil || !strings.Contains(err.Error(), "system:masters") {
		t.Fatalf("complete: %v", err)
	}
}

// TestPaceNSpreadsTheRate: a paced noisy user's workers together hold the
// rate asked, each operation numbered once.
func TestPaceNSpreadsTheRate(t *testing.T) {
	var mu sync.Mutex
	seen := map[int]bool{}
	res := paceN(context.Background(), "noisy", 400, 4, 250*time.Millisecond, func(ctx context.Context, i int) error {
		mu.Lock()
		defer mu.Unlock()
		if seen[i] {
			t.Errorf("operation %d twice", i)
		}
		seen[i] = true
		return nil
	})
	if res.Ops < 50 || res.Ops > 104 {
		t.Errorf("%d operations in 250ms at 400/s", res.Ops)
	}
}
