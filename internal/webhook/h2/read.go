package h2

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// headerBlock is what the reader decoded of the header block it reads.
type headerBlock struct {
	stream    uint32
	endStream bool
	status    int
	length    int64  // -1: none declared
	size      uint64 // of the fields decoded, as the limit counts them
	bytes     int    // of the fragments read
}

// readLoop reads the connection's frames until it fails or closes.
func (c *conn) readLoop() {
	err := c.readFrames()
	lost := errors.Is(err, io.EOF)
	if lost {
		err = io.ErrUnexpectedEOF // as net/http says of a connection lost mid-call
	}
	var op *net.OpError
	if lost || errors.As(err, &op) && op.Op == "read" {
		c.mu.Lock()
		if c.serverGoAway {
			// The calls the connection takes down learn what the server
			// said as it went.
			err = fmt.Errorf("h2: the server sent %s and closed the connection: %w", c.goAwayLocked(), err)
		}
		c.mu.Unlock()
	}
	c.fail(err)
	c.idle.Stop()
	c.health.Stop()
	c.t.remove(c)
}

func (c *conn) readFrames() error {
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			// Stream errors of the Framer (bad padding, a HEADERS frame
			// depending on itself) end the connection too: a header
			// block left undecoded would put the header table out of
			// step with the server's.
			return err
		}
		if !c.heard.Load() {
			c.heard.Store(true)
		}
		switch f := f.(type) {
		case *http2.DataFrame:
			err = c.onData(f)
		case *http2.HeadersFrame:
			c.hdr = headerBlock{stream: f.StreamID, endStream: f.StreamEnded(), length: -1}
			err = c.onHeaderFragment(f.HeaderBlockFragment(), f.HeadersEnded())
		case *http2.ContinuationFrame:
			err = c.onHeaderFragment(f.HeaderBlockFragment(), f.HeadersEnded())
		case *http2.SettingsFrame:
			err = c.onSettings(f)
		case *http2.WindowUpdateFrame:
			err = c.onWindowUpdate(f)
		case *http2.PingFrame:
			if f.IsAck() {
				c.onPingAck(f.Data)
			} else {
				data := f.Data
				c.queueControl(func(fr *http2.Framer) { fr.WritePing(true, data) })
			}
		case *http2.RSTStreamFrame:
			c.onReset(f)
		case *http2.GoAwayFrame:
			c.onGoAway(f)
		case *http2.PushPromiseFrame:
			// We announced SETTINGS_ENABLE_PUSH 0.
			err = http2.ConnectionError(http2.ErrCodeProtocol)
		}
		if err != nil {
			return err
		}
	}
}

// lookup is the open stream of id, nil when there is none (never opened,
// or ended: answered, cancelled, reset).
func (c *conn) lookup(id uint32) *stream {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.streams[id]
}

// failStream ends the stream of id with err and, unless code is
// NO_ERROR (the server ended the stream already), resets it with code:
// PROTOCOL_ERROR or FLOW_CONTROL_ERROR for a server that broke the
// protocol, CANCEL for an answer we no longer want.
func (c *conn) failStream(id uint32, err error, code http2.ErrCode) {
	c.mu.Lock()
	var closeNow bool
	if st := c.streams[id]; st != nil {
		// Under mu: a call still sending its body reads resetSent to
		// know whether it must end the stream itself.
		st.resetSent = code != http2.ErrCodeNo
		closeNow = c.finishLocked(st, err)
	}
	c.mu.Unlock()
	if code != http2.ErrCodeNo {
		c.writeReset(id, code)
	}
	if closeNow {
		c.tc.Close()
	}
}

// resetCode is code for a stream the server has not ended yet, and
// NO_ERROR (no reset) for one it has.
func resetCode(ended bool, code http2.ErrCode) http2.ErrCode {
	if ended {
		return http2.ErrCodeNo
	}
	return code
}

// emit takes one decoded header field of the block being read.
func (c *conn) emit(f hpack.HeaderField) {
	c.hdr.size += uint64(f.Size())
	switch f.Name {
	case ":status":
		if n, err := strconv.Atoi(f.Value); err == nil && len(f.Value) == 3 {
			c.hdr.status = n
		}
	case "content-length":
		if n, err := strconv.ParseInt(f.Value, 10, 64); err == nil && n >= 0 {
			c.hdr.length = n
		}
	}
}

