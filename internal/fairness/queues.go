// Package fairness shares a fixed number of seats (requests executing at
// once) fairly among flows, as the fair queuing of upstream's API Priority
// and Fairness does within one priority level: a request that finds no free
// seat waits in its flow's queue, and each seat that frees goes to the flow
// that holds the fewest seats, so a quiet flow's request is next in line
// however many requests a noisy flow has waiting (dispatchLocked). Queues
// are bounded: a request that finds its flow's queue full is refused at
// once.
//
// Upstream orders its queues by virtual finish time, from estimates of each
// request's cost corrected as requests end, and shuffle-shards flows onto a
// fixed number of queues. Here every request costs one seat and every flow
// has a queue of its own; with requests of like cost the order is the same,
// and it is simple enough to state exactly.
//
// The package knows nothing of HTTP or users: callers name the flow (the
// filters use the user name, as APF's ByUser distinguisher) and decide what
// a refusal looks like.
package fairness

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// DefaultQueueLength is how many requests of one flow may wait, upstream's
// queueLengthLimit of its default priority levels.
const DefaultQueueLength = 50

// ErrQueueFull is Acquire's answer when the flow's queue is full.
var ErrQueueFull = errors.New("fairness: queue full")

// Queues hands out seats to flows. Its zero value is not usable: make it
// with New. It is safe for concurrent use.
type Queues struct {
	seats       int
	queueLength int

	// mu guards everything below. It is never held while a caller's code
	// runs, only while seats and queues are counted.
	mu    sync.Mutex
	inUse int
	// flows holds every flow that has a request executing or waiting; a
	// flow with neither is removed, so that the map grows with the users
	// active at once, not with every user ever seen.
	flows map[string]*flow
	// waiting are the flows with at least one request queued, in no order.
	waiting []*flow
	// seq numbers requests as they arrive, and turn numbers the seats
	// handed out (see dispatchLocked).
	seq, turn uint64
}

// flow is the requests of one flow name.
type flow struct {
	name      string
	executing int
	queue     []*waiter // FIFO
	// lastTurn is the turn of the last seat the flow was given; 0 for a
	// flow new or idle since (forgotten flows start again from nothing).
	lastTurn uint64
}

// waiter is one queued request. ready is closed when it is given a seat;
// granted says so under Queues.mu, so that a waiter whose context ends at
// the same moment knows whether it holds a seat to give back.
type waiter struct {
	flow    *flow
	seq     uint64
	ready   chan struct{}
	granted bool
}

// New returns Queues with seats seats (at least 1) and a queue of at most
// queueLength requests per flow (0 means DefaultQueueLength; negative means
// requests never wait: without a free seat they are refused at once).
func New(seats, queueLength int) *Queues {
	if queueLength == 0 {
		queueLength = DefaultQueueLength
	}
	return &Queues{seats: max(seats, 1), queueLength: max(queueLength, 0), flows: map[string]*flow{}}
}

