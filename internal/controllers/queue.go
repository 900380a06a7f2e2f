package controllers

import (
	"context"
	"sync"
	"time"
)

// workQueue hands names to its workers, each name to one at a time:
// a name added while queued or being worked on is not added again. A sync
// that reports unfinished work is retried after retry. Adding never blocks
// the watch that feeds the queue.
type workQueue struct {
	retry time.Duration

	mu      sync.Mutex
	pending map[string]bool // names queued or being worked on
	ch      chan string
}

func newWorkQueue(retry time.Duration) *workQueue {
	return &workQueue{retry: retry, pending: map[string]bool{}, ch: make(chan string, 1024)}
}

func (q *workQueue) add(name string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.pending[name] {
		return
	}
	q.pending[name] = true
	select {
	case q.ch <- name:
	default:
		// Queue full: try again later rather than block the watch.
		delete(q.pending, name)
		time.AfterFunc(q.retry, func() { q.add(name) })
	}
}

// work calls sync for every queued name until ctx ends; sync reports
// whether the name's work is done.
func (q *workQueue) work(ctx context.Context, sync func(ctx context.Context, name string) bool) {
	for {
		select {
		case <-ctx.Done():
			return
		case name := <-q.ch:
			done := sync(ctx, name)
			q.mu.Lock()
			delete(q.pending, name)
			q.mu.Unlock()
			if !done && ctx.Err() == nil {
				time.AfterFunc(q.retry, func() { q.add(name) })
			}
		}
	}
}
