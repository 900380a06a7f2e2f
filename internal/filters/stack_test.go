package filters

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// GrowStack is invisible to the request: the next handler gets the same
// request and writer, and its answer reaches the client.
func TestGrowStack(t *testing.T) {
	req := httptest.NewRequest(http.MethodGet, "/apis", nil)
	h := GrowStack(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r != req {
			t.Error("next handler got another request")
		}
		w.WriteHeader(http.StatusTeapot)
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusTeapot {
		t.Errorf("status %d, want the next handler's %d", rec.Code, http.StatusTeapot)
	}
}

// BenchmarkGrowStack measures a request goroutine that goes deep after
// GrowStack, against one that grows as it goes.
func BenchmarkGrowStack(b *testing.B) {
	deep := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { recurse(64) })
	for _, bc := range []struct {
		name string
		h    http.Handler
	}{{"grown", GrowStack(deep)}, {"growing", deep}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				done := make(chan struct{})
				go func() { bc.h.ServeHTTP(nil, nil); close(done) }()
				<-done
			}
		})
	}
}

// recurse uses about 100 bytes of stack per level.
//
//go:noinline
func recurse(n int) int {
	var pad [64]byte
	if n == 0 {
		return int(pad[n])
	}
	return recurse(n-1) + int(pad[n%64])
}
