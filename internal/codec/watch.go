package codec

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// Watch event types as they appear on the wire.
const (
	EventAdded    = "ADDED"
	EventModified = "MODIFIED"
	EventDeleted  = "DELETED"
	EventBookmark = "BOOKMARK"
	EventError    = "ERROR"
)

// WatchEncoder writes a JSON watch stream: one line per event,
// {"type":"ADDED","object":<object JSON>}, flushed as it is written so the
// client sees each event at once. Objects arrive already encoded (the watch
// cache encodes each object once for every watcher) and are spliced in as is.
// A WatchEncoder is used by one goroutine.
type WatchEncoder struct {
	w   io.Writer
	f   http.Flusher // nil when w cannot flush
	buf []byte
}

// NewWatchEncoder returns an encoder writing to w. Call Start before the
// first event.
func NewWatchEncoder(w io.Writer) *WatchEncoder {
	f, _ := w.(http.Flusher)
	return &WatchEncoder{w: w, f: f}
}

// Start writes the response header of a watch: 200 with upstream's
// Content-Type for a JSON stream, flushed so that clients waiting for the
// headers return before the first event.
func (e *WatchEncoder) Start() {
	rw, ok := e.w.(http.ResponseWriter)
	if !ok {
		return
	}
	rw.Header().Set("Content-Type", MediaJSON)
	rw.Header().Set("Cache-Control", "no-cache, private")
	rw.WriteHeader(http.StatusOK)
	if e.f != nil {
		e.f.Flush()
	}
}

// Encode writes one event whose object is already-encoded JSON.
func (e *WatchEncoder) Encode(eventType string, object []byte) error {
	b := append(e.buf[:0], `{"type":"`...)
	b = append(b, eventType...)
	b = append(b, `","object":`...)
	b = append(b, trimNewline(object)...)
	b = append(b, "}\n"...)
	e.buf = b
	if _, err := e.w.Write(b); err != nil {
		return fmt.Errorf("writing watch event: %w", err)
	}
	if e.f != nil {
		e.f.Flush()
	}
	return nil
}

// EncodeError writes an ERROR event carrying err as a Status (for example
// 410 Expired when the watch fell behind the event window).
func (e *WatchEncoder) EncodeError(err error) error {
	st, _ := ErrorToStatus(err)
	b, mErr := json.Marshal(&st)
	if mErr != nil {
		return fmt.Errorf("encoding watch error: %w", mErr)
	}
	return e.Encode(EventError, b)
}

func trimNewline(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
