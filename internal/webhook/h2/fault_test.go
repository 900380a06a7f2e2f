package h2_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/crdserver/crdserver/internal/webhook/h2"
)

// Servers that misbehave: each must cost a call no more than its own
// timeout, and the client no more memory or connections than it was sent.

// TestStalledWriteHoldsNoOtherCall: a server that stops reading while a
// call writes a large body. The calls beside it, one opened before and
// one started during that write, return at their own timeouts, not at
// the writer's.
func TestStalledWriteHoldsNoOtherCall(t *testing.T) {
	hold := make(chan struct{})
	tr, _ := startFake(t, func(n int, f *fakeConn) {
		if !f.preface(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1<<31 - 1}) {
			return
		}
		f.fr.WriteWindowUpdate(0, 1<<31-1-65535)
		<-hold // reads nothing more
	})
	defer close(hold)
	call := func(path string, body []byte, timeout time.Duration, took chan<- time.Duration) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		start := time.Now()
		_, err := post(ctx, tr, path, body)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: %v, want the context's deadline", path, err)
		}
		took <- time.Since(start)
	}
	before, long, during := make(chan time.Duration, 1), make(chan time.Duration, 1), make(chan time.Duration, 1)
	go call("/before", []byte("{}"), 1500*time.Millisecond, before)
	time.Sleep(300 * time.Millisecond)
	go call("/long", make([]byte, 64<<20), 3*time.Second, long)
	time.Sleep(500 * time.Millisecond) // the long call now blocks in its write
	call("/during", []byte("{}"), 200*time.Millisecond, during)
	for _, c := range []struct {
		name string
		took chan time.Duration
		max  time.Duration
	}{{"a call started during the write (200ms)", during, time.Second}, {"a call opened before (1.5s)", before, 2500 * time.Millisecond}, {"the writer (3s)", long, 4500 * time.Millisecond}} {
		if d := <-c.took; d > c.max {
			t.Errorf("%s returned after %v", c.name, d)
		}
	}
}

// TestContentLengthMismatch: an answer shorter or longer than its
// declared content-length is an error, as net/http makes it.
func TestContentLengthMismatch(t *testing.T) {
	for _, tc := range []struct{ declared, body string }{{"10", "abc"}, {"2", "abcdef"}} {
		tr, _ := startFake(t, func(n int, f *fakeConn) {
			req, ok := f.firstRequest(nil)
			if !ok {
				return
			}
			f.headers(req.id, false, ":status", "200", "content-length", tc.declared)
			f.fr.WriteData(req.id, true, []byte(tc.body))
			f.read(false)
		})
		if resp, err := post(context.Background(), tr, "/"); err == nil {
			t.Errorf("content-length %s with %q: answered %d %q, want an error", tc.declared, tc.body, resp.Status, resp.Body)
		}
	}
}

// TestDeadConnectionsDropped: a server that says GOAWAY as soon as it
// has sent its SETTINGS leaves no connection behind, and the call fails
// after a few attempts.
func TestDeadConnectionsDropped(t *testing.T) {
	tr, accepted := startFake(t, func(n int, f *fakeConn) {
		if !f.preface() {
			return
		}
		f.fr.WriteGoAway(0, http2.ErrCodeNo, nil)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := post(ctx, tr, "/"); err == nil {
		t.Fatal("a call to a server that only says GOAWAY succeeded")
	}
	time.Sleep(200 * time.Millisecond)
	if n := h2.ConnCount(tr); n > 0 {
		t.Errorf("%d dead connections kept", n)
	}
	if n := accepted.Load(); n > 5 {
		t.Errorf("one call dialed %d connections", n)
	}
}

// TestEndlessHeaderBlock: CONTINUATION frames without end fail the
// connection once the block passes the header list limit, rather than
// being read for as long as the server sends them.
func TestEndlessHeaderBlock(t *testing.T) {
	sent := make(chan int, 1)
	tr, _ := startFake(t, func(n int, f *fakeConn) {
		req, ok := f.firstRequest(nil)
		if !ok {
			return
		}
		f.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: req.id, BlockFragment: []byte{0x88}})
		frag := make([]byte, 16<<10)
		for i := range frag {
			frag[i] = 0x88 // ":status: 200" again and again
		}
		count := 0
		for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); count++ {
			if err := f.fr.WriteContinuation(req.id, false, frag); err != nil {
				break
			}
		}
		sent <- count
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := post(ctx, tr, "/"); err == nil {
		t.Error("an endless header block answered the call")
	}
	if n := <-sent; n > 1000 {
		t.Errorf("the client read %d CONTINUATION frames of 16 KiB", n)
	}
}

// TestDeclaredLengthNotHeld: an answer that declares 64 MiB and sends
// nothing does not make the client hold 64 MiB.
func TestDeclaredLengthNotHeld(t *testing.T) {
	hold := make(chan struct{})
	tr, _ := startFake(t, func(n int, f *fakeConn) {
		if !f.preface() {
			return
		}
		for range 4 {
			req, err := f.read(false)
			if err != nil {
				return
			}
			f.headers(req.id, false, ":status", "200", "content-length", "67108864")
		}
		<-hold
	})
	defer close(hold)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { post(ctx, tr, "/") })
	}
	time.Sleep(time.Second)
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 32<<20 {
		t.Errorf("4 answers declaring 64 MiB each and sending nothing grew the heap by %d MiB", grew>>20)
	}
	wg.Wait()
}

