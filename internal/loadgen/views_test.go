package loadgen

import (
	"os"
	"testing"
	"time"
)

func TestContinueOf(t *testing.T) {
	for in, want := range map[string]string{
		`{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"5","continue":"abc"},"rows":[]}`: "abc",
		`{"kind":"Table","metadata":{"resourceVersion":"5"},"rows":[]}`:                                                "",
		`{"metadata":{"continue":"unterminated`:                                                                        "",
	} {
		if got := continueOf([]byte(in)); got != want {
			t.Errorf("continueOf(%s) = %q, want %q", in, got, want)
		}
	}
}

// The usage of this process is readable, and grows with work done.
func TestWatchServer(t *testing.T) {
	stop := watchServers([]int{os.Getpid()})
	for start := time.Now(); time.Since(start) < 50*time.Millisecond; {
	}
	u, err := stop()
	if err != nil {
		t.Fatal(err)
	}
	if u.RSSBefore <= 0 || u.RSSPeak < u.RSSBefore || u.RSSAfter <= 0 || u.CPU < 0 {
		t.Errorf("usage %+v", u)
	}
	if u, err := watchServers(nil)(); u != nil || err != nil {
		t.Errorf("pid 0: %v, %v", u, err)
	}
}
