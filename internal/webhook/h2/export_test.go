package h2

// ConnCount is how many connections t keeps.
func ConnCount(t *Transport) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.conns)
}