// TestServerResets: a stream the server resets fails its call with an
// error that names the code, as net/http's client words it; only a
// refused stream is made again. The connection serves the call beside it
// and the next one, and the client does not reset the stream in turn.
func TestServerResets(t *testing.T) {
	for _, code := range []http2.ErrCode{
		http2.ErrCodeNo, http2.ErrCodeProtocol, http2.ErrCodeInternal, http2.ErrCodeFlowControl,
		http2.ErrCodeStreamClosed, http2.ErrCodeCancel, http2.ErrCodeEnhanceYourCalm,
		http2.ErrCodeHTTP11Required, 0x99,
	} {
		t.Run(code.String(), func(t *testing.T) {
			resetID := make(chan uint32, 1)
			resets := make(chan []*http2.RSTStreamFrame, 1)
			tr, accepted := startFake(t, func(n int, f *fakeConn) {
				defer func() { resets <- f.resets }()
				if !f.preface() {
					return
				}
				// Two calls at once: reset one, then answer the other.
				var other uint32
				for range 2 {
					req, err := f.read(false)
					if err != nil {
						t.Error(err)
						return
					}
					if req.header[":path"] == "/reset" {
						f.fr.WriteRSTStream(req.id, code)
						resetID <- req.id
					} else {
						other = req.id
					}
				}
				f.answer(other, "beside")
				f.answerNext(t)
			})
			var wg sync.WaitGroup
			wg.Go(func() {
				if resp, err := post(context.Background(), tr, "/beside"); err != nil || string(resp.Body) != "beside" {
					t.Errorf("the call beside: %q, %v", resp.Body, err)
				}
			})
			_, err := post(context.Background(), tr, "/reset")
			id := <-resetID
			want := fmt.Sprintf("stream error: stream ID %d; %v; received from peer", id, code)
			if err == nil || err.Error() != want {
				t.Errorf("error %v, want %q", err, want)
			}
			wg.Wait()
			if resp, err := post(context.Background(), tr, "/next"); err != nil || string(resp.Body) != "next" {
				t.Errorf("the next call: %q, %v", resp.Body, err)
			}
			tr.CloseIdleConnections()
			for _, rst := range <-resets {
				t.Errorf("the client reset stream %d (%v)", rst.StreamID, rst.ErrCode)
			}
			wantConns(t, accepted, 1)
		})
	}
}

