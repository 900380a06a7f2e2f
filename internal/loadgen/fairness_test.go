package loadgen

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestPaceHoldsItsRate: the quiet user of the fairness workload sends at
// its rate however fast it is answered, and a slow answer delays the next
// request rather than bunching the ones after it. The clock is synctest's,
// so that what is measured is pace's schedule, not the machine's.
func TestPaceHoldsItsRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var starts []time.Duration
		begin := time.Now()
		res := pace(t.Context(), "quiet", 100, 300*time.Millisecond, func(ctx context.Context, i int) error {
			starts = append(starts, time.Since(begin))
			if i == 3 {
				time.Sleep(50 * time.Millisecond) // five intervals
				return errors.New("slow and failed")
			}
			return nil
		})
		// 30 intervals, five of them lost to the slow request: four
		// requests at 0-30ms, the slow one ends at 80ms, then one every
		// 10ms from 80ms to 290ms.
		if n := res.Ops + res.Errors; n != 26 {
			t.Errorf("%d requests in 300ms at 100/s, want 26: %v", n, starts)
		}
		if res.Errors != 1 || res.FirstError != "slow and failed" {
			t.Errorf("errors %d %q", res.Errors, res.FirstError)
		}
		if res.Elapsed != 300*time.Millisecond {
			t.Errorf("took %v, want 300ms", res.Elapsed)
		}
		// The slow request's successor starts at once, the next one an
		// interval later: the five missed are not made up in a burst.
		if len(starts) < 6 {
			t.Fatalf("%d requests", len(starts))
		}
		if starts[4] != 80*time.Millisecond {
			t.Errorf("request 4 at %v, want 80ms: at once after the slow one", starts[4])
		}
		for i := 5; i < len(starts); i++ {
			if gap := starts[i] - starts[i-1]; gap != 10*time.Millisecond {
				t.Errorf("requests %d and %d %v apart, want 10ms: bunched after the slow one", i-1, i, gap)
			}
		}
	})
}

func TestBenchUsersNotMasters(t *testing.T) {
	c := Config{AsUser: "u", AsGroups: []string{"devs", "system:masters"}}
	if err := c.complete(); err == nil || !strings.Contains(err.Error(), "system:masters") {
		t.Fatalf("complete: %v", err)
	}
}

// TestPaceNSpreadsTheRate: a paced noisy user's workers together hold the
// rate asked, their starts spread evenly, each operation numbered once.
// The clock is synctest's, as in TestPaceHoldsItsRate.
func TestPaceNSpreadsTheRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		seen := map[int]time.Duration{}
		begin := time.Now()
		res := paceN(t.Context(), "noisy", 400, 4, 250*time.Millisecond, func(ctx context.Context, i int) error {
			mu.Lock()
			defer mu.Unlock()
			if _, ok := seen[i]; ok {
				t.Errorf("operation %d twice", i)
			}
			seen[i] = time.Since(begin)
			return nil
		})
		// 400/s for 250ms: 100 operations, one every 2.5ms.
		if res.Ops != 100 {
			t.Errorf("%d operations in 250ms at 400/s, want 100", res.Ops)
		}
		for i := range 100 {
			if at, want := seen[i], time.Duration(i)*2500*time.Microsecond; at != want {
				t.Errorf("operation %d at %v, want %v", i, at, want)
			}
		}
	})
}
