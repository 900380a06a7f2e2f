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
func SetRefusedDelay(t *Transport, d time.Duration) { t.refusedBase = d }

// SendWindow is the send window of t's first connection.
func SendWindow(t *Transport) int64 {
	c := firstConn(t)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sendWindow
}

// HoldWrite takes the write slot of t's first connection, as a call
// blocked in its write holds it, until release is called.
func HoldWrite(t *Transport) (release func()) {
	c := firstConn(t)
	c.wsem <- struct{}{}
	return c.unlockWrite
}

func firstConn(t *Transport) *conn {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.conns[0]
}

// Stale reports whether t's first connection was found silent without
// calls by its health check.
func Stale(t *Transport) bool {
	c := firstConn(t)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stale
}

// Timeouts are the idle, read-idle and ping timeouts t applies.
func Timeouts(t *Transport) (idle, readIdle, ping time.Duration) {
	return t.idleTimeout(), t.readIdleTimeout(), t.pingTimeout()
}