// TestClientResets: a stream the server breaks the protocol on is reset
// with the code that says how (RFC 9113 section 5.4.2), and one whose
// answer is too large with CANCEL; the call fails and the connection
// serves the next one.
func TestClientResets(t *testing.T) {
	for _, tc := range []struct {
		name  string
		serve func(f *fakeConn, id uint32)
		want  http2.ErrCode
	}{
		{"DATA before HEADERS", func(f *fakeConn, id uint32) {
			f.fr.WriteData(id, false, []byte("x"))
		}, http2.ErrCodeProtocol},
		{"no status", func(f *fakeConn, id uint32) {
			f.headers(id, false, "x", "y")
		}, http2.ErrCodeProtocol},
		{"trailers without end", func(f *fakeConn, id uint32) {
			f.headers(id, false, ":status", "200")
			f.headers(id, false, "x-trailer", "t")
		}, http2.ErrCodeProtocol},
		{"more than content-length", func(f *fakeConn, id uint32) {
			f.headers(id, false, ":status", "200", "content-length", "1")
			f.fr.WriteData(id, false, []byte("ab"))
		}, http2.ErrCodeProtocol},
		{"stream window overflow", func(f *fakeConn, id uint32) {
			f.fr.WriteWindowUpdate(id, 1<<31-1)
		}, http2.ErrCodeFlowControl},
		{"too large", func(f *fakeConn, id uint32) {
			f.headers(id, false, ":status", "200", "content-length", "1000000000")
		}, http2.ErrCodeCancel},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resets := make(chan []*http2.RSTStreamFrame, 1)
			tr, accepted := startFake(t, func(n int, f *fakeConn) {
				req, ok := f.firstRequest(t)
				if !ok {
					return
				}
				tc.serve(f, req.id)
				f.answerNext(t)
				resets <- f.resets
			})
			if resp, err := post(context.Background(), tr, "/"); err == nil {
				t.Errorf("answered %d %q, want an error", resp.Status, resp.Body)
			}
			if resp, err := post(context.Background(), tr, "/"); err != nil || string(resp.Body) != "next" {
				t.Errorf("the next call: %q, %v", resp.Body, err)
			}
			tr.CloseIdleConnections()
			got := <-resets
			if len(got) != 1 || got[0].StreamID != 1 || got[0].ErrCode != tc.want {
				var desc []string
				for _, r := range got {
					desc = append(desc, fmt.Sprintf("stream %d %v", r.StreamID, r.ErrCode))
				}
				t.Errorf("the client reset %v, want stream 1 %v", desc, tc.want)
			}
			wantConns(t, accepted, 1)
		})
	}
}

// TestGoAwayErrors: the calls a GOAWAY ends say what the server said in
// it, its error code and (the first 256 bytes of) its debug data, quoted.
func TestGoAwayErrors(t *testing.T) {
	long := strings.Repeat("overloaded\x00\n", 100) // 1200 bytes, some not printable
	for _, tc := range []struct {
		name string
		// last is the GOAWAY's last stream ID: 0 leaves out the call,
		// which is made again (on every connection the same).
		last  uint32
		code  http2.ErrCode
		debug string
		want  string
		conns int64
		// wait is the least the call takes: the back-off between its
		// attempts (with a base of 20ms) when the server said other
		// than NO_ERROR.
		wait time.Duration
	}{
		{"then closed", 1, http2.ErrCodeInternal, "bye",
			`h2: the server sent GOAWAY (INTERNAL_ERROR, debug data "bye") and closed the connection: unexpected EOF`, 1, 0},
		{"no error, then closed", 1, http2.ErrCodeNo, "",
			`h2: the server sent GOAWAY (NO_ERROR) and closed the connection: unexpected EOF`, 1, 0},
		{"long debug data", 1, http2.ErrCodeEnhanceYourCalm, long,
			fmt.Sprintf(`h2: the server sent GOAWAY (ENHANCE_YOUR_CALM, debug data %q) and closed the connection: unexpected EOF`, long[:256]), 1, 0},
		{"before the stream", 0, http2.ErrCodeEnhanceYourCalm, "slow down",
			`h2: the server sent GOAWAY (ENHANCE_YOUR_CALM, debug data "slow down") before stream 1`, 5,
			(20 + 40 + 80 + 160) * time.Millisecond},
		{"no error, before the stream", 0, http2.ErrCodeNo, "",
			`h2: the server sent GOAWAY (NO_ERROR) before stream 1`, 5, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, accepted := startFake(t, func(n int, f *fakeConn) {
				if !f.preface() {
					return
				}
				if _, err := f.read(false); err != nil {
					t.Error(err)
					return
				}
				f.fr.WriteGoAway(tc.last, tc.code, []byte(tc.debug))
				if tc.last == 0 {
					f.read(false) // until the client closes
				}
			})
			h2.SetRefusedDelay(tr, 20*time.Millisecond)
			start := time.Now()
			_, err := post(context.Background(), tr, "/")
			if err == nil || err.Error() != tc.want {
				t.Errorf("error %v\nwant %s", err, tc.want)
			}
			if d := time.Since(start); d < tc.wait {
				t.Errorf("%d attempts took %v, less than the back-off of %v", tc.conns, d, tc.wait)
			}
			if tc.last > 0 && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("error %v, want it to wrap io.ErrUnexpectedEOF", err)
			}
			if n := accepted.Load(); n != tc.conns {
				t.Errorf("%d connections, want %d", n, tc.conns)
			}
		})
	}
}

