package h2

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

const (
	// streamWindow and connWindow are the receive windows announced:
	// large, as a conversion review answers megabytes, and bounded anyway
	// by Transport.MaxResponse per stream.
	streamWindow = 4 << 20
	connWindow   = 1 << 30
	// A window is replenished once this much of it was received, in one
	// WINDOW_UPDATE rather than one per DATA frame.
	streamUpdateAt = 1 << 20
	connUpdateAt   = 64 << 20
	// initialWindow and defaultMaxFrame are the protocol's defaults,
	// until the server's SETTINGS say otherwise.
	initialWindow   = 65535
	defaultMaxFrame = 16 << 10
	// readFrame is the largest frame the server may send: a megabyte,
	// as net/http's server allows its clients. Go's server hands each
	// DATA frame to a goroutine of its own to write, so an answer of
	// megabytes in the default 16 KB frames cost both sides a hand-off
	// per 16 KB (BenchmarkPostReview: 8% less time, a quarter fewer
	// allocations).
	readFrame = 1 << 20
	// maxHeaderList bounds the header list of an answer (as net/http's
	// client does).
	maxHeaderList = 10 << 20
	// noStreamLimit stands for a server that sets no limit of concurrent
	// streams.
	noStreamLimit = 1000
	// maxStreamID is the last stream ID a client may use.
	maxStreamID = 1<<31 - 1
	// writeChunk bounds one write of a body, so that a body of megabytes
	// is neither copied whole into a buffer nor holds the connection
	// from other calls' small writes.
	writeChunk = 128 << 10
	// writeGrace is how much longer than its context a call's write may
	// block (on a server that stopped reading) before the connection is
	// given up: a write timing out leaves a TLS connection unusable, so
	// a deadline that passes just as a healthy write starts must not
	// end the connection.
	writeGrace = time.Second
	// controlTimeout bounds the writes no call waits for (SETTINGS and
	// PING acknowledgements, WINDOW_UPDATE, RST_STREAM).
	controlTimeout = 10 * time.Second
	// settingsTimeout bounds the wait for a new connection's SETTINGS.
	settingsTimeout = 10 * time.Second
)

// errClosed is the error of calls that find their connection closed by
// us (idle, or after a GOAWAY) before they opened a stream.
var errClosed = errors.New("h2: connection closed")

