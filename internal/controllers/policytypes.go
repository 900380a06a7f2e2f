package controllers

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/crdserver/crdserver/internal/watchcache"
)

// PolicyTypeServer is what the policy type checker needs from the server.
type PolicyTypeServer interface {
	// CheckPolicy type-checks the named ValidatingAdmissionPolicy's
	// expressions against the resources it matches, unless its status
	// already reports on its generation, and records the result in its
	// status (typeChecking, observedGeneration) with a compare-and-swap.
	CheckPolicy(ctx context.Context, name string) error
}

// PolicyTypes keeps the status.typeChecking of ValidatingAdmissionPolicies
// current, as upstream's policy status controller does: each policy is
// checked when it appears or changes. It is driven by the policies' watch;
// replicas that check the same policy write the same status, and the
// write is conditional.
type PolicyTypes struct {
	Cache  *watchcache.Cache // the validatingadmissionpolicies watch cache
	Server PolicyTypeServer
	Log    *slog.Logger
	// Retry is how long to wait before checking a policy again after an
	// error. Default 1s.
	Retry time.Duration

	queue *workQueue
}

// Run works until ctx ends, and returns once its worker and watch have
// returned.
func (p *PolicyTypes) Run(ctx context.Context) {
	if p.Retry == 0 {
		p.Retry = time.Second
	}
	if p.Log == nil {
		p.Log = slog.Default()
	}
	p.queue = newWorkQueue(p.Retry)
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { p.queue.work(ctx, p.sync) })
	watchChanges(ctx, p.Cache, p.Log, "policy type checker", func(it *watchcache.Item) { p.queue.add(it.Name) })
}

func (p *PolicyTypes) sync(ctx context.Context, name string) bool {
	err := p.Server.CheckPolicy(ctx, name)
	if err != nil && ctx.Err() == nil {
		p.Log.Warn("policy type checker: checking a policy", "policy", name, "err", err)
	}
	return err == nil
}
