package fairness

import (
	"sync"
	"time"
)

// MaxRetryAfter bounds the Retry-After that RetryAfter suggests, as
// upstream's.
const MaxRetryAfter = 32

// RetryAfter suggests how many seconds a refused client should wait before
// it tries again, from how many were refused lately, as upstream's priority
// and fairness does: one second while refusals are few; doubled (up to
// MaxRetryAfter) when, over the last suggestion's span of seconds, at least
// three a second were refused, and at most once per span, so that clients
// that obey it have time to spread out; lowered a second at a time when
// fewer than one a second were. The suggestion changes only as refusals
// come in, on the first refusal of each new second.
//
// The zero value is ready to use, with the system clock; it is safe for
// concurrent use.
type RetryAfter struct {
	// Now is the clock; nil means time.Now. Set it before first use.
	Now func() time.Time

	mu      sync.Mutex // guards the fields below
	seconds int64      // the suggestion; 0 until first used, meaning 1
	raised  int64      // the second it was last raised
	second  int64      // the second count refusals belong to
	count   int64
	history []refusals // past seconds with refusals, oldest first
}

// refusals are the requests refused in one second.
type refusals struct {
	second, count int64
}

// Refused records one refused request and returns the number of seconds
// its client should wait.
func (t *RetryAfter) Refused() int {
	now := time.Now
	if t.Now != nil {
		now = t.Now
	}
	sec := now().Unix()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.seconds == 0 {
		t.seconds = 1
	}
	if sec != t.second {
		if t.count > 0 {
			t.history = append(t.history, refusals{t.second, t.count})
		}
		t.second, t.count = sec, 0
		t.adjust(sec)
	}
	t.count++
	return int(t.seconds)
}

// adjust sets the suggestion at the start of second sec from the refusals
// of the seconds before, within the current span.
func (t *RetryAfter) adjust(sec int64) {
	// Keep what a doubled span could still look at.
	keep := 0
	for keep < len(t.history) && sec-t.history[keep].second > 2*MaxRetryAfter {
		keep++
	}
	t.history = t.history[keep:]
	var recent int64
	for _, h := range t.history {
		if sec-h.second <= t.seconds {
			recent += h.count
		}
	}
	switch {
	case recent >= 3*t.seconds && sec-t.raised >= t.seconds:
		t.seconds = min(2*t.seconds, MaxRetryAfter)
		t.raised = sec
	case recent < t.seconds && t.seconds > 1:
		t.seconds--
	}
}
