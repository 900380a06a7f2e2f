package loadgen

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// Op is one operation of a workload. i counts the operations of one Run from
// zero; every i is handed out once.
type Op func(ctx context.Context, i int) error

// ErrStop, returned by an Op, ends the run early: no new operation starts
// and the one that returned it is counted neither as success nor as error.
// Workloads use it when they run out of objects (delete).
var ErrStop = errors.New("loadgen: stop")

// Runner runs an Op at a fixed concurrency until Count operations were
// started or Duration has passed, whichever comes first. A zero Count or
// Duration means no such limit; with neither set the run lasts until an Op
// returns ErrStop or the context ends.
//
// Duration bounds when operations start, not when they end: operations in
// flight at the deadline complete and are recorded, so every started
// operation is either a success or an error and none is cut off.
type Runner struct {
	Concurrency int // at least 1
	Count       int
	Duration    time.Duration
	// Rate, when positive, starts operation i when i/Rate seconds have
	// passed instead of as soon as a worker is free, with Concurrency
	// still bounding those in flight. Comparing variants at one rate
	// compares their costs at the same load: a variant that slows the
	// server does not get to run at a lower rate, where every operation
	// costs more because less of its work is shared (etcd batches, fewer
	// wake-ups). An operation that starts late, every worker busy, counts
	// its latency from when it was due, so a server that falls behind
	// shows as latency rather than as a quietly lower rate.
	Rate float64
	// Now is the clock; nil means time.Now. Tests inject a fake one.
	Now func() time.Time
	// Sleep waits d or until ctx ends; nil uses a timer. Tests inject one
	// that moves their clock.
	Sleep func(ctx context.Context, d time.Duration)
}

// Result is the outcome of one workload.
type Result struct {
	Name string
	Summary
	// Server is what the server process used meanwhile, when
	// Config.ServerPIDs is set (nil otherwise).
	Server *ServerUsage
	// Elapsed is the wall time from the first operation's start to the last
	// one's end; throughput is Ops/Elapsed.
	Elapsed time.Duration
}

// OpsPerSecond is the rate of successful operations.
func (r Result) OpsPerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Ops) / r.Elapsed.Seconds()
}

// Run runs op and returns what the Recorder saw. Operations that fail because
// ctx ended are not counted.
func (r Runner) Run(ctx context.Context, name string, op Op) Result {
	now := r.Now
	if now == nil {
		now = time.Now
	}
	sleep := r.Sleep
	if sleep == nil {
		sleep = sleepCtx
	}
	workers := max(r.Concurrency, 1)

	var (
		rec     Recorder
		next    atomic.Int64
		stopped atomic.Bool
		wg      sync.WaitGroup
	)
	start := now()
	var deadline time.Time
	if r.Duration > 0 {
		deadline = start.Add(r.Duration)
	}
	for range workers {
		wg.Go(func() {
			for !stopped.Load() && ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if r.Count > 0 && i >= r.Count {
					return
				}
				t := now()
				if r.Rate > 0 {
					due := start.Add(time.Duration(float64(i) * float64(time.Second) / r.Rate))
					if wait := due.Sub(t); wait > 0 {
						sleep(ctx, wait)
						t = now()
					} else {
						t = due
					}
				}
				if !deadline.IsZero() && !t.Before(deadline) {
					stopped.Store(true)
					return
				}
				err := op(ctx, i)
				d := now().Sub(t)
				switch {
				case errors.Is(err, ErrStop):
					stopped.Store(true)
					return
				case ctx.Err() != nil:
					return
				case err != nil:
					rec.Fail(err)
				default:
					rec.Observe(d)
				}
			}
		})
	}
	wg.Wait()
	return Result{Name: name, Summary: rec.Summary(), Elapsed: now().Sub(start)}
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
}
