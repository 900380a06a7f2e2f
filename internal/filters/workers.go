package filters

import (
	"context"
	"errors"
	"net/http"
	"runtime"
	"strings"
	"sync"
)

// Workers runs short requests on up to n long-lived goroutines instead of
// the one net/http starts for each request.
//
// Why: a new goroutine starts with a small stack, and serving a request
// through TLS, HTTP/2 and this chain grows it several times; each growth
// copies the stack, and profiles of gets put that copying at 10–15% of the
// server's CPU. A worker's stack stays grown between requests (the garbage
// collector shrinks idle stacks only gradually). gRPC's servers offer the
// same trade as NumStreamWorkers.
//
// A request waits for no worker: when none is idle it runs on its own
// goroutine as before. Workers stop when ctx ends; requests then all run
// on their own goroutines. Watches and other streams run on their own
// goroutine too, so they never hold a worker for long. A panic in a worker
// is re-raised on the request's goroutine, where net/http expects it
// (http.ErrAbortHandler aborts the response), and so is a runtime.Goexit. Filters that recover panics
// belong after Workers in the chain, so that they log the real stack.
func Workers(ctx context.Context, n int) Filter {
	return func(next http.Handler) http.Handler {
		if n <= 0 {
			return next
		}
		p := &workerPool{next: next, jobs: make(chan *job)}
		for range n {
			go p.work(ctx)
		}
		return p
	}
}

type workerPool struct {
	next http.Handler
	jobs chan *job // unbuffered: a send succeeds only when a worker is idle
}

// job is one request handed to a worker; done carries the recovered panic
// value, nil when the handler returned, errGoexit when it called
// runtime.Goexit.
type job struct {
	w    http.ResponseWriter
	r    *http.Request
	done chan any
}

var jobs = sync.Pool{New: func() any { return &job{done: make(chan any, 1)} }}

func (p *workerPool) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if streaming(r) {
		p.next.ServeHTTP(w, r)
		return
	}
	j := jobs.Get().(*job)
	j.w, j.r = w, r
	select {
	case p.jobs <- j:
		v := <-j.done
		j.w, j.r = nil, nil
		jobs.Put(j)
		switch {
		case v == errGoexit:
			runtime.Goexit()
		case v != nil:
			panic(v)
		}
	default:
		j.w, j.r = nil, nil
		jobs.Put(j)
		p.next.ServeHTTP(w, r)
	}
}

// errGoexit stands for a handler's runtime.Goexit, which ends its worker.
var errGoexit = errors.New("handler called runtime.Goexit")

func (p *workerPool) work(ctx context.Context) {
	for {
		select {
		case j := <-p.jobs:
			p.serve(ctx, j)
		case <-ctx.Done():
			return
		}
	}
}

// serve runs j and reports its outcome on j.done. A handler's
// runtime.Goexit ends the worker's goroutine after serve's deferred call,
// which starts a replacement.
func (p *workerPool) serve(ctx context.Context, j *job) {
	returned := false
	defer func() {
		if returned {
			j.done <- nil
			return
		}
		v := recover()
		if v == nil {
			v = errGoexit
			go p.work(ctx)
		}
		j.done <- v
	}()
	p.next.ServeHTTP(j.w, j.r)
	returned = true
}

// streaming reports whether r may stay open for long: a watch (the query
// parameter or the legacy /watch/ path) or a profile. It errs on the side
// of yes; a false yes only costs the stack growth Workers saves.
func streaming(r *http.Request) bool {
	return strings.Contains(r.URL.RawQuery, "watch") ||
		strings.Contains(r.URL.Path, "/watch/") ||
		strings.HasPrefix(r.URL.Path, "/debug/")
}
