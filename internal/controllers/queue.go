package controllers

import (
	"context"
	"time"
)

// nameQueue is the work queue of the controllers that act on objects by
// name (namespaces, migrations, service accounts, policies): each name is
// worked on by one worker at a time, a name added while queued is worked
// on once, and one added while worked on is worked on again afterwards. A
// sync that reports unfinished work is retried after retry. Adding never
// blocks the watch that feeds the queue.
type nameQueue struct {
	q     *workQueue[string]
	retry time.Duration
}

func newNameQueue(retry time.Duration) *nameQueue {
	return &nameQueue{q: newWorkQueue[string](), retry: retry}
}

func (n *nameQueue) add(name string) { n.q.add(name) }

// work calls sync for every queued name until ctx ends; sync reports
// whether the name's work is done.
func (n *nameQueue) work(ctx context.Context, sync func(ctx context.Context, name string) bool) {
	stop := context.AfterFunc(ctx, n.q.shutDown)
	defer stop()
	for {
		name, ok := n.q.get()
		if !ok {
			return
		}
		done := sync(ctx, name)
		n.q.done(name)
		if !done && ctx.Err() == nil {
			time.AfterFunc(n.retry, func() { n.add(name) })
		}
	}
}