// conn is one HTTP/2 connection. Calls write from their own goroutines,
// one at a time (wsem); one reader goroutine (readLoop) reads every frame.
// The frames no call waits for (acknowledgements, WINDOW_UPDATE,
// RST_STREAM) are queued and written by whoever writes next, so that
// neither the reader nor a call giving up ever waits behind another
// call's write to a server that stopped reading.
type conn struct {
	t     *Transport
	tc    *tls.Conn
	fr    *http2.Framer // written under wsem, read by the reader only
	ready chan struct{} // closed at the server's first SETTINGS
	gone  chan struct{} // closed when the connection failed or closed
	// idle runs idleCheck and health runs healthCheck. Both are set in
	// newConn under mu, because a timer of a few milliseconds may fire
	// before AfterFunc returns, and its function, which takes mu, must
	// then find the field set. Stop needs no lock.
	idle, health *time.Timer
	// heard is set by the reader at each frame and cleared by each
	// health check: a load per frame (and a store only for the first
	// since the check), so that neither a timer is reset nor the clock
	// read per frame, nor a cache line written that calls read. Silence
	// is thus seen at a granularity of one read-idle timeout: a
	// connection is pinged after between one and two of them without a
	// frame.
	heard atomic.Bool

	// wsem, of one slot, serialises writes and guards what they share:
	// wb, the header encoder and the next stream ID (IDs must reach the
	// server in order). A call waits for it only as long as its context
	// lets it. It is taken before mu, never after.
	wsem   chan struct{}
	wb     buffer // what the next write sends; the Framer writes here
	hbuf   bytes.Buffer
	henc   *hpack.Encoder
	nextID uint32

	// mu guards the connection's state, shared by calls and the reader.
	mu      sync.Mutex
	streams map[uint32]*stream
	// reserved counts calls that chose this connection and have not yet
	// opened their stream: they count against maxStreams.
	reserved         int
	maxStreams       uint32
	sendWindow       int64 // the connection's, towards the server
	streamSendWindow int64 // the server's initial window of a new stream
	maxFrame         uint32
	maxHeaderList    uint32 // the server's; 0 is no limit
	// goAway is set by the server's GOAWAY (or when stream IDs run out):
	// no new streams; the connection closes when its last stream ends.
	goAway bool
	// serverGoAway is set by the server's GOAWAY (not by our running out
	// of stream IDs); goAwayCode and goAwayDebug are what it said, for
	// the errors of the calls it ends: its first error code other than
	// NO_ERROR, and its first debug data, bounded.
	serverGoAway bool
	goAwayCode   http2.ErrCode
	goAwayDebug  string
	closed       bool
	err          error     // why the connection failed, once it has
	idleSince    time.Time // when the last stream ended
	// setup is set from newConn until the dialer's call reserves its
	// stream: the idle clock does not run while the server's SETTINGS
	// are awaited, however long they take.
	setup bool
	// windowed is closed and cleared when a send window grows, waking
	// calls waiting for one; nil while none waits.
	windowed chan struct{}
	settings bool // the server's first SETTINGS arrived
	// pinging is set while a health check's PING, of data ping, waits
	// for its acknowledgement.
	pinging bool
	ping    [8]byte
	// stale is set by the health check on a connection without streams
	// that has been silent for the read-idle timeout: it may have died
	// unseen (a NAT or load balancer dropping it), so the first call
	// opened on it has it pinged at once rather than after another
	// read-idle timeout.
	stale bool

	// pmu guards the control frames queued for the next write (encoded
	// by cfr into pending) and a header table size to apply before the
	// next header block. No other lock is taken while it is held.
	pmu       sync.Mutex
	pending   buffer
	cfr       *http2.Framer
	tableSize uint32
	newTable  bool

	// The reader's alone.
	dec         *hpack.Decoder
	hdr         headerBlock
	recvAvail   int64 // of the connection's receive window
	recvUnacked int64 // received since the last connection WINDOW_UPDATE
}

// buffer collects frames for one write.
type buffer struct{ b []byte }

func (w *buffer) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// maxAnswerHint bounds Request.AnswerHint: a transport without
// MaxResponse would otherwise make whatever buffer a caller hinted.
const maxAnswerHint = 64 << 20

// stream is one call on a connection. The reader fills in the answer and
// then closes done; the caller reads it only after that.
type stream struct {
	id   uint32
	done chan struct{}
	err  error // why the call failed, set before done is closed

	// The body still to send, the caller's alone.
	parts [][]byte
	off   int   // into parts[0]
	left  int64 // bytes

	sendWindow int64 // under conn.mu

	// The answer, the reader's until done is closed.
	answered    bool // the final (non-1xx) HEADERS arrived
	status      int
	length      int64 // declared by the answer; -1 for none
	hint        int   // Request.AnswerHint
	data        []byte
	recvAvail   int64
	recvUnacked int64
	// reset (the server reset the stream) and resetSent (we did, for an
	// answer that broke the protocol or that we do not want) are set
	// under conn.mu as the stream ends: a call that stops sending its
	// body early resets the stream only if neither side did.
	reset     bool
	resetSent bool
}

