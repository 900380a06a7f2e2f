// Package compress holds what gzipping answers needs in two places: the
// filter that compresses large answers on their way out
// (filters.Compress), and the handler, which compresses an answer itself
// when it can do so while the answer is still being made (a list whose
// objects a conversion webhook converts, batch by batch). Both draw on one
// bounded set of compressors.
package compress

import (
	"context"
	"io"
	"runtime"
	"time"

	"github.com/klauspost/compress/gzip"
)

// Writer is the gzip compressor answers are compressed with: klauspost's,
// whose fastest level compresses lists of objects in half the time the
// standard library's takes, into a smaller answer, and which any gzip
// reader reads.
type Writer = gzip.Writer

// Threshold is the size over which an answer is compressed: larger than
// almost any single object, smaller than a page of 500 of them.
const Threshold = 128 << 10

// compressors are the gzip writers answers are compressed with, four per
// core. A writer is held while its answer goes out, as long as the client
// takes to read it, so there are more than cores. An answer that finds
// none free is sent as it is (HTTP allows it, clients read both alike),
// which for a list of objects of one kind costs more than compressing it:
// sending 10,000 of the load generator's objects (35 MB) over TLS took
// 40–50 ms of the server's CPU against gzip's 27 ms and 1.1 MB, and 16
// such lists at once on two cores took twice as long (p50) with a writer
// per core as with eight. Writers are kept, not pooled for the collector
// to empty, as each holds 0.8 MB of window and tables that every large
// list would allocate again (16 paged lists at once once made RSS rise by
// 70 MB); at most 3.2 MB per core stay after a burst.
var compressors = func() chan *Writer {
	c := make(chan *Writer, 4*runtime.GOMAXPROCS(0))
	for range cap(c) {
		c <- nil // made on first use
	}
	return c
}()

// Take returns a free writer, or nil when none is. The caller gives it
// back with Put once its answer is written.
func Take() *Writer {
	select {
	case gw := <-compressors:
		if gw == nil {
			// Level 1 costs the least CPU for a ratio within a third of
			// the best (kubernetes/kubernetes#112296), as upstream chose.
			gw, _ = gzip.NewWriterLevel(nil, gzip.BestSpeed)
		}
		return gw
	default:
		return nil
	}
}

// Reset makes gw write a new gzip stream to w, with a header whose MTIME
// is 0 ("no time stamp"), as the standard library writes it: klauspost's
// writes the zero time.Time's seconds instead, a date in 2042, which gzip
// readers show.
func Reset(gw *Writer, w io.Writer) {
	gw.Reset(w)
	gw.ModTime = time.Unix(0, 0)
}

// Put gives back a writer Take returned.
func Put(gw *Writer) {
	gw.Reset(nil)
	compressors <- gw
}

type allowedKey struct{}

// Allow marks a request whose answer may be gzipped: its client accepts
// gzip and the answer is one the server compresses.
func Allow(ctx context.Context) context.Context {
	return context.WithValue(ctx, allowedKey{}, true)
}

// Forbid marks a request whose answer must reach the filters between the
// handler and filters.Compress uncompressed (audit keeps its object).
func Forbid(ctx context.Context) context.Context {
	if !Allowed(ctx) {
		return ctx
	}
	return context.WithValue(ctx, allowedKey{}, false)
}

// Allowed reports whether a handler may answer with a body it gzipped
// itself (and Content-Encoding: gzip), which the compressing filter then
// passes on as it is.
func Allowed(ctx context.Context) bool {
	ok, _ := ctx.Value(allowedKey{}).(bool)
	return ok
}
