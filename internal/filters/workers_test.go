package filters

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"
)

// onWorker reports whether the calling handler runs on a pool worker.
func onWorker() bool {
	buf := make([]byte, 64<<10)
	return bytes.Contains(buf[:runtime.Stack(buf, false)], []byte("workerPool).work"))
}

func TestWorkers(t *testing.T) {
	release := make(chan struct{})
	blocked := make(chan bool, 100) // whether the blocked request is on the worker
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/block":
			blocked <- onWorker()
			<-release
		case "/panic":
			panic(http.ErrAbortHandler)
		case "/goexit":
			runtime.Goexit()
		}
		if onWorker() {
			w.Header().Set("X-Worker", "yes")
		}
		w.WriteHeader(http.StatusTeapot)
	})
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	h = Workers(ctx, 1)(h)
	serve := func(target string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, target, nil))
		return w
	}
	// onIdleWorker serves /a until the worker, which may not be parked yet
	// (it has just started or just finished a request), takes it.
	onIdleWorker := func(what string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			w := serve("/a")
			if w.Code != http.StatusTeapot {
				t.Fatalf("%s: code %d, want 418", what, w.Code)
			}
			if w.Header().Get("X-Worker") == "yes" {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: no request ran on the worker", what)
			}
			time.Sleep(time.Millisecond)
		}
	}

	// An idle worker serves a request, and its answer reaches the client.
	onIdleWorker("idle pool")

	// A watch never takes the worker: the next requests still get it.
	go serve("/block?watch=true")
	if <-blocked {
		t.Fatal("a watch ran on the worker")
	}
	onIdleWorker("pool with a watch open")

	// Occupy the worker (requests that find it not yet parked run on their
	// own goroutines and block too); then a request does not wait for it.
	for {
		go serve("/block")
		if <-blocked {
			break
		}
	}
	if w := serve("/a"); w.Code != http.StatusTeapot || w.Header().Get("X-Worker") != "" {
		t.Fatalf("busy pool: code %d, on worker %q; want 418 on the request's goroutine", w.Code, w.Header().Get("X-Worker"))
	}
	close(release)

	// A panic in a worker surfaces on the request's goroutine, where
	// net/http turns http.ErrAbortHandler into a dropped connection.
	func() {
		defer func() {
			if v := recover(); v != http.ErrAbortHandler {
				t.Errorf("recovered %v, want http.ErrAbortHandler", v)
			}
		}()
		serve("/panic")
	}()

	// So does a runtime.Goexit, and the pool keeps its worker.
	returned := make(chan bool)
	go func() {
		ok := false
		defer func() { returned <- ok }()
		serve("/goexit")
		ok = true
	}()
	if <-returned {
		t.Error("a handler's runtime.Goexit returned on the request's goroutine")
	}
	onIdleWorker("pool after a Goexit")

	// Once ctx ends the workers stop, and requests run on their own
	// goroutines.
	stop()
	for range 20 {
		if w := serve("/a"); w.Code != http.StatusTeapot || w.Header().Get("X-Worker") != "" {
			t.Fatalf("after ctx ended: code %d, on worker %q; want 418 on the request's goroutine", w.Code, w.Header().Get("X-Worker"))
		}
	}
}

func TestStreaming(t *testing.T) {
	for target, want := range map[string]bool{
		"/api/v1/namespaces":                        false,
		"/api/v1/namespaces?watch=1":                true,
		"/api/v1/watch/namespaces":                  true,
		"/apis/g/v1/widgets?labelSelector=a&watch=": true,
		"/debug/pprof/profile?seconds=30":           true,
		"/apis/g/v1/namespaces/ns/widgets/x":        false,
	} {
		if got := streaming(httptest.NewRequest(http.MethodGet, target, nil)); got != want {
			t.Errorf("streaming(%s) = %v, want %v", target, got, want)
		}
	}
}

// BenchmarkWorkers compares a handler with a deep stack served on fresh
// goroutines (as net/http does) with the same through Workers.
func BenchmarkWorkers(b *testing.B) {
	deep := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { recurse(200) })
	for _, tc := range []struct {
		name string
		h    http.Handler
	}{{"direct", deep}, {"workers", Workers(b.Context(), 4)(deep)}} {
		b.Run(tc.name, func(b *testing.B) {
			r := httptest.NewRequest(http.MethodGet, "/a", nil)
			done := make(chan struct{})
			for b.Loop() {
				go func() {
					tc.h.ServeHTTP(nil, r)
					done <- struct{}{}
				}()
				<-done
			}
		})
	}
}

//go:noinline
func recurse(n int) int {
	var pad [64]byte
	if n == 0 {
		return int(pad[0])
	}
	return recurse(n-1) + int(pad[n%64])
}