// refuseAll serves connections that refuse every stream, counting the
// streams refused and signalling each on refused.
func refuseAll(t *testing.T, refused chan<- struct{}) (*h2.Transport, *atomic.Int64, *atomic.Int64) {
	var streams atomic.Int64
	tr, accepted := startFake(t, func(n int, f *fakeConn) {
		f.eachRequest(func(req *request) {
			streams.Add(1)
			f.fr.WriteRSTStream(req.id, http2.ErrCodeRefusedStream)
			select {
			case refused <- struct{}{}:
			default:
			}
		})
	})
	return tr, accepted, &streams
}

// TestRefusedEveryStream: a server that refuses every stream sees each
// call the allowed five times, no sooner than the back-off allows (5, 10,
// 20 and 40 ms), and the call then fails saying that it was refused.
func TestRefusedEveryStream(t *testing.T) {
	tr, accepted, streams := refuseAll(t, nil)
	start := time.Now()
	_, err := post(context.Background(), tr, "/", []byte("{}"))
	took := time.Since(start)
	if want := "stream error: stream ID 9; REFUSED_STREAM; received from peer"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
	if n := streams.Load(); n != 5 {
		t.Errorf("the server refused %d streams of one call, want 5", n)
	}
	wantConns(t, accepted, 1)
	if min := 75 * time.Millisecond; took < min {
		t.Errorf("five attempts took %v, less than the back-off of %v", took, min)
	}
}

// TestRefusedBackOffEndsWithContext: a call whose context ends while it
// waits to be made again returns the context's error then, not after
// the wait.
func TestRefusedBackOffEndsWithContext(t *testing.T) {
	for _, tc := range []struct {
		name string
		ctx  func(refused <-chan struct{}) (context.Context, context.CancelFunc)
		want error
	}{
		{"deadline", func(<-chan struct{}) (context.Context, context.CancelFunc) {
			// Long enough for the dial and the TLS handshake on a busy
			// machine: the call must be refused once before it ends.
			return context.WithTimeout(context.Background(), 2*time.Second)
		}, context.DeadlineExceeded},
		{"cancelled", func(refused <-chan struct{}) (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				<-refused
				cancel()
			}()
			return ctx, cancel
		}, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			refused := make(chan struct{}, 1)
			tr, _, streams := refuseAll(t, refused)
			h2.SetRefusedDelay(tr, time.Minute)
			ctx, cancel := tc.ctx(refused)
			defer cancel()
			start := time.Now()
			_, err := post(ctx, tr, "/", []byte("{}"))
			if !errors.Is(err, tc.want) {
				t.Errorf("error %v, want %v", err, tc.want)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("the call returned after %v", d)
			}
			if n := streams.Load(); n != 1 {
				t.Errorf("the server refused %d streams, want 1 before the wait", n)
			}
		})
	}
}

