package loadgen

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// stepClock is a fake clock that moves forward by step on every reading, so
// a run's timing depends only on how often it looks at the clock.
type stepClock struct {
	mu   sync.Mutex
	t    time.Time
	step time.Duration
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(c.step)
	return c.t
}

func newStepClock() *stepClock {
	return &stepClock{t: time.Unix(1_000_000, 0), step: time.Millisecond}
}

func TestRunnerStopsAtCount(t *testing.T) {
	for _, c := range []int{1, 3, 8} {
		var calls atomic.Int64
		seen := make([]atomic.Int32, 100)
		res := Runner{Concurrency: c, Count: 100, Now: newStepClock().Now}.Run(context.Background(), "x", func(ctx context.Context, i int) error {
			calls.Add(1)
			seen[i].Add(1)
			return nil
		})
		if calls.Load() != 100 || res.Ops != 100 || res.Errors != 0 {
			t.Errorf("concurrency %d: calls=%d ops=%d errors=%d, want 100/100/0", c, calls.Load(), res.Ops, res.Errors)
		}
		for i := range seen {
			if n := seen[i].Load(); n != 1 {
				t.Errorf("concurrency %d: index %d run %d times", c, i, n)
			}
		}
		if res.Name != "x" || res.Elapsed <= 0 {
			t.Errorf("Name=%q Elapsed=%v", res.Name, res.Elapsed)
		}
	}
}

func TestRunnerStopsAtDuration(t *testing.T) {
	// One worker reads the clock at start, then twice per operation (before
	// and after). With a 1ms step the op starts are at 1, 3, 5, ... ms after
	// start, so a 100ms run starts exactly 50 operations, each taking 1ms.
	clock := newStepClock()
	res := Runner{Concurrency: 1, Duration: 100 * time.Millisecond, Now: clock.Now}.Run(context.Background(), "d", func(ctx context.Context, i int) error {
		return nil
	})
	if res.Ops != 50 {
		t.Errorf("Ops = %d, want 50", res.Ops)
	}
	if res.P50 != time.Millisecond || res.Max != time.Millisecond {
		t.Errorf("latencies p50=%v max=%v, want 1ms", res.P50, res.Max)
	}

	// Several workers: the run ends, and every started operation took one of
	// the 99 clock readings that fall before the deadline (how many other
	// readings interleave depends on scheduling).
	res = Runner{Concurrency: 4, Duration: 100 * time.Millisecond, Now: newStepClock().Now}.Run(context.Background(), "d", func(ctx context.Context, i int) error {
		return nil
	})
	if res.Ops == 0 || res.Ops > 99 {
		t.Errorf("Ops = %d, want 1..99", res.Ops)
	}
}

func TestRunnerCountAndDurationWhicheverFirst(t *testing.T) {
	res := Runner{Concurrency: 2, Count: 10, Duration: time.Hour, Now: newStepClock().Now}.Run(context.Background(), "", func(context.Context, int) error { return nil })
	if res.Ops != 10 {
		t.Errorf("Ops = %d, want 10 (count first)", res.Ops)
	}
	res = Runner{Concurrency: 1, Count: 1000, Duration: 10 * time.Millisecond, Now: newStepClock().Now}.Run(context.Background(), "", func(context.Context, int) error { return nil })
	if res.Ops != 5 {
		t.Errorf("Ops = %d, want 5 (duration first)", res.Ops)
	}
}

func TestRunnerCountsErrorsAndStops(t *testing.T) {
	res := Runner{Concurrency: 1, Count: 100, Now: newStepClock().Now}.Run(context.Background(), "", func(ctx context.Context, i int) error {
		switch {
		case i == 20:
			return ErrStop
		case i%4 == 0:
			return errors.New("every fourth fails")
		}
		return nil
	})
	// i = 0..19 ran: 5 failures (0,4,8,12,16), 15 successes; 20 stopped it.
	if res.Ops != 15 || res.Errors != 5 || res.FirstError != "every fourth fails" {
		t.Errorf("got ops=%d errors=%d first=%q, want 15/5", res.Ops, res.Errors, res.FirstError)
	}
}

