// Package h2 posts requests over HTTP/2 and reads their answers whole: the
// client side of webhook calls, which send one JSON body and wait for one
// JSON answer.
//
// It does what net/http's HTTP/2 client does for such calls, at less CPU
// per call: the calling goroutine encodes its HEADERS and as much DATA as
// the send windows allow into one buffer and writes it with one Write (net/http
// starts a goroutine per request that writes headers and body apart), and
// one reader goroutine per connection reads the answers into the callers'
// buffers. It speaks only what webhook calls need: no server push, no
// priorities, no request trailers, no 100-continue.
package h2

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// ErrNotH2 is the error of a call whose new connection negotiated a
// protocol other than h2 (ALPN): the server speaks HTTP/1.1 only. The
// connection is closed.
var ErrNotH2 = errors.New("h2: the server did not negotiate HTTP/2")

// ErrTooLarge is the error of a call whose answer's body is longer than
// Transport.MaxResponse.
var ErrTooLarge = errors.New("h2: the answer is larger than allowed")

// errNoStreams is the error of a call to a server whose new connection
// allows no streams (SETTINGS_MAX_CONCURRENT_STREAMS 0): dialing more would
// not help.
var errNoStreams = errors.New("h2: the server allows no streams")

// DefaultIdleTimeout is how long a connection without streams stays open
// when Transport.IdleTimeout is zero, as net/http's transports of
// webhooks keep theirs.
const DefaultIdleTimeout = 90 * time.Second

// DefaultReadIdleTimeout and DefaultPingTimeout are the health check of a
// connection with calls in flight when Transport.ReadIdleTimeout and
// PingTimeout are zero or less: after 30 s (checked every 30 s, so up to
// 60 s) without a frame from the server it is sent a PING, and if 15 s
// pass without its acknowledgement it is closed.
const (
	DefaultReadIdleTimeout = 30 * time.Second
	DefaultPingTimeout     = 15 * time.Second
)

// maxAttempts bounds how often a call is started again on another
// connection because the webhook never saw it (a GOAWAY that excluded its
// stream, a refused stream, a connection that closed before the call
// wrote).
const maxAttempts = 5

// refusedDelay is the wait before the second attempt of a call whose
// stream the server refused, or a GOAWAY with an error code excluded (it
// is busy): it doubles with each attempt, to at most ten times itself,
// and a quarter at most is added at random so that calls refused
// together do not come back together.
const refusedDelay = 5 * time.Millisecond

// Transport keeps HTTP/2 connections to one server and posts requests
// over them, opening a connection when none has room for another stream.
// Its exported fields may be changed until the first call; it is safe for
// concurrent use.
type Transport struct {
	// Dial opens a new connection with its TLS handshake done, having
	// offered h2 by ALPN. A connection that did not negotiate h2 is closed
	// and the call fails with ErrNotH2.
	Dial func(ctx context.Context) (*tls.Conn, error)
	// IdleTimeout closes a connection without streams after this long;
	// zero or less means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// MaxResponse bounds an answer's body; a longer one fails the call
	// with ErrTooLarge. Zero means no bound.
	MaxResponse int
	// ReadIdleTimeout is how long a connection with calls in flight may
	// go without a frame from the server before it is sent a PING (it is
	// checked once per ReadIdleTimeout, so the PING goes out after
	// between one and two of them), and PingTimeout how long it then
	// waits for the acknowledgement before it closes, failing its calls
	// (a server or network gone silent would otherwise hold them to
	// their own timeouts, and the connection would take new calls). Zero or less means DefaultReadIdleTimeout and
	// DefaultPingTimeout. A connection without calls is not pinged; one
	// found silent for ReadIdleTimeout meanwhile is pinged as the next
	// call opens a stream on it.
	ReadIdleTimeout, PingTimeout time.Duration

	// refusedBase replaces refusedDelay, for tests; the bound grows
	// with it.
	refusedBase time.Duration

	// mu guards conns and dialing. It is taken before a conn's mu, never
	// after.
	mu    sync.Mutex
	conns []*conn
	// dialing is the dial in progress: calls that find no room wait for
	// it rather than each dialing a connection of its own.
	dialing *dialCall
}

// dialCall is a dial that calls wait for.
type dialCall struct {
	done chan struct{}
	err  error // set before done is closed
}

// Request is a POST of one body.
type Request struct {
	// Authority and Path are the :authority and :path of the request,
	// Path with its query.
	Authority, Path string
	// Header holds the other fields, names in lower case; content-length
	// is added from Body.
	Header []hpack.HeaderField
	// Body is sent as one body, one part after another. The parts must not
	// change until Post returns.
	Body [][]byte
	// AnswerHint is about how large the answer is expected to be: an
	// answer larger than its first frame is read on into a buffer an
	// eighth larger than this (never larger than its declared length,
	// MaxResponse or 64 MiB) rather than one that doubles as it arrives,
	// and grows by a quarter past it.
	AnswerHint int
}

// Response is an answer, its body read whole.
type Response struct {
	Status int
	Body   []byte
}