// TestConnectionGoneBeforeWrite: calls whose connection goes away before
// any byte of them was written, one blocked in its write and one waiting
// for its turn to write, are made again on a new connection: the server
// cannot have seen them.
func TestConnectionGoneBeforeWrite(t *testing.T) {
	wrap, conns := stallConns()
	first := make(chan net.Conn, 1)
	tr, accepted := startFakeWrapped(t, wrap, func(n int, f *fakeConn) {
		if n == 1 {
			first <- f.c
		}
		f.eachRequest(func(req *request) {
			if n == 1 && req.header[":path"] != "/warm" {
				t.Errorf("the first connection's server saw %s", req.header[":path"])
			}
			f.answer(req.id, req.header[":path"])
		})
	})
	if _, err := post(context.Background(), tr, "/warm"); err != nil {
		t.Fatal(err)
	}
	conns()[0].stall(0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	results := make(chan string, 2)
	for _, path := range []string{"/blocked", "/waiting"} {
		go func() {
			resp, err := post(ctx, tr, path, []byte("{}"))
			if err != nil || string(resp.Body) != path {
				results <- fmt.Sprintf("%s: answered %q, %v", path, resp.Body, err)
				return
			}
			results <- ""
		}()
		if path == "/blocked" {
			<-conns()[0].blocked
		} else {
			waitForStack(t, "h2.(*conn).lockWrite")
		}
	}
	(<-first).Close()
	for range 2 {
		if r := <-results; r != "" {
			t.Error(r)
		}
	}
	wantConns(t, accepted, 2)
}

// TestConnectionGoneDuringWrite: a call whose HEADERS reached the server
// before its connection went away fails, and is not made again: the
// webhook may have acted on it.
func TestConnectionGoneDuringWrite(t *testing.T) {
	wrap, conns := stallConns()
	first := make(chan net.Conn, 1)
	saw := make(chan string, 1)
	tr, accepted := startFakeWrapped(t, wrap, func(n int, f *fakeConn) {
		if n == 1 {
			first <- f.c
		}
		if !f.preface() {
			return
		}
		if n > 1 {
			t.Errorf("the call was made again on connection %d", n)
			return
		}
		req, err := f.read(false)
		if err != nil {
			t.Error(err)
			return
		}
		f.answer(req.id, "warm")
		for {
			fr, err := f.fr.ReadFrame()
			if err != nil {
				return
			}
			if h, ok := fr.(*http2.MetaHeadersFrame); ok {
				saw <- h.PseudoValue("path")
			}
		}
	})
	if _, err := post(context.Background(), tr, "/warm"); err != nil {
		t.Fatal(err)
	}
	conns()[0].stall(1) // the first TLS record, with the HEADERS, goes out
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	result := make(chan error, 1)
	go func() {
		_, err := post(ctx, tr, "/partial", make([]byte, 100<<10))
		result <- err
	}()
	<-conns()[0].blocked
	if path := <-saw; path != "/partial" {
		t.Errorf("the server saw %s", path)
	}
	(<-first).Close()
	if err := <-result; err == nil || ctx.Err() != nil {
		t.Errorf("error %v, want the connection's", err)
	}
	wantConns(t, accepted, 1)
}

// TestPingTimeout: a server that goes silent mid-call, answering not even
// a PING, fails the call once the health check gives up, long before the
// call's own deadline, and the next call dials a new connection. That
// one's server answers PINGs, and the ping timeout is a second, so that a
// slow machine (more than the read-idle timeout between dial and answer)
// does not fail it too.
func TestPingTimeout(t *testing.T) {
	tr, accepted := startFake(t, func(n int, f *fakeConn) {
		f.answerPings = n > 1
		req, ok := f.firstRequest(nil)
		if !ok {
			return
		}
		if n == 1 {
			f.read(false) // reads, and ignores, everything until the client closes
			return
		}
		f.answer(req.id, "second")
		f.read(false)
	})
	tr.ReadIdleTimeout, tr.PingTimeout = 100*time.Millisecond, time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	_, err := post(ctx, tr, "/", []byte("{}"))
	if want := "h2: connection lost: no frame from the server for 100ms and no answer to a PING within 1s"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the call returned after %v", d)
	}
	if resp, err := post(ctx, tr, "/"); err != nil || string(resp.Body) != "second" {
		t.Errorf("the next call: %q, %v", resp.Body, err)
	}
	wantConns(t, accepted, 2)
}