func newConn(t *Transport, tc *tls.Conn) (*conn, error) {
	c := &conn{
		t:                t,
		tc:               tc,
		ready:            make(chan struct{}),
		wsem:             make(chan struct{}, 1),
		gone:             make(chan struct{}),
		nextID:           1,
		streams:          map[uint32]*stream{},
		maxStreams:       noStreamLimit,
		sendWindow:       initialWindow,
		streamSendWindow: initialWindow,
		maxFrame:         defaultMaxFrame,
		setup:            true,
		recvAvail:        connWindow,
	}
	c.fr = http2.NewFramer(&c.wb, bufio.NewReaderSize(tc, 16<<10))
	c.cfr = http2.NewFramer(&c.pending, nil)
	c.fr.SetReuseFrames()
	c.fr.SetMaxReadFrameSize(readFrame)
	c.henc = hpack.NewEncoder(&c.hbuf)
	c.dec = hpack.NewDecoder(4096, c.emit)
	c.dec.SetMaxStringLength(maxHeaderList)

	// The preface, our SETTINGS and the connection's receive window, in
	// one write.
	c.wb.b = append(c.wb.b, http2.ClientPreface...)
	c.fr.WriteSettings(
		http2.Setting{ID: http2.SettingEnablePush, Val: 0},
		http2.Setting{ID: http2.SettingInitialWindowSize, Val: streamWindow},
		http2.Setting{ID: http2.SettingMaxHeaderListSize, Val: maxHeaderList},
		http2.Setting{ID: http2.SettingMaxFrameSize, Val: readFrame},
	)
	c.fr.WriteWindowUpdate(0, connWindow-initialWindow)
	if _, err := c.flush(time.Now().Add(controlTimeout)); err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.idle = time.AfterFunc(t.idleTimeout(), c.idleCheck)
	c.health = time.AfterFunc(t.readIdleTimeout(), c.healthCheck)
	c.mu.Unlock()
	go c.readLoop()
	return c, nil
}

// reserve reserves a stream for a call, reporting whether the connection
// has room for one more.
func (c *conn) reserve() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.setup {
		// The dialer's call, the first: the connection is set up, and
		// idle if the call goes without opening its stream.
		c.setup = false
		c.idleSince = time.Now()
	}
	if c.closed || c.goAway || uint32(len(c.streams)+c.reserved) >= c.maxStreams {
		return false
	}
	c.reserved++
	return true
}

// allowsNoStreams reports whether the server's SETTINGS allow no
// concurrent streams at all.
func (c *conn) allowsNoStreams() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.maxStreams == 0 && !c.closed && !c.goAway
}

// usable reports whether the connection may still take streams.
func (c *conn) usable() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.closed && !c.goAway
}

// roundTrip makes the call on the stream reserved for it.
func (c *conn) roundTrip(ctx context.Context, req *Request) (Response, error) {
	st := &stream{done: make(chan struct{}), parts: req.Body, hint: min(max(req.AnswerHint, 0), maxAnswerHint)}
	for _, p := range req.Body {
		st.left += int64(len(p))
	}
	if err := c.open(ctx, st, req); err != nil {
		return Response{}, err
	}
	if st.left > 0 {
		if err := c.sendBody(ctx, st); err != nil {
			return Response{}, err
		}
	}
	select {
	case <-st.done:
	case <-ctx.Done():
		c.cancel(st)
		return Response{}, ctx.Err()
	}
	if st.err != nil {
		return Response{}, st.err
	}
	return Response{Status: st.status, Body: st.data}, nil
}

