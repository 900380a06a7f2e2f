package controllers

import (
	"sync"
	"time"
)

// workQueue hands out work items to workers, as client-go's workqueue does:
// an item queued several times before a worker takes it is worked on once,
// and an item queued while a worker has it is worked on again afterwards,
// never by two workers at once. Items retried back off exponentially.
type workQueue[T comparable] struct {
	// mu guards the fields below; cond waits on it for items.
	mu         sync.Mutex
	cond       *sync.Cond
	items      []T
	queued     map[T]bool // in items
	processing map[T]bool // taken by a worker
	dirty      map[T]bool // queued again while processing
	failures   map[T]int
	stopped    bool
}

func newWorkQueue[T comparable]() *workQueue[T] {
	q := &workQueue[T]{queued: map[T]bool{}, processing: map[T]bool{}, dirty: map[T]bool{}, failures: map[T]int{}}
	q.cond = sync.NewCond(&q.mu)
	return q
}

func (q *workQueue[T]) add(items ...T) {
	if len(items) == 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, it := range items {
		switch {
		case q.stopped || q.queued[it]:
		case q.processing[it]:
			q.dirty[it] = true
		default:
			q.queued[it] = true
			q.items = append(q.items, it)
			q.cond.Signal()
		}
	}
}

// get waits for an item; false once the queue is shut down.
func (q *workQueue[T]) get() (T, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.items) == 0 && !q.stopped {
		q.cond.Wait()
	}
	var zero T
	if q.stopped {
		return zero, false
	}
	it := q.items[0]
	q.items[0] = zero
	q.items = q.items[1:]
	delete(q.queued, it)
	q.processing[it] = true
	return it, true
}

// done ends a worker's turn with it; it is queued again if added meanwhile.
func (q *workQueue[T]) done(it T) {
	q.mu.Lock()
	delete(q.processing, it)
	again := q.dirty[it]
	delete(q.dirty, it)
	q.mu.Unlock()
	if again {
		q.add(it)
	}
}

// retry queues it again after a delay that doubles with each failure, from
// 5ms up to 30s.
func (q *workQueue[T]) retry(it T) {
	q.mu.Lock()
	n := q.failures[it]
	q.failures[it] = n + 1
	q.mu.Unlock()
	d := 5 * time.Millisecond << min(n, 13)
	time.AfterFunc(min(d, 30*time.Second), func() { q.add(it) })
}

// forget clears its failures.
func (q *workQueue[T]) forget(it T) {
	q.mu.Lock()
	delete(q.failures, it)
	q.mu.Unlock()
}

// len reports how many items wait or are being worked on.
func (q *workQueue[T]) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items) + len(q.processing)
}

func (q *workQueue[T]) shutDown() {
	q.mu.Lock()
	q.stopped = true
	q.mu.Unlock()
	q.cond.Broadcast()
}