func TestRunnerConcurrency(t *testing.T) {
	const c = 5
	var inFlight, peak atomic.Int32
	// The first c operations wait until all c are in flight at once, which
	// proves the runner really runs c at a time (it would hang otherwise);
	// the peak proves it never runs more.
	var arrived sync.WaitGroup
	arrived.Add(c)
	res := Runner{Concurrency: c, Count: 200}.Run(context.Background(), "", func(ctx context.Context, i int) error {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		if i < c {
			arrived.Done()
			arrived.Wait()
		}
		return nil
	})
	if res.Ops != 200 {
		t.Errorf("Ops = %d, want 200", res.Ops)
	}
	if p := peak.Load(); p != c {
		t.Errorf("peak concurrency = %d, want %d", p, c)
	}
}

func TestRunnerContextCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	res := Runner{Concurrency: 3}.Run(ctx, "", func(ctx context.Context, i int) error {
		if i == 10 {
			cancel()
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return nil
	})
	if res.Errors != 0 {
		t.Errorf("cancelled operations counted as errors: %d (%s)", res.Errors, res.FirstError)
	}
	if res.Ops < 1 {
		t.Errorf("Ops = %d", res.Ops)
	}
}

func TestOpsPerSecond(t *testing.T) {
	r := Result{Summary: Summary{Ops: 500}, Elapsed: 250 * time.Millisecond}
	if got := r.OpsPerSecond(); got != 2000 {
		t.Errorf("OpsPerSecond = %v, want 2000", got)
	}
	if got := (Result{}).OpsPerSecond(); got != 0 {
		t.Errorf("zero Result OpsPerSecond = %v", got)
	}
}

// sleep moves the clock on by d, as waiting would.
func (c *stepClock) sleep(_ context.Context, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestRunnerRate(t *testing.T) {
	// One worker: the fake clock is shared, so one worker's sleep would
	// move every other's time too.
	tests := []struct {
		name string
		// opTime is how long each operation takes on the clock.
		opTime time.Duration
		// wantStartGap bounds from below the gap between consecutive
		// starts; wantP50 bounds the median latency from below and
		// wantP50Under from above.
		wantStartGap, wantP50, wantP50Under time.Duration
	}{
		// 100 per second with quick operations: each starts 10 ms after
		// the one before (the clock's own steps aside), and its latency is
		// its own.
		{name: "keeping up", opTime: 0, wantStartGap: 9 * time.Millisecond, wantP50: 0, wantP50Under: 5 * time.Millisecond},
		// Operations that take 25 ms cannot start one every
		// 10 ms: they start back to back, and their latency counts from
		// when each was due, growing by 15 ms per operation.
		{name: "falling behind", opTime: 25 * time.Millisecond, wantStartGap: 25 * time.Millisecond, wantP50: 25*time.Millisecond + 20*15*time.Millisecond, wantP50Under: time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newStepClock()
			var (
				mu     sync.Mutex
				starts = map[int]time.Time{}
			)
			res := Runner{Concurrency: 1, Count: 40, Rate: 100, Now: clock.Now, Sleep: clock.sleep}.Run(context.Background(), "r", func(ctx context.Context, i int) error {
				mu.Lock()
				starts[i] = clock.Now()
				mu.Unlock()
				clock.sleep(ctx, tt.opTime)
				return nil
			})
			if res.Ops != 40 {
				t.Fatalf("ops = %d, want 40", res.Ops)
			}
			for i := 1; i < 40; i++ {
				if gap := starts[i].Sub(starts[i-1]); gap < tt.wantStartGap {
					t.Errorf("operation %d started %v after %d, want at least %v", i, gap, i-1, tt.wantStartGap)
				}
			}
			if res.P50 < tt.wantP50 || res.P50 >= tt.wantP50Under {
				t.Errorf("p50 = %v, want in [%v, %v)", res.P50, tt.wantP50, tt.wantP50Under)
			}
		})
	}
}

func TestRunnerRateStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int64
	done := make(chan Result)
	go func() {
		// One operation per hour: the second waits until cancelled.
		done <- Runner{Concurrency: 2, Count: 10, Rate: 1.0 / 3600}.Run(ctx, "slow", func(context.Context, int) error {
			calls.Add(1)
			return nil
		})
	}()
	for calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	select {
	case res := <-done:
		if res.Ops != 1 {
			t.Errorf("ops = %d, want 1 (the one due at once)", res.Ops)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a rate-limited run did not end when its context did")
	}
}