// onHeaderFragment decodes one fragment of a header block; at its end it
// applies the block to its stream. Every block is decoded, also those of
// streams that ended, to keep the decoder's table in step with the
// server's encoder.
func (c *conn) onHeaderFragment(frag []byte, end bool) error {
	// A block is bounded as it arrives, not only at its end: a server
	// may send CONTINUATION frames without end.
	if c.hdr.bytes += len(frag); c.hdr.bytes > maxHeaderList {
		return fmt.Errorf("h2: the server sent a header block of more than %d bytes", maxHeaderList)
	}
	if _, err := c.dec.Write(frag); err != nil {
		return http2.ConnectionError(http2.ErrCodeCompression)
	}
	if c.hdr.size > maxHeaderList {
		return fmt.Errorf("h2: the server sent a header list of %d bytes", c.hdr.size)
	}
	if !end {
		return nil
	}
	if err := c.dec.Close(); err != nil {
		return http2.ConnectionError(http2.ErrCodeCompression)
	}
	if c.hdr.size > maxHeaderList {
		return fmt.Errorf("h2: the server sent a header list of %d bytes", c.hdr.size)
	}
	h := c.hdr
	st := c.lookup(h.stream)
	if st == nil {
		return nil
	}
	switch {
	case st.answered:
		// Trailers: only their end of the stream matters.
		if !h.endStream {
			c.failStream(h.stream, errors.New("h2: trailers do not end the stream"), http2.ErrCodeProtocol)
			return nil
		}
	case h.status == 0:
		c.failStream(h.stream, errors.New("h2: the answer has no valid :status"), resetCode(h.endStream, http2.ErrCodeProtocol))
		return nil
	case h.status < 200:
		// 1xx: the final answer follows.
		if h.endStream {
			c.failStream(h.stream, fmt.Errorf("h2: the answer ends with status %d", h.status), http2.ErrCodeNo)
		}
		return nil
	default:
		st.answered = true
		st.status = h.status
		st.length = h.length
		if h.length >= 0 {
			if limit := c.t.MaxResponse; limit > 0 && h.length > int64(limit) {
				c.failStream(h.stream, ErrTooLarge, resetCode(h.endStream, http2.ErrCodeCancel))
				return nil
			}
			// A declared length is read into a buffer of that size, not
			// a series of growing ones; but it is made at most
			// maxPrealloc at first and grown as the body arrives
			// (onData), so that a server holds only as much of our
			// memory as it sent.
			st.data = make([]byte, 0, min(h.length, maxPrealloc))
		}
	}
	if h.endStream {
		c.finish(st, st.lengthError())
	}
	return nil
}

// maxPrealloc bounds the buffer made for an answer's declared length
// before any of it arrived.
const maxPrealloc = 1 << 20

// lengthError is the error of an answer that ended with a body other
// than its declared content-length, as net/http words it.
func (st *stream) lengthError() error {
	if st.length >= 0 && int64(len(st.data)) != st.length && st.status != 204 && st.status != 304 {
		return io.ErrUnexpectedEOF
	}
	return nil
}