// open opens st's stream: its HEADERS and as much of its body as the
// windows allow, in one write.
func (c *conn) open(ctx context.Context, st *stream, req *Request) error {
	length := st.left
	deadline := writeDeadline(ctx)
	if err := c.lockWrite(ctx); err != nil {
		c.mu.Lock()
		c.reserved--
		closeNow := c.closeIfDoneLocked()
		c.mu.Unlock()
		if closeNow {
			c.tc.Close()
		}
		// Nothing of the call was written: if the connection went away
		// (rather than the context ending), another may take it.
		return retryable{err}
	}
	defer c.unlockWrite()

	c.mu.Lock()
	c.reserved--
	if c.closed || c.goAway {
		// The server never sees this stream.
		err := c.failureLocked()
		closeNow := c.closeIfDoneLocked()
		c.mu.Unlock()
		if closeNow {
			c.tc.Close()
		}
		return retryable{err}
	}
	if err := ctx.Err(); err != nil {
		// Nothing was written yet: neither the stream nor the header
		// encoder's state changed.
		closeNow := c.closeIfDoneLocked()
		c.mu.Unlock()
		if closeNow {
			c.tc.Close()
		}
		return err
	}
	if limit := c.maxHeaderList; limit > 0 && headerListSize(req, length) > uint64(limit) {
		c.mu.Unlock()
		return errors.New("h2: request header list larger than the server allows")
	}
	st.id = c.nextID
	c.nextID += 2
	if c.nextID > maxStreamID {
		c.goAway = true
	}
	c.streams[st.id] = st
	if c.stale {
		// healthCheck, run now, finds this stream and pings.
		c.stale = false
		c.health.Reset(0)
	}
	st.sendWindow = c.streamSendWindow
	st.recvAvail = streamWindow
	n := min(length, c.sendWindow, st.sendWindow, writeChunk)
	n = max(n, 0)
	c.sendWindow -= n
	st.sendWindow -= n
	maxFrame := c.maxFrame
	c.mu.Unlock()

	c.wb.b = c.wb.b[:0]
	c.takePending()
	start := len(c.wb.b) // where this stream's frames begin
	block := c.encodeHeaders(req, length)
	first, rest := block, []byte(nil)
	if len(first) > int(maxFrame) {
		first, rest = block[:maxFrame], block[maxFrame:]
	}
	c.fr.WriteHeaders(http2.HeadersFrameParam{
		StreamID:      st.id,
		BlockFragment: first,
		EndStream:     length == 0,
		EndHeaders:    len(rest) == 0,
	})
	for len(rest) > 0 {
		frag := rest[:min(len(rest), int(maxFrame))]
		rest = rest[len(frag):]
		c.fr.WriteContinuation(st.id, len(rest) == 0, frag)
	}
	c.appendData(st, n, maxFrame)
	if written, err := c.flush(deadline); err != nil {
		if written <= start && ctx.Err() == nil {
			// No byte of this stream went out (a TLS record written in
			// part cannot be read): the server cannot have seen the
			// call. Once any may have, the call is not made again, as
			// the webhook may have acted on it.
			return retryable{err}
		}
		return writeError(ctx, err)
	}
	return nil
}

// encodeHeaders encodes the request's header block into hbuf. The header
// fields are those net/http's HTTP/2 client sends for such a request,
// less accept-encoding: webhooks see the same request.
func (c *conn) encodeHeaders(req *Request, length int64) []byte {
	c.hbuf.Reset()
	c.henc.WriteField(hpack.HeaderField{Name: ":authority", Value: req.Authority})
	c.henc.WriteField(hpack.HeaderField{Name: ":method", Value: "POST"})
	c.henc.WriteField(hpack.HeaderField{Name: ":path", Value: req.Path})
	c.henc.WriteField(hpack.HeaderField{Name: ":scheme", Value: "https"})
	for _, f := range req.Header {
		c.henc.WriteField(f)
	}
	// Never indexed: a length of every call would push the fields that
	// repeat (the path, the content type) out of the dynamic table.
	c.henc.WriteField(hpack.HeaderField{Name: "content-length", Value: strconv.FormatInt(length, 10), Sensitive: true})
	return c.hbuf.Bytes()
}

func headerListSize(req *Request, length int64) uint64 {
	// RFC 9113 section 6.5.2: name and value lengths plus 32 per field.
	n := uint64(len(":authority")+len(req.Authority)+len(":method")+len("POST")+len(":path")+len(req.Path)+
		len(":scheme")+len("https")+len("content-length")+len(strconv.FormatInt(length, 10))) + 6*32
	for _, f := range req.Header {
		n += uint64(f.Size())
	}
	return n
}