// Post sends req and waits for the whole answer, at most until ctx is
// done. A call is sent again on another connection only when the server
// never saw it.
func (t *Transport) Post(ctx context.Context, req *Request) (Response, error) {
	for attempt := 1; ; attempt++ {
		c, err := t.conn(ctx)
		var resp Response
		if err == nil {
			resp, err = c.roundTrip(ctx, req)
		}
		if err != nil && ctx.Err() != nil {
			// Whatever failed last (a write cut short, a connection
			// given up), the call ended because its time was up.
			return Response{}, ctx.Err()
		}
		var again retryable
		if errors.As(err, &again) {
			if attempt < maxAttempts {
				if err := t.backOff(ctx, attempt, again.err); err != nil {
					return Response{}, err
				}
				continue
			}
			err = again.err
		}
		return resp, err
	}
}

// backOff waits before attempt+1 of a call after a refused stream or a
// GOAWAY with an error code (ENHANCE_YOUR_CALM, say: the server is
// overloaded too), but not beyond the call's context: it returns the
// context's error if that ends first. Other retries (a GOAWAY with
// NO_ERROR, a connection gone) go to another connection at once.
func (t *Transport) backOff(ctx context.Context, attempt int, err error) error {
	var se http2.StreamError
	var ga goAwayError
	switch {
	case errors.As(err, &se) && se.Code == http2.ErrCodeRefusedStream:
	case errors.As(err, &ga) && ga.code != http2.ErrCodeNo:
	default:
		return nil
	}
	base := cmp.Or(t.refusedBase, refusedDelay)
	d := min(base<<(attempt-1), 10*base)
	d += rand.N(d/4 + 1)
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// CloseIdleConnections closes the connections without streams. Busy ones
// keep serving their calls.
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	conns := append([]*conn(nil), t.conns...)
	t.mu.Unlock()
	for _, c := range conns {
		c.closeIfIdle()
	}
}

// conn returns a connection with a stream reserved for the call, dialing
// one when none has room.
func (t *Transport) conn(ctx context.Context) (*conn, error) {
	for {
		t.mu.Lock()
		for _, c := range t.conns {
			if c.reserve() {
				t.mu.Unlock()
				return c, nil
			}
		}
		if d := t.dialing; d != nil {
			t.mu.Unlock()
			select {
			case <-d.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			// A dial that failed for its own caller's context says nothing
			// of this call's: try again, dialing if need be.
			if d.err != nil && !errors.Is(d.err, context.Canceled) && !errors.Is(d.err, context.DeadlineExceeded) {
				return nil, d.err
			}
			continue
		}
		d := &dialCall{done: make(chan struct{})}
		t.dialing = d
		t.mu.Unlock()

		c, err := t.dial(ctx)
		// The call that dialed takes the first stream of the new
		// connection; those that waited for the dial look for room again.
		if err == nil && !c.reserve() {
			if c.allowsNoStreams() {
				c.fail(errNoStreams)
				err = errNoStreams
			} else {
				// It went away already (GOAWAY, or closed): the call
				// never reached it, and may try another, a few times.
				err = retryable{c.failure()}
			}
		}
		t.mu.Lock()
		t.dialing = nil
		// A connection whose reader ended already (and so removed it
		// from conns before it was there) is not added.
		if err == nil && c.usable() {
			t.conns = append(t.conns, c)
		}
		d.err = err
		close(d.done)
		t.mu.Unlock()
		return c, err
	}
}

// dial opens a connection and waits for the server's SETTINGS, so that
// its limit of concurrent streams is known before calls use it.
func (t *Transport) dial(ctx context.Context) (*conn, error) {
	tc, err := t.Dial(ctx)
	if err != nil {
		return nil, err
	}
	if tc.ConnectionState().NegotiatedProtocol != "h2" {
		tc.Close()
		return nil, ErrNotH2
	}
	c, err := newConn(t, tc)
	if err != nil {
		return nil, err
	}
	timer := time.NewTimer(settingsTimeout)
	defer timer.Stop()
	select {
	case <-c.ready:
		return c, nil
	case <-c.gone:
		return nil, c.failure()
	case <-timer.C:
		c.fail(errors.New("h2: the server sent no SETTINGS"))
		return nil, c.failure()
	case <-ctx.Done():
		c.fail(ctx.Err())
		return nil, ctx.Err()
	}
}

// remove forgets c, which takes no more streams.
func (t *Transport) remove(c *conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, o := range t.conns {
		if o == c {
			t.conns = append(t.conns[:i], t.conns[i+1:]...)
			return
		}
	}
}

func (t *Transport) readIdleTimeout() time.Duration {
	if t.ReadIdleTimeout > 0 {
		return t.ReadIdleTimeout
	}
	return DefaultReadIdleTimeout
}

func (t *Transport) pingTimeout() time.Duration {
	if t.PingTimeout > 0 {
		return t.PingTimeout
	}
	return DefaultPingTimeout
}

func (t *Transport) idleTimeout() time.Duration {
	if t.IdleTimeout > 0 {
		return t.IdleTimeout
	}
	return DefaultIdleTimeout
}

// retryable is the error of a call the server never saw, so that it may be
// sent again on another connection.
type retryable struct{ err error }

func (e retryable) Error() string { return e.err.Error() }
func (e retryable) Unwrap() error { return e.err }
