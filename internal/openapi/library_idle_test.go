package openapi

import (
	"testing"
	"time"
)

// fakeTimers runs the functions given to after when step moves its time
// past their deadline, in the caller's goroutine.
type fakeTimers struct {
	t       time.Time
	pending []fakeTimer
}

type fakeTimer struct {
	at time.Time
	f  func()
}

func (c *fakeTimers) now() time.Time { return c.t }

func (c *fakeTimers) after(d time.Duration, f func()) {
	c.pending = append(c.pending, fakeTimer{c.t.Add(d), f})
}

func (c *fakeTimers) step(d time.Duration) {
	c.t = c.t.Add(d)
	for fired := true; fired; {
		fired = false
		for i, p := range c.pending {
			if !p.at.After(c.t) {
				c.pending = append(c.pending[:i], c.pending[i+1:]...)
				p.f()
				fired = true
				break
			}
		}
	}
}

// TestIdleRelease: a release asked for waits until nothing has touched
// the library for the idle time, counted from the latest touch, and
// several asks while one waits release once.
func TestIdleRelease(t *testing.T) {
	clk := &fakeTimers{t: time.Unix(1000, 0)}
	released := 0
	r := &idleRelease{now: clk.now, after: clk.after, idle: 10 * time.Second, release: func() { released++ }}
	r.releaseWhenIdle()
	r.releaseWhenIdle()
	for _, step := range []struct {
		touch bool
		after time.Duration
		want  int
	}{
		{after: 6 * time.Second, want: 0},
		{touch: true, after: 6 * time.Second, want: 0}, // 12 s after the ask, 6 s after the touch
		{after: 4 * time.Second, want: 1},
		{after: 30 * time.Second, want: 1},
	} {
		if step.touch {
			r.touch()
		}
		clk.step(step.after)
		if released != step.want {
			t.Fatalf("after %v: released %d times, want %d", step.after, released, step.want)
		}
	}
	// Asked again, it releases again.
	r.releaseWhenIdle()
	clk.step(10 * time.Second)
	if released != 2 {
		t.Fatalf("released %d times, want 2", released)
	}
}