// appendData appends DATA frames carrying the next n bytes of st's body
// to wb, ending the stream with the last byte. The frames are written by
// hand, not by the Framer, whose WriteData would copy a body of
// megabytes once more.
func (c *conn) appendData(st *stream, n int64, maxFrame uint32) {
	for n > 0 {
		size := min(n, int64(maxFrame))
		n -= size
		st.left -= size
		var flags byte
		if st.left == 0 {
			flags = byte(http2.FlagDataEndStream)
		}
		c.wb.b = append(c.wb.b, byte(size>>16), byte(size>>8), byte(size), byte(http2.FrameData), flags,
			byte(st.id>>24), byte(st.id>>16), byte(st.id>>8), byte(st.id))
		for size > 0 {
			p := st.parts[0][st.off:]
			k := min(int64(len(p)), size)
			c.wb.b = append(c.wb.b, p[:k]...)
			size -= k
			if st.off += int(k); st.off == len(st.parts[0]) {
				st.parts, st.off = st.parts[1:], 0
			}
		}
	}
	for len(st.parts) > 0 && st.off == len(st.parts[0]) { // trailing empty parts
		st.parts, st.off = st.parts[1:], 0
	}
}

// sendBody sends the rest of st's body as the server's windows open.
func (c *conn) sendBody(ctx context.Context, st *stream) error {
	for st.left > 0 {
		c.mu.Lock()
		if c.streams[st.id] != st {
			// Answered, reset or failed before the whole body went out.
			// Unless a reset ended it, or the connection did, the stream
			// stays half-closed on the server's side (counting against
			// its concurrent streams) until we end it: the server's
			// END_STREAM, with an answer good or broken, does not.
			end := !st.reset && !st.resetSent && !c.closed
			c.mu.Unlock()
			if end {
				c.writeReset(st.id, http2.ErrCodeCancel)
			}
			return nil
		}
		n := max(min(st.left, c.sendWindow, st.sendWindow, writeChunk), 0)
		var wait chan struct{}
		if n == 0 {
			if c.windowed == nil {
				c.windowed = make(chan struct{})
			}
			wait = c.windowed
		}
		c.sendWindow -= n
		st.sendWindow -= n
		maxFrame := c.maxFrame
		c.mu.Unlock()
		if wait != nil {
			select {
			case <-wait:
			case <-st.done:
			case <-ctx.Done():
				c.cancel(st)
				return ctx.Err()
			}
			continue
		}
		deadline := writeDeadline(ctx)
		if err := c.lockWrite(ctx); err != nil {
			// None of the n bytes went out: the window taken for them is
			// given back, or the connection's would shrink for good and
			// in time starve every upload on it.
			c.mu.Lock()
			c.sendWindow += n
			st.sendWindow += n
			c.wakeLocked()
			c.mu.Unlock()
			c.cancel(st)
			return err
		}
		c.wb.b = c.wb.b[:0]
		c.takePending()
		c.appendData(st, n, maxFrame)
		_, err := c.flush(deadline)
		c.unlockWrite()
		if err != nil {
			return writeError(ctx, err)
		}
	}
	return nil
}

// cancel ends st for a call that no longer waits, telling the server.
func (c *conn) cancel(st *stream) {
	c.mu.Lock()
	live := c.streams[st.id] == st
	var closeNow bool
	if live {
		closeNow = c.finishLocked(st, context.Canceled)
	}
	c.mu.Unlock()
	if live {
		c.writeReset(st.id, http2.ErrCodeCancel)
	}
	if closeNow {
		c.tc.Close()
	}
}

// finish ends st with err (nil: answered).
func (c *conn) finish(st *stream, err error) {
	c.mu.Lock()
	closeNow := c.finishLocked(st, err)
	c.mu.Unlock()
	if closeNow {
		c.tc.Close()
	}
}

