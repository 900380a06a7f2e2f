package h2

import "time"

// ConnCount is how many connections t keeps.
func ConnCount(t *Transport) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.conns)
}

// SetRefusedDelay makes t wait d (doubling) before it makes a refused
// call again.
func SetRefusedDelay(t *Transport, d time.Duration) { t.refusedDelay = d }
