package handler

import (
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/gzip"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"

	"github.com/crdserver/crdserver/internal/compress"
)

// finalBookmarkAt is when a watch of timeout sends its last bookmark:
// two seconds before it ends, as upstream's watch cache schedules it, and
// never when that is already past (a watch of two seconds or less).
func finalBookmarkAt(now time.Time, timeout time.Duration) time.Time {
	if timeout <= 2*time.Second {
		return time.Time{}
	}
	return now.Add(timeout - 2*time.Second)
}

// streamingList reports whether a watch is a streaming list, as upstream
// tells one: initial events asked for, with bookmarks.
func streamingList(opts *metainternalversion.ListOptions) bool {
	return opts.SendInitialEvents != nil && *opts.SendInitialEvents && opts.AllowWatchBookmarks
}

// acceptsGzip reports whether the client named gzip in Accept-Encoding, as
// upstream reads it: a token exactly "gzip" (no quality).
func acceptsGzip(r *http.Request) bool {
	for token := range strings.SplitSeq(r.Header.Get("Accept-Encoding"), ",") {
		if strings.TrimSpace(token) == "gzip" {
			return true
		}
	}
	return false
}

// watchGzips are the compressors of streaming lists. Each is held from a
// write to the next flush only, so an idle watch holds none.
var watchGzips = sync.Pool{New: func() any {
	gz, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed) // upstream's level
	return gz
}}

// watchWriter writes a watch's frames, each batch flushed to the client:
// as they are, or (gzip) compressed as upstream compresses a streaming
// list for a client that accepts it (WatchListCompression, on by default
// since 1.37): each flush ends one gzip member, which clients read as one
// stream.
type watchWriter struct {
	w       http.ResponseWriter
	flusher http.Flusher
	gzip    bool
	gz      *gzip.Writer // while a member is open
}

func newWatchWriter(w http.ResponseWriter) *watchWriter {
	f, _ := w.(http.Flusher)
	return &watchWriter{w: w, flusher: f}
}

// send writes b and flushes it to the client.
func (ww *watchWriter) send(b []byte) error {
	if !ww.gzip {
		if _, err := ww.w.Write(b); err != nil {
			return err
		}
		ww.flushHTTP()
		return nil
	}
	ww.gz = watchGzips.Get().(*gzip.Writer)
	compress.Reset(ww.gz, ww.w)
	_, err := ww.gz.Write(b)
	if cerr := ww.close(); err == nil {
		err = cerr
	}
	ww.flushHTTP()
	return err
}

// close ends an open gzip member and gives its compressor back. The data
// is flushed in a block of its own before the member's end: a gzip reader
// that gets the last data together with the end of a member reads on for
// the next member's header before returning it (Go's does), which would
// hold each batch of events back until the next.
func (ww *watchWriter) close() error {
	if ww.gz == nil {
		return nil
	}
	err := ww.gz.Flush()
	if cerr := ww.gz.Close(); err == nil {
		err = cerr
	}
	ww.gz.Reset(nil)
	watchGzips.Put(ww.gz)
	ww.gz = nil
	return err
}

func (ww *watchWriter) flushHTTP() {
	if ww.flusher != nil {
		ww.flusher.Flush()
	}
}
