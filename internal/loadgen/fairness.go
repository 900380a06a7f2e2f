package loadgen

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// The "fairness" workload, run only when named, asks whether one client can
// starve another. Two users the load generator makes up (<prefix>-quiet
// and <prefix>-noisy, in Config.AsGroups or DefaultBenchGroup) get objects:
// first the quiet user alone, at a fixed Config.QuietRate; then the same
// again while the noisy user runs Config.Concurrency gets at once, as fast
// as they are answered (or, with Config.NoisyRate, at that rate). It reports the quiet user's latencies alone
// ("quiet-alone") and beside the noisy one
// ("quiet-noisy"), the noisy user's ("noisy"), and a note
// with the ratio of the rates and of the quiet user's p99s. Each phase
// lasts Config.Duration (default 10s).

// fairnessWarmup is how long the noisy user runs before the quiet user's
// second phase starts, so that the quiet user meets it at full pace.
const fairnessWarmup = time.Second

func (b *bench) fairness(ctx context.Context) (results []Result, note string, err error) {
	groups := b.cfg.AsGroups
	if len(groups) == 0 {
		groups = []string{DefaultBenchGroup}
	}
	quietName, noisyName := b.cfg.Prefix+"-quiet", b.cfg.Prefix+"-noisy"
	undo, err := grant(ctx, b.admin, "crdserver-bench-fairness-"+b.runID, quietName, groups)
	if err != nil {
		return nil, "", err
	}
	if undo != nil {
		defer undo(context.WithoutCancel(ctx))
	}
	quiet, err := b.userClient(ctx, quietName, groups)
	if err != nil {
		return nil, "", err
	}
	noisy, err := b.userClient(ctx, noisyName, groups)
	if err != nil {
		return nil, "", err
	}
	get := func(c *http.Client) Op {
		return func(ctx context.Context, i int) error {
			s := b.pop.at(i % b.pop.len())
			_, release, err := b.doWith(ctx, c, http.MethodGet, b.collectionPath()+"/"+s.name, nil, http.StatusOK, "application/json", "")
			if err != nil {
				return err
			}
			release()
			return nil
		}
	}
	phase := b.cfg.Duration
	if phase == 0 {
		phase = 10 * time.Second
	}

	b.log.Info("fairness: the quiet user alone", "user", quietName, "rate", b.cfg.QuietRate, "duration", phase)
	alone := pace(ctx, "quiet-alone", b.cfg.QuietRate, phase, get(quiet))

	b.log.Info("fairness: the quiet user beside the noisy one", "noisy", noisyName, "concurrency", b.cfg.Concurrency)
	var wg sync.WaitGroup
	var loud Result
	wg.Go(func() {
		if b.cfg.NoisyRate > 0 {
			loud = paceN(ctx, "noisy", b.cfg.NoisyRate, b.cfg.Concurrency, fairnessWarmup+phase, get(noisy))
			return
		}
		loud = Runner{Concurrency: b.cfg.Concurrency, Duration: fairnessWarmup + phase}.Run(ctx, "noisy", get(noisy))
	})
	select {
	case <-time.After(fairnessWarmup):
	case <-ctx.Done():
	}
	beside := pace(ctx, "quiet-noisy", b.cfg.QuietRate, phase, get(quiet))
	wg.Wait()

	note = fmt.Sprintf("fairness: quiet user at %.1f/s: p99 %s alone, %s beside the noisy user at %.1f/s (%.1fx its rate): p99 x%.2f",
		beside.OpsPerSecond(), formatLatency(alone.P99), formatLatency(beside.P99),
		loud.OpsPerSecond(), loud.OpsPerSecond()/max(beside.OpsPerSecond(), 1e-9),
		float64(beside.P99)/max(float64(alone.P99), 1))
	return []Result{alone, beside, loud}, note, nil
}

// userClient is an HTTP client acting as user in groups, once the user may
// read (RBAC follows a new binding a moment later).
func (b *bench) userClient(ctx context.Context, user string, groups []string) (*http.Client, error) {
	cfg, err := asUser(b.admin, b.cfg.DataDir, user, groups)
	if err != nil {
		return nil, err
	}
	if err := waitAllowed(ctx, cfg); err != nil {
		return nil, err
	}
	return httpClient(cfg, b.cfg)
}

// pace runs op one at a time, starting one every 1/rate seconds, for d:
// an open loop at a fixed rate, as a client that polls. An operation that
// takes longer than the interval delays the next; the rate then falls
// instead of the load piling up.
func pace(ctx context.Context, name string, rate float64, d time.Duration, op Op) Result {
	return paceN(ctx, name, rate, 1, d, op)
}

// paceN is pace with n workers, each at rate/n, their starts spread evenly
// over the interval; the operations' numbers i interleave.
func paceN(ctx context.Context, name string, rate float64, n int, d time.Duration, op Op) Result {
	var rec Recorder
	n = max(n, 1)
	interval := time.Duration(float64(time.Second) * float64(n) / rate)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range n {
		wg.Go(func() {
			first := start.Add(interval * time.Duration(w) / time.Duration(n))
			paceOne(ctx, &rec, first, start.Add(d), interval, func(ctx context.Context, i int) error { return op(ctx, i*n+w) })
		})
	}
	wg.Wait()
	return Result{Name: name, Summary: rec.Summary(), Elapsed: time.Since(start)}
}

// paceOne starts op at next, then every interval, until end.
func paceOne(ctx context.Context, rec *Recorder, next, end time.Time, interval time.Duration, op Op) {
	for i := 0; ctx.Err() == nil; i++ {
		if wait := time.Until(next); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
		}
		t := time.Now()
		if ctx.Err() != nil || !t.Before(end) {
			break
		}
		err := op(ctx, i)
		switch took := time.Since(t); {
		case ctx.Err() != nil:
		case err != nil:
			rec.Fail(err)
		default:
			rec.Observe(took)
		}
		next = next.Add(interval)
		if now := time.Now(); next.Before(now) {
			next = now
		}
	}
}