// finishLocked ends st with err unless it has ended, and reports whether
// the connection must now be closed (its caller closes it after
// unlocking mu).
func (c *conn) finishLocked(st *stream, err error) bool {
	if c.streams[st.id] != st {
		return false
	}
	delete(c.streams, st.id)
	st.err = err
	close(st.done)
	if len(c.streams) == 0 {
		c.idleSince = time.Now()
	}
	return c.closeIfDoneLocked()
}

// closeIfDoneLocked marks a connection that is going away closed once its
// last stream ended, reporting whether it did.
func (c *conn) closeIfDoneLocked() bool {
	if !c.goAway || c.closed || len(c.streams) > 0 || c.reserved > 0 {
		return false
	}
	c.closed = true
	return true
}

// closeIfIdle closes the connection if it has no streams and is not
// being set up.
func (c *conn) closeIfIdle() {
	c.mu.Lock()
	idle := !c.closed && !c.setup && len(c.streams) == 0 && c.reserved == 0
	if idle {
		c.closed = true
	}
	c.mu.Unlock()
	if idle {
		c.tc.Close()
	}
}

// idleCheck closes the connection once it has been idle for the idle
// timeout. It runs from a timer that is armed again rather than reset by
// every call.
func (c *conn) idleCheck() {
	timeout := c.t.idleTimeout()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	if c.setup || len(c.streams) > 0 || c.reserved > 0 {
		c.idle.Reset(timeout)
		c.mu.Unlock()
		return
	}
	if left := timeout - time.Since(c.idleSince); left > 0 {
		c.idle.Reset(left)
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.mu.Unlock()
	c.tc.Close()
}

// healthCheck runs from the health timer, every read-idle timeout. On a
// connection with streams that has read no frame since it last ran it
// sends a PING; if the PING's acknowledgement (onPingAck) has not come
// when it runs next, a ping timeout later, it fails the connection. A
// connection without streams that read no frame either is not pinged
// but marked stale, and pinged when a call opens a stream on it (open):
// a call pays for the check only on a connection that may be dead.
func (c *conn) healthCheck() {
	idle := c.t.readIdleTimeout()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	if c.pinging {
		c.mu.Unlock()
		c.fail(fmt.Errorf("h2: connection lost: no frame from the server for %v and no answer to a PING within %v", idle, c.t.pingTimeout()))
		return
	}
	heard := c.heard.Swap(false)
	if heard || len(c.streams) == 0 {
		if !heard {
			c.stale = true // silent a whole period, but without streams
		}
		c.health.Reset(idle)
		c.mu.Unlock()
		return
	}
	c.pinging = true
	c.ping[0]++ // each PING's own data
	ping := c.ping
	c.health.Reset(c.t.pingTimeout())
	c.mu.Unlock()
	c.queueControl(func(fr *http2.Framer) { fr.WritePing(false, ping) })
}

// onPingAck takes the acknowledgement of a PING: the health check's ends
// its wait.
func (c *conn) onPingAck(data [8]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pinging && data == c.ping && !c.closed {
		c.pinging = false
		c.health.Reset(c.t.readIdleTimeout())
	}
}

// fail ends the connection and every stream on it with err.
func (c *conn) fail(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	c.closed = true
	for _, st := range c.streams {
		c.finishLocked(st, c.err)
	}
	if c.windowed != nil {
		close(c.windowed)
		c.windowed = nil
	}
	select {
	case <-c.gone:
	default:
		close(c.gone)
	}
	c.mu.Unlock()
	// The TCP connection, not the TLS one: tls.Conn's Close first writes
	// a close_notify alert, which blocks for up to 5 s on a server that
	// stopped reading, and with it the call whose write failed.
	c.tc.NetConn().Close()
}

// failure is why the connection failed, or takes no more streams.
func (c *conn) failure() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.failureLocked()
}

