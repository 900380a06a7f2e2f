package filters

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestTimeout(t *testing.T) {
	quiet(t)
	// slow answers after 10s, or when its context ends: then it reports
	// why on ended, and tries to answer anyway. It reports its context's
	// deadline, and when it started, on calls.
	ended := make(chan error, 1)
	type call struct{ started, deadline time.Time }
	calls := make(chan call, 1)
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		deadline, _ := r.Context().Deadline()
		calls <- call{time.Now(), deadline}
		w.Header().Set("X-Handler", "slow")
		select {
		case <-r.Context().Done():
			// Filters change the request's headers (Authenticate
			// drops Authorization) as the 504 is written.
			r.Header.Del("Accept")
			ended <- r.Context().Err()
			w.WriteHeader(http.StatusInternalServerError)
		case <-time.After(10 * time.Second):
			w.WriteHeader(http.StatusOK)
		}
	})
	h := Chain(slow, RequestInfo, Timeout(time.Second))

	start := time.Now()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/apis/example.com/v1/namespaces/ns/widgets/w", nil))
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("answered after %v", took)
	}
	if w.Code != http.StatusGatewayTimeout {
		t.Fatalf("code %d, want 504: %s", w.Code, w.Body.String())
	}
	st := status(t, w)
	if st.Reason != metav1.StatusReasonTimeout || st.Message != "Timeout: request did not complete within the allotted timeout" {
		t.Fatalf("status %+v", st)
	}
	if w.Header().Get("X-Handler") != "" {
		t.Errorf("the handler's headers leaked into the 504")
	}
	select {
	case err := <-ended:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("handler's context ended with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the handler's context was not cancelled")
	}

	<-calls

	// A shorter ?timeout= wins; a longer one does not. Which one won is
	// read from the deadline the handler gets, set between the request's
	// start and the handler's, rather than from how long the answer took
	// on a machine that may be busy.
	for _, tc := range []struct {
		query   string
		code    int
		timeout time.Duration
	}{
		{"?timeout=20ms", 504, 20 * time.Millisecond},
		{"?timeout=1h", 504, time.Second},
		{"?timeout=0s", 504, time.Second},
		{"?timeout=soon", 400, 0},
	} {
		start := time.Now()
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/api/v1/namespaces"+tc.query, nil))
		if w.Code != tc.code {
			t.Errorf("%s: %d, want %d", tc.query, w.Code, tc.code)
		}
		if tc.code == 504 {
			select {
			case c := <-calls:
				if c.deadline.Before(start.Add(tc.timeout)) || c.deadline.After(c.started.Add(tc.timeout)) {
					t.Errorf("%s: the handler's deadline is %v after the request's start, want a timeout of %v", tc.query, c.deadline.Sub(start), tc.timeout)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("%s: the handler was not called", tc.query)
			}
		}
		if tc.code == 400 {
			if st := status(t, w); st.Message != `invalid timeout specified in the request URL - time: invalid duration "soon"` {
				t.Errorf("400 message %q", st.Message)
			}
		}
		select {
		case <-ended:
		case <-time.After(5 * time.Second):
			if tc.code == 504 {
				t.Fatalf("%s: handler still running", tc.query)
			}
		}
	}
}

// TestTimeoutPassesAnswers: a handler that answers in time is answered as
// it wrote, headers, flushes and all; long-running requests get no
// deadline.
func TestTimeoutPassesAnswers(t *testing.T) {
	var deadline bool
	h := Chain(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, deadline = r.Context().Deadline()
		w.Header().Set("X-Handler", "fast")
		w.Write([]byte("part one,"))
		w.(http.Flusher).Flush()
		w.Write([]byte("part two"))
	}), RequestInfo, Timeout(time.Minute))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/api/v1/namespaces", nil))
	if w.Code != 200 || w.Body.String() != "part one,part two" || w.Header().Get("X-Handler") != "fast" || !w.Flushed || !deadline {
		t.Fatalf("got %d %q %v flushed=%v deadline=%v", w.Code, w.Body.String(), w.Header(), w.Flushed, deadline)
	}
	w = httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/api/v1/namespaces?watch=1", nil))
	if deadline {
		t.Fatal("a watch got a deadline")
	}
	// A timeout of zero is none.
	Chain(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, deadline = r.Context().Deadline()
	}), RequestInfo, Timeout(0)).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/api/v1/namespaces", nil))
	if deadline {
		t.Fatal("Timeout(0) set a deadline")
	}
}

// TestTimeoutPanics: a panic in the handler reaches Recover as a 500;
// one after the deadline is only logged.
func TestTimeoutPanics(t *testing.T) {
	quiet(t)
	logs := &syncBuffer{}
	slog.SetDefault(slog.New(slog.NewTextHandler(logs, nil))) // quiet restores it
	h := Chain(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }), Recover, RequestInfo, Timeout(time.Minute))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/api/v1/namespaces", nil))
	if w.Code != 500 {
		t.Fatalf("code %d", w.Code)
	}
	late := make(chan struct{})
	h = Chain(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
		defer close(late)
		panic("late boom")
	}), Recover, RequestInfo, Timeout(10*time.Millisecond))
	w = httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/api/v1/namespaces", nil))
	if w.Code != 504 {
		t.Fatalf("code %d", w.Code)
	}
	<-late
	waitLog := time.Now().Add(5 * time.Second)
	for !strings.Contains(logs.String(), "late boom") {
		if time.Now().After(waitLog) {
			t.Fatalf("late panic not logged: %s", logs)
		}
		time.Sleep(time.Millisecond)
	}
}

// syncBuffer is a log buffer safe to read while another goroutine logs.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