// TestPingKeepsSlowCallAlive: a server that answers the health check's
// PINGs keeps a slow call going; this one answers after the third. A
// connection without calls is not pinged.
func TestPingKeepsSlowCallAlive(t *testing.T) {
	idlePings := make(chan int, 1)
	tr, accepted := startFake(t, func(n int, f *fakeConn) {
		idle := 0
		defer func() { idlePings <- idle }()
		req, ok := f.firstRequest(t)
		if !ok {
			return
		}
		for pings := 0; pings < 3; {
			fr, err := f.fr.ReadFrame()
			if err != nil {
				t.Error(err)
				return
			}
			if p, ok := fr.(*http2.PingFrame); ok && !p.IsAck() {
				f.fr.WritePing(true, p.Data)
				pings++
			}
		}
		f.answer(req.id, "slow")
		// Without calls: count the PINGs over ten read-idle timeouts,
		// answering them, so that a client that pings idle connections
		// is not taken for one that gave up. The health timer was set a
		// read-idle timeout ahead by the last acknowledgement, just
		// before the answer: by the time it runs the call has ended
		// (unless the client stalls for 100ms in between), so none is
		// expected.
		f.c.SetReadDeadline(time.Now().Add(time.Second))
		for {
			fr, err := f.fr.ReadFrame()
			if err != nil {
				return
			}
			if p, ok := fr.(*http2.PingFrame); ok && !p.IsAck() {
				idle++
				f.fr.WritePing(true, p.Data)
			}
		}
	})
	tr.ReadIdleTimeout, tr.PingTimeout = 100*time.Millisecond, 5*time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if resp, err := post(ctx, tr, "/", []byte("{}")); err != nil || string(resp.Body) != "slow" {
		t.Errorf("answer %q, %v", resp.Body, err)
	}
	if n := <-idlePings; n > 0 {
		t.Errorf("%d PINGs on a connection without calls", n)
	}
	wantConns(t, accepted, 1)
}

// TestResetAfterServerEnds: a server that ends a stream with a broken or
// unwanted answer while the call's body is still being sent (the body is
// larger than the first window) has the stream reset with CANCEL, so
// that it does not stay half-closed on the server's side and count
// against its limit of concurrent streams (RFC 9113 section 5.1 allows
// RST_STREAM after the peer's END_STREAM). The connection serves the next
// call.
func TestResetAfterServerEnds(t *testing.T) {
	for _, tc := range []struct {
		name  string
		serve func(f *fakeConn, id uint32)
	}{
		{"no status", func(f *fakeConn, id uint32) {
			f.headers(id, true, "x", "y")
		}},
		{"more than content-length", func(f *fakeConn, id uint32) {
			f.headers(id, false, ":status", "200", "content-length", "1")
			f.fr.WriteData(id, true, []byte("ab"))
		}},
		{"declared too large", func(f *fakeConn, id uint32) {
			f.headers(id, true, ":status", "200", "content-length", "1000000000")
		}},
		{"too large", func(f *fakeConn, id uint32) {
			f.headers(id, false, ":status", "200")
			for i := range 3 { // 48 KiB, past MaxResponse
				f.fr.WriteData(id, i == 2, make([]byte, 16<<10))
			}
		}},
		{"shorter than content-length", func(f *fakeConn, id uint32) {
			f.headers(id, false, ":status", "200", "content-length", "10")
			f.fr.WriteData(id, true, []byte("ab"))
		}},
		{"answered early", func(f *fakeConn, id uint32) {
			f.answer(id, "early")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reset := make(chan *http2.RSTStreamFrame, 1)
			tr, accepted := startFake(t, func(n int, f *fakeConn) {
				if n > 1 {
					return // counted below
				}
				defer close(reset)
				id, ok := f.firstHeaders(t)
				if !ok {
					return
				}
				tc.serve(f, id)
				// The reset must come before the next call's HEADERS.
				for _, rst := range f.resetsBeforeNext(t) {
					if rst.StreamID == id {
						reset <- rst
					}
				}
			})
			tr.MaxResponse = 32 << 10
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			post(ctx, tr, "/", make([]byte, 200<<10))
			answersNext(t, ctx, tr, "/")
			tr.CloseIdleConnections()
			if rst := <-reset; rst == nil || rst.ErrCode != http2.ErrCodeCancel {
				t.Errorf("the server's stream was reset with %v, want RST_STREAM CANCEL", rst)
			}
			wantConns(t, accepted, 1)
		})
	}
}