func (c *conn) failureLocked() error {
	switch {
	case c.err != nil:
		return c.err
	case c.serverGoAway:
		return goAwayError{c.goAwayCode, "h2: the server sent " + c.goAwayLocked()}
	}
	return errClosed
}

// maxGoAwayDebug bounds the debug data of a GOAWAY kept for errors.
const maxGoAwayDebug = 256

// goAwayLocked describes the server's GOAWAY for an error: its code and
// its debug data quoted, so that the server's bytes cannot garble a log
// line.
func (c *conn) goAwayLocked() string {
	if c.goAwayDebug == "" {
		return fmt.Sprintf("GOAWAY (%v)", c.goAwayCode)
	}
	return fmt.Sprintf("GOAWAY (%v, debug data %q)", c.goAwayCode, c.goAwayDebug)
}

// flush writes wb; wsem must be held. A write that fails leaves the
// connection unusable (a TLS record may be half written): it fails. It
// returns how many bytes of wb went out in whole TLS records, as
// tls.Conn's Write counts them.
func (c *conn) flush(deadline time.Time) (int, error) {
	c.tc.SetWriteDeadline(deadline)
	n, err := c.tc.Write(c.wb.b)
	if cap(c.wb.b) > 2*writeChunk {
		c.wb.b = nil // after a header block of megabytes
	} else {
		c.wb.b = c.wb.b[:0]
	}
	if err != nil {
		c.fail(err)
	}
	return n, err
}

// lockWrite takes wsem, waiting at most until ctx is done or the
// connection failed.
func (c *conn) lockWrite(ctx context.Context) error {
	select {
	case c.wsem <- struct{}{}:
		return nil
	default:
	}
	select {
	case c.wsem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.gone:
		return c.failure()
	}
}

// unlockWrite releases wsem, having written the control frames queued
// meanwhile. Frames queued after that, while no write was in progress,
// are written by taking wsem again if it is free; else its new holder
// writes them.
func (c *conn) unlockWrite() {
	for {
		if c.hasPending() {
			c.wb.b = c.wb.b[:0]
			c.takePending()
			c.flush(time.Now().Add(controlTimeout))
		}
		<-c.wsem
		if !c.hasPending() {
			return
		}
		select {
		case c.wsem <- struct{}{}:
		default:
			return
		}
	}
}

// queueControl queues the frames write encodes (with cfr) for the next
// write, and writes them now if no write is in progress. It never waits
// for a write.
func (c *conn) queueControl(write func(fr *http2.Framer)) {
	c.pmu.Lock()
	write(c.cfr)
	c.pmu.Unlock()
	select {
	case c.wsem <- struct{}{}:
		c.unlockWrite()
	default:
	}
}

// setTableSize makes the header encoder use at most size bytes of
// table from the next header block on (the server's
// SETTINGS_HEADER_TABLE_SIZE).
func (c *conn) setTableSize(size uint32) {
	c.pmu.Lock()
	c.tableSize, c.newTable = size, true
	c.pmu.Unlock()
}

func (c *conn) hasPending() bool {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	return len(c.pending.b) > 0 || c.newTable
}

// takePending moves the queued control frames into wb and applies a new
// header table size; wsem must be held.
func (c *conn) takePending() {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	c.wb.b = append(c.wb.b, c.pending.b...)
	c.pending.b = c.pending.b[:0]
	if c.newTable {
		c.henc.SetMaxDynamicTableSizeLimit(c.tableSize)
		c.newTable = false
	}
}

func (c *conn) writeReset(id uint32, code http2.ErrCode) {
	c.queueControl(func(fr *http2.Framer) { fr.WriteRSTStream(id, code) })
}

// writeDeadline is the deadline of a call's writes.
func writeDeadline(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d.Add(writeGrace)
	}
	return time.Now().Add(controlTimeout)
}

// writeError is the error of a call whose write failed: its context's
// when the context is done, as the write then timed out for it.
func writeError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}
