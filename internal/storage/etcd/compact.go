package etcd

import (
	"context"
	"fmt"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// compactKey records compaction turns. Its Version (the number of writes
// since creation) is the turn counter replicas compare-and-swap on, so one
// replica wins each interval however many run the compactor. The name is
// the one kube-apiserver uses, so crdserver and a kube-apiserver sharing an
// etcd also take turns instead of both compacting.
const compactKey = "compact_rev_key"

// compactState is what one replica remembers between turns.
type compactState struct {
	// version is the compactKey Version this replica expects; it wins the
	// next turn only if nobody wrote the key since.
	version int64
	// rev is the store revision seen at the last turn; the next winner
	// compacts up to it, so one full interval of history is always kept.
	rev int64
}

// RunCompactor compacts etcd's history every interval until ctx ends,
// keeping at least one interval of history. It is safe to run in several
// replicas against one etcd: at each tick they race for a turn with a
// compare-and-swap and only the winner compacts.
func (b *Backend) RunCompactor(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var st compactState
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		next, compacted, err := b.compactTurn(ctx, st)
		if err != nil {
			if ctx.Err() == nil {
				b.log.Error("etcd compaction failed", "revision", st.rev, "err", err)
			}
			continue
		}
		if compacted > 0 {
			b.log.Debug("etcd compacted", "revision", compacted)
		}
		st = next
	}
}

// compactTurn takes one turn: it claims the turn if the compact key still
// has the expected version, and if so compacts to the revision remembered
// from the previous turn. It returns the state for the next turn and the
// revision compacted to (0 if none).
func (b *Backend) compactTurn(ctx context.Context, st compactState) (compactState, int64, error) {
	resp, err := b.client.Txn(ctx).
		If(clientv3.Compare(clientv3.Version(compactKey), "=", st.version)).
		Then(clientv3.OpPut(compactKey, strconv.FormatInt(st.rev, 10))).
		Else(clientv3.OpGet(compactKey)).
		Commit()
	if err != nil {
		return st, 0, mapErr(ctx, "claim compaction turn", compactKey, err)
	}
	now := resp.Header.Revision
	if !resp.Succeeded {
		// Another replica took this turn. Expect its version next time and
		// remember the current revision as the next turn's target.
		kvs := resp.Responses[0].GetResponseRange().GetKvs()
		var v int64
		if len(kvs) == 1 {
			v = kvs[0].Version
		}
		return compactState{version: v, rev: now}, 0, nil
	}
	next := compactState{version: st.version + 1, rev: now}
	if st.rev == 0 {
		// The first turn only records where history starts.
		return next, 0, nil
	}
	if err := b.Compact(ctx, st.rev); err != nil {
		return next, 0, fmt.Errorf("compact to %d: %w", st.rev, err)
	}
	return next, st.rev, nil
}
