package loadgen

import (
	"os"
	"testing"
	"time"
)

// TestTaskCPU: the server's CPU time is read to the nanosecond from its
// threads, and agrees with what the kernel reports for the whole process.
func TestTaskCPU(t *testing.T) {
	before, ok := taskCPU(os.Getpid())
	if !ok {
		t.Skip("no /proc/PID/task/TID/schedstat on this kernel")
	}
	// Spin until the kernel counted 30 ms of CPU for the process (on a
	// busy machine, 30 ms of wall time may hold much less).
	for start := selfCPU(); selfCPU()-start < 30*time.Millisecond; {
	}
	after, _ := taskCPU(os.Getpid())
	if d := after - before; d < 20*time.Millisecond {
		t.Errorf("30 ms of CPU spinning counted %s", d)
	}
	if d := after % (10 * time.Millisecond); d == 0 {
		t.Errorf("taskCPU = %s: still counted in clock ticks", after)
	}
	// getrusage also counts exited threads, so it may be a little more.
	if self := selfCPU(); after > self+5*time.Millisecond || after < self-50*time.Millisecond {
		t.Errorf("taskCPU = %s, getrusage = %s", after, self)
	}
	cpu, rss, err := procStats(os.Getpid())
	if err != nil || cpu < after || rss <= 0 {
		t.Errorf("procStats = %s, %d, %v; want at least %s and some RSS", cpu, rss, err, after)
	}
}