// Acquire returns once flowName holds a seat, with the function that gives
// it back (call it exactly once, when the request is done). Without a free
// seat the request waits in its flow's queue until a seat is handed to it or
// ctx ends; the caller bounds the wait with ctx's deadline. It fails with
// ErrQueueFull at once when the queue is full, and with ctx's error (wrapped)
// when ctx ends first; the request then holds nothing.
func (q *Queues) Acquire(ctx context.Context, flowName string) (release func(), err error) {
	q.mu.Lock()
	f := q.flows[flowName]
	if f == nil {
		f = &flow{name: flowName}
		q.flows[flowName] = f
	}
	// A free seat goes to whoever asks only when nobody waits: otherwise
	// the waiters, chosen fairly, come first.
	if q.inUse < q.seats && len(q.waiting) == 0 {
		q.seatLocked(f)
		q.mu.Unlock()
		return q.releaser(f), nil
	}
	if len(f.queue) >= q.queueLength {
		q.forgetIfIdle(f)
		q.mu.Unlock()
		return nil, ErrQueueFull
	}
	q.seq++
	w := &waiter{flow: f, seq: q.seq, ready: make(chan struct{})}
	if len(f.queue) == 0 {
		q.waiting = append(q.waiting, f)
	}
	f.queue = append(f.queue, w)
	q.mu.Unlock()

	select {
	case <-w.ready:
		return q.releaser(f), nil
	case <-ctx.Done():
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if w.granted {
		// Handed a seat as ctx ended: the request still gives up, and
		// the seat goes on to the next waiter.
		q.releaseLocked(f)
		return nil, fmt.Errorf("fairness: waiting for a seat: %w", ctx.Err())
	}
	q.dequeue(w)
	q.forgetIfIdle(f)
	return nil, fmt.Errorf("fairness: waiting for a seat: %w", ctx.Err())
}

// releaser is the release function of one seat held by f.
func (q *Queues) releaser(f *flow) func() {
	return func() {
		q.mu.Lock()
		q.releaseLocked(f)
		q.mu.Unlock()
	}
}

// releaseLocked gives back a seat of f and hands the free seats to waiters.
func (q *Queues) releaseLocked(f *flow) {
	q.inUse--
	f.executing--
	q.dispatchLocked()
	q.forgetIfIdle(f)
}

// seatLocked gives f a seat.
func (q *Queues) seatLocked(f *flow) {
	q.inUse++
	f.executing++
	q.turn++
	f.lastTurn = q.turn
}

// dispatchLocked hands free seats to waiters, each to the head of the
// queue of the waiting flow that executes the fewest requests; among
// equals, to the flow served longest ago (round robin), then to the
// earliest arrival. Choosing by seats held is what keeps a quiet flow's
// wait short while a noisy one fills every seat: the quiet flow holds none,
// so its request is next. The round robin matters when seats are few: a
// noisy flow whose request just ended holds no more seats than the quiet
// one, and must not win again by having queued first. A flow is never
// passed over for ever: the requests it executes finish, and among the
// flows that then hold as few, it waits at most one turn of each.
func (q *Queues) dispatchLocked() {
	for q.inUse < q.seats && len(q.waiting) > 0 {
		best := 0
		for i, f := range q.waiting[1:] {
			if q.before(f, q.waiting[best]) {
				best = i + 1
			}
		}
		f := q.waiting[best]
		w := f.queue[0]
		f.queue[0] = nil
		f.queue = f.queue[1:]
		if len(f.queue) == 0 {
			q.removeWaiting(best)
		}
		q.seatLocked(f)
		w.granted = true
		close(w.ready)
	}
}

// before reports whether waiting flow a goes before waiting flow b.
func (q *Queues) before(a, b *flow) bool {
	switch {
	case a.executing != b.executing:
		return a.executing < b.executing
	case a.lastTurn != b.lastTurn:
		return a.lastTurn < b.lastTurn
	}
	return a.queue[0].seq < b.queue[0].seq
}

// dequeue removes a waiter that gave up from its flow's queue.
func (q *Queues) dequeue(w *waiter) {
	f := w.flow
	for i, x := range f.queue {
		if x == w {
			f.queue = append(f.queue[:i], f.queue[i+1:]...)
			break
		}
	}
	if len(f.queue) == 0 {
		for i, x := range q.waiting {
			if x == f {
				q.removeWaiting(i)
				break
			}
		}
	}
}

func (q *Queues) removeWaiting(i int) {
	last := len(q.waiting) - 1
	q.waiting[i] = q.waiting[last]
	q.waiting[last] = nil
	q.waiting = q.waiting[:last]
}

// forgetIfIdle drops f from the flows when it neither executes nor waits.
func (q *Queues) forgetIfIdle(f *flow) {
	if f.executing == 0 && len(f.queue) == 0 && q.flows[f.name] == f {
		delete(q.flows, f.name)
	}
}

// Stats is a snapshot of the queues, for tests and metrics.
type Stats struct {
	Seats     int
	InUse     int
	Waiting   int // requests queued, all flows
	Flows     int // flows with a request executing or waiting
	Executing map[string]int
}

// Stats returns the current state.
func (q *Queues) Stats() Stats {
	q.mu.Lock()
	defer q.mu.Unlock()
	s := Stats{Seats: q.seats, InUse: q.inUse, Flows: len(q.flows), Executing: map[string]int{}}
	for name, f := range q.flows {
		s.Waiting += len(f.queue)
		if f.executing > 0 {
			s.Executing[name] = f.executing
		}
	}
	return s
}