// TestSendWindowKeptWhenWriteWaitEnds: a call whose context ends while it
// waits for its turn to write a part of its body gives back the window
// it took for that part, so that the uploads after it are not starved.
func TestSendWindowKeptWhenWriteWaitEnds(t *testing.T) {
	const window = 65535 // the default, of the stream and the connection
	read, grant := make(chan struct{}), make(chan struct{})
	tr, _ := startFake(t, func(n int, f *fakeConn) {
		req, ok := f.firstRequest(t)
		if !ok {
			return
		}
		f.answer(req.id, "warm")
		// The call that times out: read its first window, then open
		// the windows once the test holds the write slot.
		var id uint32
		for got := 0; got < window; {
			fr, err := f.fr.ReadFrame()
			if err != nil {
				t.Error(err)
				return
			}
			switch fr := fr.(type) {
			case *http2.MetaHeadersFrame:
				id = fr.StreamID
			case *http2.DataFrame:
				got += len(fr.Data())
			}
		}
		read <- struct{}{}
		<-grant
		f.fr.WriteWindowUpdate(0, window)
		f.fr.WriteWindowUpdate(id, window)
		for {
			req, err := f.read(true)
			if err != nil {
				return
			}
			f.answer(req.id, fmt.Sprint(len(req.body)))
		}
	})
	if _, err := post(context.Background(), tr, "/warm"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	result := make(chan error, 1)
	go func() {
		_, err := post(ctx, tr, "/", make([]byte, 200<<10))
		result <- err
	}()
	<-read
	release := h2.HoldWrite(tr)
	close(grant)
	waitForStack(t, "h2.(*conn).lockWrite") // the call took the window and waits to write
	if err := <-result; !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v, want the context's deadline", err)
	}
	if w := h2.SendWindow(tr); w != window {
		t.Errorf("the connection's send window is %d, want %d", w, window)
	}
	release()
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if resp, err := post(ctx, tr, "/", make([]byte, 200<<10)); err != nil || string(resp.Body) != fmt.Sprint(200<<10) {
		t.Errorf("the next upload: %q, %v", resp.Body, err)
	}
}

// TestStaleIdleConnection: a connection that went silent while it had no
// calls (a NAT or load balancer dropped it) is pinged as soon as a call
// lands on it, so that the call fails within about the ping timeout, not
// the read-idle timeout more, and the next call dials anew.
func TestStaleIdleConnection(t *testing.T) {
	tr, accepted := startFake(t, func(n int, f *fakeConn) {
		f.answerPings = n > 1
		req, ok := f.firstRequest(t)
		if !ok {
			return
		}
		f.answer(req.id, fmt.Sprint(n))
		for { // reads, and on the first connection ignores, all until the client closes
			if _, err := f.read(false); err != nil {
				return
			}
		}
	})
	const readIdle, ping = 2 * time.Second, 100 * time.Millisecond
	tr.ReadIdleTimeout, tr.PingTimeout = readIdle, ping
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := post(ctx, tr, "/"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); !h2.Stale(tr); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the silent connection was not found stale")
		}
	}
	start := time.Now()
	_, err := post(ctx, tr, "/")
	if want := "h2: connection lost: no frame from the server for 2s and no answer to a PING within 100ms"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
	if d := time.Since(start); d >= readIdle {
		t.Errorf("the call onto the stale connection failed after %v, want about %v", d, ping)
	}
	if resp, err := post(ctx, tr, "/"); err != nil || string(resp.Body) != "2" {
		t.Errorf("the next call: %q, %v", resp.Body, err)
	}
	wantConns(t, accepted, 2)
}

// TestTimeoutDefaults: a timeout of zero or less is its default; a
// negative one would have the health check's timer fire without end.
func TestTimeoutDefaults(t *testing.T) {
	for _, tc := range []struct {
		set, want [3]time.Duration // idle, read-idle, ping
	}{
		{[3]time.Duration{}, [3]time.Duration{h2.DefaultIdleTimeout, h2.DefaultReadIdleTimeout, h2.DefaultPingTimeout}},
		{[3]time.Duration{-1, -time.Second, -time.Hour}, [3]time.Duration{h2.DefaultIdleTimeout, h2.DefaultReadIdleTimeout, h2.DefaultPingTimeout}},
		{[3]time.Duration{1, 2, 3}, [3]time.Duration{1, 2, 3}},
		{[3]time.Duration{time.Minute, 5 * time.Second, time.Second}, [3]time.Duration{time.Minute, 5 * time.Second, time.Second}},
	} {
		tr := &h2.Transport{IdleTimeout: tc.set[0], ReadIdleTimeout: tc.set[1], PingTimeout: tc.set[2]}
		idle, readIdle, ping := h2.Timeouts(tr)
		if got := [3]time.Duration{idle, readIdle, ping}; got != tc.want {
			t.Errorf("set %v: applied %v, want %v", tc.set, got, tc.want)
		}
	}
}

