package loadgen

import (
	"context"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The "fields" workload, run only when named, measures what recording
// metadata.managedFields costs an update, on one server in one run: the
// update workload on objects the server records managedFields for, and
// on objects whose managedFields a client cleared (an update sending
// `managedFields: []`), which a server then leaves untracked until the
// next apply, as kube-apiserver does. Half of the objects are cleared;
// the two halves are otherwise alike. Each of Config.FieldsRounds runs
// with managedFields is run between two runs without (N F N F … N), and
// compared with their mean, as the admission workload compares its
// variants, so that a machine getting busier or quieter weighs on both
// alike. Results are named "update/fields" and "update/no-fields"; the
// notes give the throughput each run with managedFields lost and the
// server CPU it added per update (with Config.ServerPIDs), as medians
// with their spread.

// fieldsRun is one run of the fields workload.
type fieldsRun struct {
	tracked bool
	opsPerS float64
	cpu     time.Duration
}

func (b *bench) fields(ctx context.Context, add func(Result)) (notes []string, err error) {
	half := b.pop.len() / 2
	if half == 0 {
		return nil, fmt.Errorf("the fields workload needs at least 2 objects, has %d", b.pop.len())
	}
	if half < b.cfg.Concurrency {
		b.log.Warn("fewer objects in each half than workers: updates of one object wait for each other", "objects", half)
	}
	// Objects [half, 2·half) lose their managedFields.
	clear := Runner{Concurrency: b.cfg.Concurrency, Count: half}.Run(ctx, "clear-fields", func(ctx context.Context, i int) error {
		return b.clearManagedFields(ctx, half+i)
	})
	if clear.Errors > 0 {
		return nil, fmt.Errorf("clearing managedFields: %d errors, first: %s", clear.Errors, clear.FirstError)
	}
	if err := b.checkTracking(ctx, half); err != nil {
		return nil, err
	}

	var runs []fieldsRun
	run := func(round int, tracked bool) error {
		name, first := "update/no-fields", half
		if tracked {
			name, first = "update/fields", 0
		}
		b.log.Info("fields round", "round", round+1, "workload", name)
		b.settleServer(ctx)
		stop := watchServers(b.cfg.ServerPIDs)
		r := b.runner().Run(ctx, name, func(ctx context.Context, i int) error {
			return b.update(ctx, first+i%half, nil)
		})
		u, uerr := stop()
		if uerr != nil {
			b.log.Warn("reading the server's usage", "err", uerr)
		}
		r.Server = u
		add(r)
		if r.Errors > 0 || r.Ops == 0 {
			return fmt.Errorf("%s: %d errors, first: %s", name, r.Errors, r.FirstError)
		}
		fr := fieldsRun{tracked: tracked, opsPerS: r.OpsPerSecond()}
		if u != nil {
			fr.cpu = u.CPU / time.Duration(r.Ops)
		}
		runs = append(runs, fr)
		return nil
	}
	if err := run(0, false); err != nil {
		return nil, err
	}
	for round := range b.cfg.FieldsRounds {
		if err := run(round, true); err != nil {
			return nil, err
		}
		if err := run(round, false); err != nil {
			return nil, err
		}
	}
	// A server that began recording the cleared objects' fields again
	// would have measured nothing.
	if err := b.checkTracking(ctx, half); err != nil {
		return nil, err
	}
	return fieldsNotes(runs, len(b.cfg.ServerPIDs) > 0), nil
}

// fieldsNotes words what the runs with managedFields lost against the
// mean of the runs without on either side.
func fieldsNotes(runs []fieldsRun, withCPU bool) []string {
	var lost []float64
	var cpu, base []time.Duration
	for i, r := range runs {
		if !r.tracked {
			base = append(base, r.cpu)
			continue
		}
		if i == 0 || i == len(runs)-1 {
			continue
		}
		before, after := runs[i-1], runs[i+1]
		lost = append(lost, 100*(1-2*r.opsPerS/(before.opsPerS+after.opsPerS)))
		cpu = append(cpu, r.cpu-(before.cpu+after.cpu)/2)
	}
	if len(lost) == 0 {
		return nil
	}
	slices.Sort(lost)
	m := lost[len(lost)/2]
	if len(lost)%2 == 0 {
		m = (lost[len(lost)/2-1] + lost[len(lost)/2]) / 2
	}
	note := fmt.Sprintf("managed fields: recording them costs updates %.1f%% of their throughput (median of %d runs, spread %.1f%% to %.1f%%)",
		m, len(lost), lost[0], lost[len(lost)-1])
	if withCPU {
		note += fmt.Sprintf(" and adds %s of server CPU per update (spread %s) to the %s an update without them takes",
			median(cpu).Round(time.Microsecond), spread(roundAll(cpu)), median(base).Round(time.Microsecond))
	}
	return []string{note}
}

// clearManagedFields updates object i with `managedFields: []`, which
// clears them. The raw client's later updates of it send that again (the
// client-go one's, the answer, without any), which keeps them cleared.
func (b *bench) clearManagedFields(ctx context.Context, i int) error {
	return b.replace(ctx, i, "", func(obj *unstructured.Unstructured) error {
		return unstructured.SetNestedSlice(obj.Object, []any{}, "metadata", "managedFields")
	})
}

// checkTracking makes sure the server records managedFields for the
// first object and not for object half, whose fields were cleared.
func (b *bench) checkTracking(ctx context.Context, half int) error {
	for _, c := range []struct {
		i    int
		want bool
	}{{0, true}, {half, false}} {
		name := b.pop.at(c.i).name
		obj, err := b.res.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading %s: %w", name, err)
		}
		if got := len(obj.GetManagedFields()) > 0; got != c.want {
			return fmt.Errorf("object %s has managedFields %s, want %s: the fields workload measures nothing here",
				name, yesNo(got), yesNo(c.want))
		}
	}
	return nil
}

func yesNo(recorded bool) string {
	if recorded {
		return "recorded"
	}
	return "none"
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Microsecond)
	}
	return out
}
