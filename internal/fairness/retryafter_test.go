package fairness

import (
	"testing"
	"time"
)

// TestRetryAfter: under a steady flood of refusals the suggested wait
// doubles once per span up to 32s; once refusals stop coming, it falls a
// second at a time with each refusal.
func TestRetryAfter(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	ra := &RetryAfter{Now: func() time.Time { return now }}
	// Few refusals: one second.
	for range 3 {
		if got := ra.Refused(); got != 1 {
			t.Fatalf("first refusals: %d", got)
		}
		now = now.Add(2 * time.Second)
	}
	// Ten a second: 1 → 2 → 4 → 8 → 16 → 32, raised at most once per span.
	var seen []int
	for range 70 {
		now = now.Add(time.Second)
		var got int
		for range 10 {
			got = ra.Refused()
		}
		if len(seen) == 0 || seen[len(seen)-1] != got {
			seen = append(seen, got)
		}
	}
	want := []int{1, 2, 4, 8, 16, 32}
	if len(seen) != len(want) {
		t.Fatalf("suggestions %v, want %v", seen, want)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Fatalf("suggestions %v, want %v", seen, want)
		}
	}
	// One refusal a minute: back down a second each time.
	for i := range 5 {
		now = now.Add(time.Minute)
		if got := ra.Refused(); got != 31-i {
			t.Fatalf("after %d quiet minutes: %d, want %d", i+1, got, 31-i)
		}
	}
	// The zero value works.
	var zero RetryAfter
	if got := zero.Refused(); got != 1 {
		t.Fatalf("zero value: %d", got)
	}
}
