package fairness

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// acquired is the outcome of one Acquire run in the background.
type acquired struct {
	flow    string
	release func()
	err     error
}

// start runs Acquire for flow in the background and returns where its
// outcome arrives. It waits until the request is queued (or served), so
// that tests control the order of arrival.
func start(t *testing.T, q *Queues, ctx context.Context, flow string) <-chan acquired {
	t.Helper()
	before := q.Stats()
	ch := make(chan acquired, 1)
	go func() {
		r, err := q.Acquire(ctx, flow)
		ch <- acquired{flow, r, err}
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		s := q.Stats()
		if s.Waiting > before.Waiting || s.InUse > before.InUse {
			return ch
		}
		select {
		case a := <-ch: // refused at once
			ch <- a
			return ch
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("request of %s neither queued nor served", flow)
		}
		time.Sleep(time.Millisecond)
	}
}

func mustAcquire(t *testing.T, q *Queues, flow string) func() {
	t.Helper()
	r, err := q.Acquire(context.Background(), flow)
	if err != nil {
		t.Fatalf("acquire %s: %v", flow, err)
	}
	return r
}

func pending(ch <-chan acquired) bool {
	select {
	case a := <-ch:
		panic(fmt.Sprintf("request of %s served early (err %v)", a.flow, a.err))
	default:
		return true
	}
}

func TestFreeSeatsServeAtOnce(t *testing.T) {
	q := New(2, 0)
	r1 := mustAcquire(t, q, "alice")
	r2 := mustAcquire(t, q, "alice")
	if s := q.Stats(); s.InUse != 2 || s.Executing["alice"] != 2 {
		t.Fatalf("stats %+v", s)
	}
	r1()
	r2()
	if s := q.Stats(); s.InUse != 0 || s.Flows != 0 {
		t.Fatalf("after release: %+v (an idle flow must be forgotten)", s)
	}
}

// TestQuietFlowGoesFirst: with every seat held by a noisy flow that has
// more requests waiting, the quiet flow's request, queued last, gets the
// next free seat.
func TestQuietFlowGoesFirst(t *testing.T) {
	q := New(2, 0)
	ctx := context.Background()
	held := []func(){mustAcquire(t, q, "noisy"), mustAcquire(t, q, "noisy")}
	var noisy []<-chan acquired
	for range 5 {
		noisy = append(noisy, start(t, q, ctx, "noisy"))
	}
	quiet := start(t, q, ctx, "quiet")

	held[0]()
	a := <-quiet
	if a.err != nil {
		t.Fatalf("quiet: %v", a.err)
	}
	for _, ch := range noisy {
		pending(ch)
	}
	// The next seat goes to the noisy flow's oldest request.
	held[1]()
	first := <-noisy[0]
	if first.err != nil {
		t.Fatal(first.err)
	}
	for _, ch := range noisy[1:] {
		pending(ch)
	}
	a.release()
	first.release()
	for _, ch := range noisy[1:] {
		(<-ch).release()
	}
	if s := q.Stats(); s.InUse != 0 || s.Waiting != 0 || s.Flows != 0 {
		t.Fatalf("after all: %+v", s)
	}
}

// TestSeatsSharedEvenly: seats freed one by one are shared among the
// waiting flows evenly, whatever each has queued; a flow that asks for less
// than its share gets what it asks and leaves the rest to the others.
func TestSeatsSharedEvenly(t *testing.T) {
	for _, tc := range []struct {
		name  string
		seats int
		queue map[string]int // requests queued per flow, beyond the seats held by "a"
		want  map[string]int // seats held once "a" gave its seats back
	}{
		{"two flows", 4, map[string]int{"b": 10, "c": 1}, map[string]int{"b": 3, "c": 1}},
		{"three flows", 6, map[string]int{"b": 10, "c": 10, "d": 10}, map[string]int{"b": 2, "c": 2, "d": 2}},
		{"uneven demand", 6, map[string]int{"b": 1, "c": 10, "d": 10}, map[string]int{"b": 1, "c": 2, "d": 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := New(tc.seats, 0)
			var held []func()
			for range tc.seats {
				held = append(held, mustAcquire(t, q, "a"))
			}
			var chans []<-chan acquired
			// Interleave arrivals so that no flow is first in every round.
			for i := range 10 {
				for _, f := range []string{"d", "c", "b"} {
					if i < tc.queue[f] {
						chans = append(chans, start(t, q, context.Background(), f))
					}
				}
			}
			for _, r := range held {
				r()
			}
			got := q.Stats().Executing
			for f, n := range tc.want {
				if got[f] != n {
					t.Errorf("%s holds %d seats, want %d (all: %v)", f, got[f], n, got)
				}
			}
			// Drain.
			for len(chans) > 0 {
				for i, ch := range chans {
					select {
					case a := <-ch:
						a.release()
						chans = append(chans[:i], chans[i+1:]...)
					default:
						continue
					}
					break
				}
			}
		})
	}
}

