package filters

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdserver/crdserver/internal/authn"
	"github.com/crdserver/crdserver/internal/fairness"
	"github.com/crdserver/crdserver/internal/request"
)

// as serves method path through h as user u, with its request info.
func as(h http.Handler, u *authn.User, method, path string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, nil)
	info, err := request.Parse(method, r.URL.Path, r.URL.Query())
	if err != nil {
		panic(err)
	}
	ctx := request.WithInfo(r.Context(), info)
	if u != nil {
		ctx = authn.WithUser(ctx, u)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r.WithContext(ctx))
	return w
}

// blocker is a handler that holds every request until released.
type blocker struct {
	entered chan string // the user of each request that got in
	release chan struct{}
}

func newBlocker() *blocker {
	return &blocker{entered: make(chan string, 100), release: make(chan struct{})}
}

func (b *blocker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u, _ := authn.UserFrom(r.Context())
	name := ""
	if u != nil {
		name = u.Name
	}
	b.entered <- name
	<-b.release
	w.WriteHeader(http.StatusNoContent)
}

func waitQueued(t *testing.T, q *fairness.Queues, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for q.Stats().Waiting < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests queued, want %d", q.Stats().Waiting, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func check429(t *testing.T, w *httptest.ResponseRecorder, msg string) {
	t.Helper()
	if w.Code != http.StatusTooManyRequests {
		t.Fatalf("code %d, want 429: %s", w.Code, w.Body.String())
	}
	st := status(t, w)
	if st.Reason != metav1.StatusReasonTooManyRequests || st.Message != msg ||
		st.Details == nil || st.Details.RetryAfterSeconds != 1 || w.Header().Get("Retry-After") != "1" {
		t.Fatalf("got %+v, Retry-After %q", st, w.Header().Get("Retry-After"))
	}
}

var (
	alice = &authn.User{Name: "alice", Groups: []string{authn.Authenticated}}
	bob   = &authn.User{Name: "bob", Groups: []string{authn.Authenticated}}
	admin = &authn.User{Name: "admin", Groups: []string{authn.Masters, authn.Authenticated}}
)

// TestFairQueue: a user who floods the server waits in, then overflows,
// a queue of their own, and gets upstream's 429 with Retry-After; another
// user's request is served next.
func TestFairQueue(t *testing.T) {
	q := fairness.New(1, 2)
	b := newBlocker()
	h := FairQueue(q)(b)
	const path = "/apis/example.com/v1/namespaces/ns/widgets"

	var wg sync.WaitGroup
	codes := make(chan int, 10)
	serve := func(u *authn.User) {
		wg.Go(func() { codes <- as(h, u, "GET", path).Code })
	}
	serve(alice)
	if got := <-b.entered; got != "alice" {
		t.Fatalf("first in: %s", got)
	}
	serve(alice)
	serve(alice)
	waitQueued(t, q, 2)
	check429(t, as(h, alice, "GET", path), tooManyRequests) // alice's queue is full
	serve(bob)
	waitQueued(t, q, 3)

	b.release <- struct{}{} // alice's first request ends
	if got := <-b.entered; got != "bob" {
		t.Fatalf("after alice's request, %s got the seat; want bob, queued last but holding none", got)
	}
	close(b.release)
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != http.StatusNoContent {
			t.Errorf("queued request got %d", c)
		}
	}
}

// TestFairQueueBypass: watches and other long-running requests, members of
// system:masters and the health checks do not wait for a seat.
func TestFairQueueBypass(t *testing.T) {
	q := fairness.New(1, -1) // no queue: anything that would wait is refused
	b := newBlocker()
	h := FairQueue(q)(b)
	var wg sync.WaitGroup
	wg.Go(func() { as(h, alice, "GET", "/apis/example.com/v1/widgets") })
	<-b.entered // the only seat is taken

	check429(t, as(h, bob, "GET", "/apis/example.com/v1/widgets"), tooManyRequests)
	check429(t, as(h, nil, "GET", "/version"), tooManyRequests)
	for _, tc := range []struct {
		name string
		u    *authn.User
		path string
	}{
		{"watch", bob, "/apis/example.com/v1/widgets?watch=1"},
		{"exec", bob, "/api/v1/namespaces/ns/pods/p/exec"},
		{"system:masters", admin, "/apis/example.com/v1/widgets"},
		{"healthz", nil, "/healthz"},
		{"readyz check", nil, "/readyz/etcd"},
		{"livez", bob, "/livez"},
	} {
		wg.Go(func() { as(h, tc.u, "GET", tc.path) })
		select {
		case <-b.entered:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: did not bypass the full queues", tc.name)
		}
	}
	close(b.release)
	wg.Wait()

	// Without queues nothing is limited.
	if w := as(FairQueue(nil)(ok), bob, "GET", "/api/v1/namespaces"); w.Code != http.StatusNoContent {
		t.Fatalf("no queues: %d", w.Code)
	}
}

// TestFairQueueWaitLimit: a request waits for a quarter of the time it has
// left, then gets a 429.
func TestFairQueueWaitLimit(t *testing.T) {
	q := fairness.New(1, 0)
	b := newBlocker()
	h := Chain(b, Timeout(2*time.Second), FairQueue(q))
	var wg sync.WaitGroup
	wg.Go(func() { as(h, alice, "GET", "/api/v1/namespaces") })
	<-b.entered
	start := time.Now()
	w := as(h, bob, "GET", "/api/v1/namespaces")
	waited := time.Since(start)
	check429(t, w, tooManyRequests)
	if waited < 400*time.Millisecond || waited > 1500*time.Millisecond {
		t.Errorf("waited %v, want about 500ms (a quarter of 2s)", waited)
	}
	close(b.release)
	wg.Wait()
	if s := q.Stats(); s.InUse != 0 || s.Waiting != 0 {
		t.Fatalf("seats left behind: %+v", s)
	}
}

func TestMaxWatchesPerUser(t *testing.T) {
	b := newBlocker()
	h := MaxWatchesPerUser(2)(b)
	const watch = "/apis/example.com/v1/widgets?watch=1"
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { as(h, alice, "GET", watch) })
		<-b.entered
	}
	check429(t, as(h, alice, "GET", watch), `too many watches: user "alice" has 2 open, the most allowed; please try again later`)
	for _, tc := range []struct {
		name, path string
		u          *authn.User
	}{
		{"another user", watch, bob},
		{"not a watch", "/apis/example.com/v1/widgets", alice},
		{"system:masters", watch, admin},
	} {
		wg.Go(func() { as(h, tc.u, "GET", tc.path) })
		select {
		case <-b.entered:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: refused", tc.name)
		}
	}
	close(b.release)
	wg.Wait()
	// Closed watches are counted no more.
	b = newBlocker()
	close(b.release)
	h = MaxWatchesPerUser(1)(b)
	for range 3 {
		if w := as(h, alice, "GET", watch); w.Code != http.StatusNoContent {
			t.Fatalf("watch after the others closed: %d", w.Code)
		}
	}
}