// TestIdleTimeoutWaitsForSetup: a server slower to send its SETTINGS
// than the idle timeout does not have the connection closed while it is
// being set up: the idle clock starts once the connection took its first
// call.
func TestIdleTimeoutWaitsForSetup(t *testing.T) {
	tr, accepted := startFake(t, func(n int, f *fakeConn) {
		time.Sleep(300 * time.Millisecond) // a slow server, fifteen idle timeouts
		req, ok := f.firstRequest(nil)
		if !ok {
			return
		}
		f.answer(req.id, "slow")
		f.read(false)
	})
	tr.IdleTimeout = 20 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if resp, err := post(ctx, tr, "/"); err != nil || string(resp.Body) != "slow" {
		t.Errorf("answer %q, %v", resp.Body, err)
	}
	wantConns(t, accepted, 1)
}

// TestPingAckOtherData: an acknowledgement of a PING with other data than
// the health check's is not taken for its answer: the call fails once
// the ping timeout passes.
func TestPingAckOtherData(t *testing.T) {
	tr, _ := startFake(t, func(n int, f *fakeConn) {
		if !f.preface() {
			return
		}
		if _, err := f.read(false); err != nil {
			return
		}
		for {
			fr, err := f.fr.ReadFrame()
			if err != nil {
				return
			}
			if p, ok := fr.(*http2.PingFrame); ok && !p.IsAck() {
				data := p.Data
				data[7] ^= 0xff
				f.fr.WritePing(true, data)
			}
		}
	})
	tr.ReadIdleTimeout, tr.PingTimeout = 100*time.Millisecond, 500*time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := post(ctx, tr, "/", []byte("{}"))
	if want := "h2: connection lost: no frame from the server for 100ms and no answer to a PING within 500ms"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}

// TestGoAwayKeepsFirstCode: of several GOAWAY frames, the calls' errors
// say the first error code other than NO_ERROR and the first debug data.
func TestGoAwayKeepsFirstCode(t *testing.T) {
	tr, _ := startFake(t, func(n int, f *fakeConn) {
		req, ok := f.firstRequest(nil)
		if !ok {
			return
		}
		f.fr.WriteGoAway(req.id, http2.ErrCodeNo, nil)
		f.fr.WriteGoAway(req.id, http2.ErrCodeEnhanceYourCalm, []byte("calm"))
		f.fr.WriteGoAway(req.id, http2.ErrCodeInternal, []byte("internal"))
	})
	_, err := post(context.Background(), tr, "/")
	if want := `h2: the server sent GOAWAY (ENHANCE_YOUR_CALM, debug data "calm") and closed the connection: unexpected EOF`; err == nil || err.Error() != want {
		t.Errorf("error %v\nwant %s", err, want)
	}
}

// TestServerResetWhileSending: a stream the server resets while the
// call's body is still going out is not reset by the client in turn; the
// call fails with the server's code and the connection serves the next
// call. (The reader marks the stream reset while the caller's sendBody
// reads the mark: run with -race, this checks that both do so under mu.
// The detector sees a regression only when the two interleave: with the
// mark set after mu is released, 5 runs of 8 failed.)
func TestServerResetWhileSending(t *testing.T) {
	resets := make(chan []*http2.RSTStreamFrame, 1)
	tr, accepted := startFake(t, func(n int, f *fakeConn) {
		if n > 1 {
			return // counted below
		}
		var got []*http2.RSTStreamFrame
		defer func() { resets <- got }()
		id, ok := f.firstHeaders(t)
		if !ok {
			return
		}
		f.fr.WriteRSTStream(id, http2.ErrCodeInternal)
		got = f.resetsBeforeNext(t)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := post(ctx, tr, "/", make([]byte, 200<<10))
	if want := "stream error: stream ID 1; INTERNAL_ERROR; received from peer"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
	answersNext(t, ctx, tr, "/")
	tr.CloseIdleConnections()
	for _, rst := range <-resets {
		t.Errorf("the client reset stream %d (%v) in turn", rst.StreamID, rst.ErrCode)
	}
	wantConns(t, accepted, 1)
}