func TestQueueFull(t *testing.T) {
	q := New(1, 2)
	r := mustAcquire(t, q, "noisy")
	ctx := context.Background()
	w1, w2 := start(t, q, ctx, "noisy"), start(t, q, ctx, "noisy")
	if _, err := q.Acquire(ctx, "noisy"); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("third waiter: %v, want ErrQueueFull", err)
	}
	// Another flow's queue is its own; it is served first, the noisy
	// flow having just had its turn.
	quiet := start(t, q, ctx, "quiet")
	r()
	(<-quiet).release()
	(<-w1).release()
	(<-w2).release()

	// A negative queue length refuses at once when no seat is free.
	q = New(1, -1)
	r = mustAcquire(t, q, "a")
	if _, err := q.Acquire(ctx, "b"); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("no queue: %v, want ErrQueueFull", err)
	}
	r()
	if s := q.Stats(); s.Flows != 0 {
		t.Fatalf("refused flow kept: %+v", s)
	}
}

// TestCancelFreesTheSlot: a waiter whose context ends leaves its queue, and
// a seat given back is handed on.
func TestCancelFreesTheSlot(t *testing.T) {
	q := New(1, 1)
	r := mustAcquire(t, q, "a")
	ctx, cancel := context.WithCancel(context.Background())
	w := start(t, q, ctx, "b")
	cancel()
	if a := <-w; !errors.Is(a.err, context.Canceled) || a.release != nil {
		t.Fatalf("cancelled waiter: %+v", a)
	}
	// b's queue slot is free again: one more may wait.
	w = start(t, q, context.Background(), "b")
	if s := q.Stats(); s.Waiting != 1 {
		t.Fatalf("stats %+v", s)
	}
	r()
	(<-w).release()

	// A deadline is the wait limit.
	r = mustAcquire(t, q, "a")
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := q.Acquire(ctx, "b"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("timed out waiter: %v", err)
	}
	r()
	if s := q.Stats(); s.InUse != 0 || s.Waiting != 0 || s.Flows != 0 {
		t.Fatalf("after all: %+v", s)
	}
}

// TestConcurrentUse hammers the queues from many goroutines (run with
// -race): no more than seats execute at once, and every seat comes back.
func TestConcurrentUse(t *testing.T) {
	const seats = 3
	q := New(seats, 4)
	var mu sync.Mutex
	running, peak, served, refused := 0, 0, 0, 0
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 200 {
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%3)*time.Millisecond)
				r, err := q.Acquire(ctx, fmt.Sprint("flow", g%4))
				cancel()
				mu.Lock()
				if err != nil {
					refused++
					mu.Unlock()
					continue
				}
				running++
				peak = max(peak, running)
				served++
				mu.Unlock()
				time.Sleep(10 * time.Microsecond)
				mu.Lock()
				running--
				mu.Unlock()
				r()
			}
		})
	}
	wg.Wait()
	if peak > seats {
		t.Errorf("%d executing at once, want at most %d", peak, seats)
	}
	if served == 0 || served+refused != 16*200 {
		t.Errorf("served %d refused %d", served, refused)
	}
	if s := q.Stats(); s.InUse != 0 || s.Waiting != 0 || s.Flows != 0 {
		t.Fatalf("after all: %+v", s)
	}
}

// TestOneSeatTakesTurns: with one seat, the noisy flow's request that ends
// leaves it holding no more than the quiet flow; the quiet request, though
// queued after all the noisy ones, goes next.
func TestOneSeatTakesTurns(t *testing.T) {
	q := New(1, 0)
	ctx := context.Background()
	r := mustAcquire(t, q, "noisy")
	var noisy []<-chan acquired
	for range 10 {
		noisy = append(noisy, start(t, q, ctx, "noisy"))
	}
	quiet := start(t, q, ctx, "quiet")
	r()
	a := <-quiet
	for _, ch := range noisy {
		pending(ch)
	}
	a.release()
	for _, ch := range noisy {
		(<-ch).release()
	}
}
