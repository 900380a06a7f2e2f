package loadgen

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
)

// TestAdmissionAdded: a variant's cost is measured against the runs on
// either side of it, so a machine that gets busier run by run (here 100 µs
// more each run) does not count as a cost.
func TestAdmissionAdded(t *testing.T) {
	us := time.Microsecond
	var runs []admissionRun
	drift := time.Duration(0)
	next := func(v string, cost time.Duration) {
		runs = append(runs, admissionRun{variant: v, p50: time.Millisecond + drift + cost, cpu: 700*us + drift + cost})
		drift += 100 * us
	}
	next(admissionNone, 0)
	for range 2 {
		next(admissionMutating, 150*us)
		next(admissionNone, 0)
		next(admissionPolicy, 10*us)
		next(admissionNone, 0)
	}
	for _, c := range []struct {
		variant string
		want    []time.Duration
	}{
		{admissionMutating, []time.Duration{150 * us, 150 * us}},
		{admissionPolicy, []time.Duration{10 * us, 10 * us}},
		{admissionValidating, nil},
	} {
		lat, cpu := added(runs, c.variant)
		if !slices.Equal(lat, c.want) || !slices.Equal(cpu, c.want) {
			t.Errorf("%s: added latency %v, CPU %v; want %v for both", c.variant, lat, cpu, c.want)
		}
	}
}

// TestAdmissionNote: with several copies registered, the note names them
// and divides the CPU they added among them.
func TestAdmissionNote(t *testing.T) {
	us := time.Microsecond
	lat := []time.Duration{900 * us, 1100 * us, 1000 * us}
	cpu := []time.Duration{80 * us, 120 * us, 100 * us}
	for _, c := range []struct {
		v       string
		copies  int
		withCPU bool
		want    string
	}{
		{admissionPolicy, 1, true, "admission policy: adds 1ms to the p50 latency of an update (median of 3 runs, spread 900µs to 1.1ms) and 100µs of server CPU per update (spread 80µs to 120µs)"},
		{admissionPolicy, 10, true, "admission policy ×10: adds 1ms to the p50 latency of an update (median of 3 runs, spread 900µs to 1.1ms) and 100µs of server CPU per update (spread 80µs to 120µs), 10µs per policy"},
		{admissionValidating, 4, true, "admission validating-webhook ×4: adds 1ms to the p50 latency of an update (median of 3 runs, spread 900µs to 1.1ms) and 100µs of server CPU per update (spread 80µs to 120µs), 25µs per webhook"},
		{admissionMutating, 4, false, "admission mutating-webhook ×4: adds 1ms to the p50 latency of an update (median of 3 runs, spread 900µs to 1.1ms)"},
	} {
		if got := admissionNote(c.v, c.copies, lat, cpu, c.withCPU); got != c.want {
			t.Errorf("%s ×%d:\n got %s\nwant %s", c.v, c.copies, got, c.want)
		}
	}
}

func TestAllowReview(t *testing.T) {
	tests := []struct {
		name, review string
		wantUID      string // "" when the review must be refused
	}{
		{
			name: "update",
			// The objects' own uids come first and must not be taken for
			// the request's.
			review:  `{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"object":{"metadata":{"uid":"obj"}},"oldObject":{"metadata":{"uid":"old"}},"uid":"req-1","operation":"UPDATE"}}`,
			wantUID: "req-1",
		},
		{name: "uid first", review: `{"request":{"uid":"a\"b","object":null}}`, wantUID: `a"b`},
		{name: "no request", review: `{"kind":"AdmissionReview","uid":"top"}`},
		{name: "no uid", review: `{"request":{"object":{"metadata":{"uid":"obj"}}}}`},
		{name: "truncated", review: `{"request":{"uid":"req-1"`},
		{name: "trailing bytes", review: `{"request":{"uid":"req-1"}}x`},
		{name: "not an object", review: `[]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ans, err := allowReview([]byte(tt.review))
			if tt.wantUID == "" {
				if err == nil {
					t.Fatalf("answered %s, want an error", ans)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got admissionv1.AdmissionReview
			if err := json.Unmarshal(ans, &got); err != nil {
				t.Fatalf("answer %s: %v", ans, err)
			}
			if got.APIVersion != "admission.k8s.io/v1" || got.Kind != "AdmissionReview" || got.Response == nil ||
				string(got.Response.UID) != tt.wantUID || !got.Response.Allowed {
				t.Errorf("answer %s, want the request's uid %q allowed", ans, tt.wantUID)
			}
		})
	}
}