// onData appends a DATA frame to its stream and replenishes the receive
// windows.
func (c *conn) onData(f *http2.DataFrame) error {
	n := int64(f.Length) // padding counts against the windows too
	if c.recvAvail -= n; c.recvAvail < 0 {
		return http2.ConnectionError(http2.ErrCodeFlowControl)
	}
	c.recvUnacked += n
	var streamUpdate uint32
	if st := c.lookup(f.StreamID); st != nil {
		data := f.Data()
		st.recvAvail -= n
		switch {
		case !st.answered:
			c.failStream(f.StreamID, errors.New("h2: DATA before the answer's HEADERS"), http2.ErrCodeProtocol)
		case st.recvAvail < 0:
			c.failStream(f.StreamID, http2.StreamError{StreamID: f.StreamID, Code: http2.ErrCodeFlowControl}, http2.ErrCodeFlowControl)
		case c.t.MaxResponse > 0 && len(st.data)+len(data) > c.t.MaxResponse:
			c.failStream(f.StreamID, ErrTooLarge, resetCode(f.StreamEnded(), http2.ErrCodeCancel))
		case st.length >= 0 && int64(len(st.data)+len(data)) > st.length:
			c.failStream(f.StreamID, errors.New("h2: the server sent more than its declared content-length"), resetCode(f.StreamEnded(), http2.ErrCodeProtocol))
		default:
			if need := len(st.data) + len(data); need > cap(st.data) {
				size := st.grownSize(need)
				if c.t.MaxResponse > 0 {
					size = min(int64(c.t.MaxResponse), size)
				}
				grown := make([]byte, len(st.data), size)
				copy(grown, st.data)
				st.data = grown
			}
			st.data = append(st.data, data...)
			if f.StreamEnded() {
				c.finish(st, st.lengthError())
				break
			}
			if st.recvUnacked += n; st.recvUnacked >= streamUpdateAt {
				streamUpdate = uint32(st.recvUnacked)
				st.recvAvail += st.recvUnacked
				st.recvUnacked = 0
			}
		}
	}
	var connUpdate uint32
	if c.recvUnacked >= connUpdateAt {
		connUpdate = uint32(c.recvUnacked)
		c.recvAvail += c.recvUnacked
		c.recvUnacked = 0
	}
	if streamUpdate == 0 && connUpdate == 0 {
		return nil
	}
	id := f.StreamID
	c.queueControl(func(fr *http2.Framer) {
		if streamUpdate > 0 {
			fr.WriteWindowUpdate(id, streamUpdate)
		}
		if connUpdate > 0 {
			fr.WriteWindowUpdate(0, connUpdate)
		}
	})
	return nil
}

// onSettings applies the server's settings and acknowledges them.
func (c *conn) onSettings(f *http2.SettingsFrame) error {
	if f.IsAck() {
		return nil
	}
	var tableSize uint32
	var haveTableSize bool
	c.mu.Lock()
	err := f.ForeachSetting(func(s http2.Setting) error {
		switch s.ID {
		case http2.SettingHeaderTableSize:
			tableSize, haveTableSize = s.Val, true
		case http2.SettingMaxConcurrentStreams:
			c.maxStreams = s.Val
		case http2.SettingInitialWindowSize:
			if s.Val > maxStreamID {
				return http2.ConnectionError(http2.ErrCodeFlowControl)
			}
			// A change applies to the streams open, and may leave their
			// windows negative.
			delta := int64(s.Val) - c.streamSendWindow
			c.streamSendWindow = int64(s.Val)
			for _, st := range c.streams {
				st.sendWindow += delta
			}
		case http2.SettingMaxFrameSize:
			if s.Val < defaultMaxFrame || s.Val > 1<<24-1 {
				return http2.ConnectionError(http2.ErrCodeProtocol)
			}
			c.maxFrame = s.Val
		case http2.SettingMaxHeaderListSize:
			c.maxHeaderList = s.Val
		}
		return nil
	})
	first := !c.settings
	c.settings = true
	c.wakeLocked()
	c.mu.Unlock()
	if err != nil {
		return err
	}
	if haveTableSize {
		c.setTableSize(tableSize)
	}
	c.queueControl(func(fr *http2.Framer) { fr.WriteSettingsAck() })
	if first {
		close(c.ready)
	}
	return nil
}

// onWindowUpdate opens a send window, waking the calls waiting for one.
func (c *conn) onWindowUpdate(f *http2.WindowUpdateFrame) error {
	c.mu.Lock()
	incr := int64(f.Increment)
	var closeNow, overflow bool
	if f.StreamID == 0 {
		if c.sendWindow += incr; c.sendWindow > maxStreamID {
			c.mu.Unlock()
			return http2.ConnectionError(http2.ErrCodeFlowControl)
		}
	} else if st := c.streams[f.StreamID]; st != nil {
		if st.sendWindow += incr; st.sendWindow > maxStreamID {
			st.resetSent = true
			closeNow = c.finishLocked(st, http2.StreamError{StreamID: f.StreamID, Code: http2.ErrCodeFlowControl})
			overflow = true
		}
	}
	c.wakeLocked()
	c.mu.Unlock()
	if overflow {
		// A stream error: the server must learn that the stream ended.
		c.writeReset(f.StreamID, http2.ErrCodeFlowControl)
	}
	if closeNow {
		c.tc.Close()
	}
	return nil
}

// wakeLocked wakes the calls waiting for a send window.
func (c *conn) wakeLocked() {
	if c.windowed != nil {
		close(c.windowed)
		c.windowed = nil
	}
}

// errFromPeer is the cause of the errors of streams the server reset:
// the words net/http's client uses, which webhook errors had before this
// client and which tell a reset by the server from one of ours.
var errFromPeer = errors.New("received from peer")

// onReset ends a stream the server reset, whatever the code, and only
// that stream. A refused stream was never processed, so its call is made
// again, after a back-off: on whichever connection has room, most often
// this same one.
func (c *conn) onReset(f *http2.RSTStreamFrame) {
	var err error = http2.StreamError{StreamID: f.StreamID, Code: f.ErrCode, Cause: errFromPeer}
	if f.ErrCode == http2.ErrCodeRefusedStream {
		err = retryable{err}
	}
	c.mu.Lock()
	st := c.streams[f.StreamID]
	var closeNow bool
	if st != nil {
		// Under mu: a call that finds its stream gone reads reset to
		// know that it must not reset the stream in turn.
		st.reset = true
		closeNow = c.finishLocked(st, err)
	}
	c.mu.Unlock()
	if closeNow {
		c.tc.Close()
	}
}

// onGoAway takes no more streams on the connection. The streams above the
// last one the server processes are made again on another connection
// (after a back-off, if the server said other than NO_ERROR); the
// connection closes when its last stream ends.
func (c *conn) onGoAway(f *http2.GoAwayFrame) {
	c.mu.Lock()
	c.goAway = true
	c.serverGoAway = true
	if c.goAwayCode == http2.ErrCodeNo {
		c.goAwayCode = f.ErrCode
	}
	if c.goAwayDebug == "" {
		debug := f.DebugData() // the Framer's, until the next frame
		c.goAwayDebug = string(debug[:min(len(debug), maxGoAwayDebug)])
	}
	closeNow := c.closeIfDoneLocked()
	for id, st := range c.streams {
		if id > f.LastStreamID {
			// The last of these to end closes the connection, if no
			// stream below the GOAWAY's remains.
			err := goAwayError{c.goAwayCode, fmt.Sprintf("h2: the server sent %s before stream %d", c.goAwayLocked(), id)}
			closeNow = c.finishLocked(st, retryable{err}) || closeNow
		}
	}
	c.mu.Unlock()
	if closeNow {
		c.tc.Close()
	}
}

// goAwayError is the error of a call that a server's GOAWAY kept from
// being processed; code, the GOAWAY's, tells Post whether to back off
// before the call's next attempt.
type goAwayError struct {
	code http2.ErrCode
	msg  string
}

func (e goAwayError) Error() string { return e.msg }

// grownSize is the capacity st's answer buffer grows to for need bytes.
// Doubling, towards the declared length when there is one, holds at most
// twice what arrived and makes the last buffer exact; without a length (a
// webhook that streams its answer, as an encoder writing to the
// ResponseWriter does), append alone would grow a megabyte's buffer by a
// quarter at a time and copy it five times over. With a hint, an answer
// past its first frame is a large one: it gets the size expected and an
// eighth (for one a little larger) at once, and past that grows by
// quarters, as a buffer kept whole (a conversion cache keeps the answer
// its results are parts of) should not hold twice what it needs.
func (st *stream) grownSize(need int) int64 {
	c, hint := cap(st.data), st.hint
	size := max(int64(need), 2*int64(c))
	switch {
	case hint == 0:
	case c > 0 && c < hint:
		size = max(int64(need), int64(hint)+int64(hint)/8)
	case c >= hint:
		size = max(int64(need), int64(c)+int64(c)/4)
	}
	if st.length >= 0 {
		size = min(st.length, size)
	}
	return size
}
