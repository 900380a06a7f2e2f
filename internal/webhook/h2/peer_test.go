package h2_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/crdserver/crdserver/internal/webhook/h2"
	"github.com/crdserver/crdserver/internal/webhook/webhookcert"
)

// The tests here script the server's side frame by frame, for what
// net/http's server does not do on demand: GOAWAY before a stream, refused
// streams, 1xx answers, trailers, padding, tiny windows.

var certificate = sync.OnceValues(func() (*certs, error) {
	cert, ca, err := webhookcert.Certificate()
	return &certs{cert, ca}, err
})

type certs struct {
	cert tls.Certificate
	ca   []byte
}

// fakeConn is the server's side of one connection.
type fakeConn struct {
	t    testing.TB
	c    net.Conn
	fr   *http2.Framer
	enc  *hpack.Encoder
	ebuf bytes.Buffer
	// resets are the RST_STREAM frames read has read.
	resets []*http2.RSTStreamFrame
	// answerPings makes read acknowledge the PINGs it reads.
	answerPings bool
}

// errorf fails the test, if the connection serves one (fuzzing's do
// not: a fuzz target may not fail from another goroutine).
func (f *fakeConn) errorf(format string, args ...any) {
	if f.t != nil {
		f.t.Errorf(format, args...)
	}
}

// request is a request as the fake server read it.
type request struct {
	id     uint32
	header map[string]string
	body   []byte
}

// startFake serves each accepted connection with serve (n counts them
// from 1) and returns a transport that dials the server.
func startFake(t testing.TB, serve func(n int, f *fakeConn)) (*h2.Transport, *atomic.Int64) {
	t.Helper()
	return startFakeWrapped(t, nil, serve)
}

// startFakeWrapped is startFake with the transport's connections wrapped
// by wrap (below TLS), when it is not nil.
func startFakeWrapped(t testing.TB, wrap func(net.Conn) net.Conn, serve func(n int, f *fakeConn)) (*h2.Transport, *atomic.Int64) {
	t.Helper()
	cs, err := certificate()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			n := int(accepted.Add(1))
			wg.Go(func() {
				defer c.Close()
				tc := tls.Server(c, &tls.Config{Certificates: []tls.Certificate{cs.cert}, NextProtos: []string{"h2"}})
				tc.SetDeadline(time.Now().Add(10 * time.Second))
				if tc.Handshake() != nil {
					return
				}
				f := &fakeConn{t: t, c: tc, fr: http2.NewFramer(tc, tc)}
				f.enc = hpack.NewEncoder(&f.ebuf)
				f.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
				serve(n, f)
			})
		}
	})
	tr := transportWrapped(l.Addr().String(), cs.ca, []string{"h2"}, wrap)
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		l.Close()
		wg.Wait()
	})
	return tr, &accepted
}

// preface reads the client's preface and SETTINGS and sends the server's,
// with settings.
func (f *fakeConn) preface(settings ...http2.Setting) bool {
	buf := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(f.c, buf); err != nil || string(buf) != http2.ClientPreface {
		f.errorf("preface %q, %v", buf, err)
		return false
	}
	return f.fr.WriteSettings(settings...) == nil
}

// read reads a request, answering SETTINGS and, when windows, granting
// back every DATA frame's length at once.
func (f *fakeConn) read(windows bool) (*request, error) {
	var req *request
	for {
		fr, err := f.fr.ReadFrame()
		if err != nil {
			return nil, err
		}
		switch fr := fr.(type) {
		case *http2.SettingsFrame:
			if !fr.IsAck() {
				f.fr.WriteSettingsAck()
			}
		case *http2.MetaHeadersFrame:
			req = &request{id: fr.StreamID, header: map[string]string{}}
			for _, h := range fr.Fields {
				req.header[h.Name] = h.Value
			}
			if fr.StreamEnded() {
				return req, nil
			}
		case *http2.DataFrame:
			if req == nil || fr.StreamID != req.id {
				f.errorf("DATA of stream %d", fr.StreamID)
				continue
			}
			req.body = append(req.body, fr.Data()...)
			if windows && fr.Length > 0 && !fr.StreamEnded() {
				f.fr.WriteWindowUpdate(0, fr.Length)
				f.fr.WriteWindowUpdate(fr.StreamID, fr.Length)
			}
			if fr.StreamEnded() {
				return req, nil
			}
		case *http2.RSTStreamFrame:
			f.resets = append(f.resets, &http2.RSTStreamFrame{FrameHeader: fr.FrameHeader, ErrCode: fr.ErrCode})
		case *http2.PingFrame:
			if f.answerPings && !fr.IsAck() {
				f.fr.WritePing(true, fr.Data)
			}
		}
	}
}

// headers writes a header block of fields on stream id, split into
// HEADERS and CONTINUATION frames of at most 16 KiB.
func (f *fakeConn) headers(id uint32, end bool, fields ...string) {
	f.ebuf.Reset()
	for i := 0; i < len(fields); i += 2 {
		f.enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
	}
	block := f.ebuf.Bytes()
	first := block[:min(len(block), 16<<10)]
	rest := block[len(first):]
	f.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: first, EndStream: end, EndHeaders: len(rest) == 0})
	for len(rest) > 0 {
		frag := rest[:min(len(rest), 16<<10)]
		rest = rest[len(frag):]
		f.fr.WriteContinuation(id, len(rest) == 0, frag)
	}
}

// answer answers stream id with status 200 and body.
func (f *fakeConn) answer(id uint32, body string) {
	f.headers(id, false, ":status", "200")
	f.fr.WriteData(id, true, []byte(body))
}

// TestGoAwayBeforeStream checks that a call whose stream the server
// excluded by its GOAWAY is made again on a new connection, and that the
// connection it went away from is closed.
func TestGoAwayBeforeStream(t *testing.T) {
	closed := make(chan error, 1)
	tr, accepted := startFake(t, func(n int, f *fakeConn) {
		req, ok := f.firstRequest(t)
		if !ok {
			return
		}
		if n == 1 {
			f.fr.WriteGoAway(0, http2.ErrCodeNo, nil)
			// The client closes the connection: its last stream ended.
			_, err := f.read(false)
			closed <- err
			return
		}
		f.answer(req.id, "second")
		f.read(false)
	})
	resp, err := post(context.Background(), tr, "/")
	if err != nil || string(resp.Body) != "second" {
		t.Fatalf("answer %q, %v", resp.Body, err)
	}
	wantConns(t, accepted, 2)
	select {
	case err := <-closed:
		if err == nil {
			t.Error("the connection after GOAWAY carried another request")
		}
	case <-time.After(2 * time.Second):
		t.Error("the connection stayed open after GOAWAY")
	}
}

// TestRefusedStream checks that a refused stream is made again.
func TestRefusedStream(t *testing.T) {
	tr, accepted := startFake(t, func(n int, f *fakeConn) {
		req, ok := f.firstRequest(t)
		if !ok {
			return
		}
		f.fr.WriteRSTStream(req.id, http2.ErrCodeRefusedStream)
		req, err := f.read(false)
		if err != nil {
			t.Error(err)
			return
		}
		f.answer(req.id, "again")
		f.read(false)
	})
	resp, err := post(context.Background(), tr, "/", []byte("{}"))
	if err != nil || string(resp.Body) != "again" {
		t.Fatalf("answer %q, %v", resp.Body, err)
	}
	wantConns(t, accepted, 1)
}

// TestAnswerFrames checks answers in every shape a server may send: after
// a 1xx answer, with header blocks continued over several frames, padded
// DATA, empty DATA, trailers, a PING on the way.
func TestAnswerFrames(t *testing.T) {
	big := strings.Repeat("v", 40<<10)
	tr, _ := startFake(t, func(n int, f *fakeConn) {
		if !f.preface(http2.Setting{ID: http2.SettingHeaderTableSize, Val: 0}) {
			return
		}
		req, err := f.read(false)
		if err != nil {
			t.Error(err)
			return
		}
		if req.header["x-big"] != big {
			t.Errorf("a header field of %d bytes arrived with %d", len(big), len(req.header["x-big"]))
		}
		f.fr.WritePing(false, [8]byte{1, 2, 3})
		f.headers(req.id, false, ":status", "100")
		f.headers(req.id, false, ":status", "201", "x-large", big, "content-length", "9")
		f.fr.WriteDataPadded(req.id, false, []byte("abc"), make([]byte, 10))
		f.fr.WriteData(req.id, false, nil)
		f.fr.WriteData(req.id, false, []byte("defghi"))
		f.headers(req.id, true, "x-trailer", "t")
		for {
			fr, err := f.fr.ReadFrame()
			if err != nil {
				t.Errorf("no PING acknowledgement: %v", err)
				return
			}
			if p, ok := fr.(*http2.PingFrame); ok {
				if !p.IsAck() || p.Data != [8]byte{1, 2, 3} {
					t.Errorf("PING answered with %v", p)
				}
				break
			}
		}
		f.read(false)
	})
	resp, err := tr.Post(context.Background(), &h2.Request{Authority: "a", Path: "/", Header: []hpack.HeaderField{{Name: "x-big", Value: big}}})
	if err != nil || resp.Status != 201 || string(resp.Body) != "abcdefghi" {
		t.Fatalf("answer %d %q, %v", resp.Status, resp.Body, err)
	}
}

// TestLargeFrames checks that the transport announces DATA frames of up
// to 1 MB and takes an answer in frames that large: Go's server writes a
// frame per hand-off from its handler, so an answer of megabytes in the
// protocol's default 16 KB frames costs it a hand-off per 16 KB.
func TestLargeFrames(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MB
	tr, _ := startFake(t, func(n int, f *fakeConn) {
		if !f.preface() {
			return
		}
		fr, err := f.fr.ReadFrame()
		settings, ok := fr.(*http2.SettingsFrame)
		if err != nil || !ok {
			t.Errorf("the client's first frame: %v, %v", fr, err)
			return
		}
		if v, _ := settings.Value(http2.SettingMaxFrameSize); v != 1<<20 {
			t.Errorf("SETTINGS_MAX_FRAME_SIZE announced %d, want %d", v, 1<<20)
		}
		f.fr.WriteSettingsAck()
		req, err := f.read(false)
		if err != nil {
			t.Error(err)
			return
		}
		f.headers(req.id, false, ":status", "200")
		if err := f.fr.WriteData(req.id, true, body); err != nil {
			t.Error(err)
		}
		f.read(false)
	})
	resp, err := tr.Post(context.Background(), &h2.Request{Authority: "a", Path: "/"})
	if err != nil || resp.Status != 200 || !bytes.Equal(resp.Body, body) {
		t.Fatalf("answer %v of %d bytes, %v; want 200 with %d bytes", resp, len(resp.Body), err, len(body))
	}
}

// TestSendWindows checks that a body is sent only as the server's windows
// allow: the server announces a stream window of 1000 bytes and grants
// back each DATA frame as it reads it; it counts what it has granted.
func TestSendWindows(t *testing.T) {
	const window = 1000
	body := bytes.Repeat([]byte("0123456789"), 30000)
	tr, _ := startFake(t, func(n int, f *fakeConn) {
		if !f.preface(http2.Setting{ID: http2.SettingInitialWindowSize, Val: window}) {
			return
		}
		// Read by hand, checking every frame against the window.
		avail := int64(window)
		var got []byte
		var id uint32
		for {
			fr, err := f.fr.ReadFrame()
			if err != nil {
				t.Error(err)
				return
			}
			switch fr := fr.(type) {
			case *http2.SettingsFrame:
				if !fr.IsAck() {
					f.fr.WriteSettingsAck()
				}
			case *http2.MetaHeadersFrame:
				id = fr.StreamID
			case *http2.DataFrame:
				if avail -= int64(fr.Length); avail < 0 {
					t.Errorf("DATA past the stream window by %d bytes", -avail)
					return
				}
				got = append(got, fr.Data()...)
				if fr.StreamEnded() {
					if !bytes.Equal(got, body) {
						t.Errorf("read %d bytes, want %d", len(got), len(body))
					}
					f.answer(id, "ok")
					f.read(false)
					return
				}
				// Grant back what was read, in two steps.
				half := fr.Length / 2
				for _, g := range []uint32{half, fr.Length - half} {
					if g > 0 {
						f.fr.WriteWindowUpdate(id, g)
						f.fr.WriteWindowUpdate(0, g)
						avail += int64(g)
					}
				}
			}
		}
	})
	resp, err := post(context.Background(), tr, "/", body[:12345], body[12345:])
	if err != nil || string(resp.Body) != "ok" {
		t.Fatalf("answer %q, %v", resp.Body, err)
	}
}

// TestWindowWaitEnds checks that a call waiting for a window the server
// never opens returns at its deadline.
func TestWindowWaitEnds(t *testing.T) {
	tr, _ := startFake(t, func(n int, f *fakeConn) {
		if !f.preface(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 10}) {
			return
		}
		for {
			fr, err := f.fr.ReadFrame()
			if err != nil {
				return
			}
			if rst, ok := fr.(*http2.RSTStreamFrame); ok && rst.ErrCode != http2.ErrCodeCancel {
				t.Errorf("RST_STREAM %v, want CANCEL", rst.ErrCode)
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := post(ctx, tr, "/", make([]byte, 100)); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v, want a deadline exceeded", err)
	}
}

// TestConnectionErrors checks that what breaks a connection fails its
// calls, and that the next call dials anew.
func TestConnectionErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		serve func(f *fakeConn, id uint32)
		keep  bool // the connection serves the next call
		want  string
	}{
		{"closed", func(f *fakeConn, id uint32) {}, false, "unexpected EOF"},
		{"GOAWAY with an error", func(f *fakeConn, id uint32) {
			f.fr.WriteGoAway(id, http2.ErrCodeInternal, []byte("bye"))
		}, false, "unexpected EOF"},
		{"push", func(f *fakeConn, id uint32) {
			f.fr.WritePushPromise(http2.PushPromiseParam{StreamID: id, PromiseID: 2, EndHeaders: true})
			f.read(false)
		}, false, "PROTOCOL_ERROR"},
		{"reset", func(f *fakeConn, id uint32) {
			f.fr.WriteRSTStream(id, http2.ErrCodeInternal)
		}, true, "stream error: stream ID 1; INTERNAL_ERROR"},
		{"no status", func(f *fakeConn, id uint32) {
			f.headers(id, true, "x", "y")
		}, true, "no valid :status"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, accepted := startFake(t, func(n int, f *fakeConn) {
				if !f.preface() {
					return
				}
				for i := 0; ; i++ {
					req, err := f.read(false)
					if err != nil {
						return
					}
					if n == 1 && i == 0 {
						if tc.serve(f, req.id); !tc.keep {
							return
						}
						continue
					}
					f.answer(req.id, "ok")
				}
			})
			if _, err := post(context.Background(), tr, "/"); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
			if resp, err := post(context.Background(), tr, "/"); err != nil || string(resp.Body) != "ok" {
				t.Errorf("the next call: %q, %v", resp.Body, err)
			}
			if n := accepted.Load(); n > 2 {
				t.Errorf("%d connections", n)
			}
		})
	}
}

// FuzzAnswer feeds a call's connection whatever bytes the fuzzer makes
// after a valid preface: the call must return, answered or failed,
// without a panic, a hang or a race.
func FuzzAnswer(f *testing.F) {
	frame := func(typ http2.FrameType, flags http2.Flags, id uint32, payload ...byte) []byte {
		n := len(payload)
		return append([]byte{byte(n >> 16), byte(n >> 8), byte(n), byte(typ), byte(flags), byte(id >> 24), byte(id >> 16), byte(id >> 8), byte(id)}, payload...)
	}
	status200 := []byte{0x88} // :status 200, indexed
	f.Add(append(frame(http2.FrameHeaders, http2.FlagHeadersEndHeaders, 1, status200...), frame(http2.FrameData, http2.FlagDataEndStream, 1, 'o', 'k')...))
	f.Add(frame(http2.FrameHeaders, http2.FlagHeadersEndHeaders|http2.FlagHeadersEndStream, 1, status200...))
	f.Add(append(frame(http2.FrameHeaders, 0, 1, status200...), frame(http2.FrameContinuation, http2.FlagContinuationEndHeaders, 1)...))
	f.Add(frame(http2.FrameGoAway, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
	f.Add(frame(http2.FrameWindowUpdate, 0, 0, 0x7f, 0xff, 0xff, 0xff))
	f.Add(frame(http2.FrameSettings, 0, 0, 0, 4, 0xff, 0xff, 0xff, 0xff))
	f.Add(frame(http2.FrameRSTStream, 0, 1, 0, 0, 0, 7))
	f.Add([]byte("HTTP/1.1 200 OK\r\n\r\n"))
	var script atomic.Value
	tr, _ := startFake(f, func(n int, fc *fakeConn) {
		fc.t = nil
		if !fc.preface() {
			return
		}
		if _, err := fc.read(false); err != nil {
			return
		}
		fc.c.Write(script.Load().([]byte))
		time.Sleep(10 * time.Millisecond)
	})
	f.Fuzz(func(t *testing.T, data []byte) {
		script.Store(data)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		start := time.Now()
		post(ctx, tr, "/", []byte("{}"))
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("the call returned after %v", d)
		}
		tr.CloseIdleConnections()
	})
}

// TestNoStreamsAllowed checks that a server that allows no streams fails
// the call at once, rather than having it dial connection after
// connection.
func TestNoStreamsAllowed(t *testing.T) {
	tr, accepted := startFake(t, func(n int, f *fakeConn) {
		if !f.preface(http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 0}) {
			return
		}
		f.read(false)
	})
	if _, err := post(context.Background(), tr, "/"); err == nil || !strings.Contains(err.Error(), "allows no streams") {
		t.Errorf("error %v, want the server allows no streams", err)
	}
	wantConns(t, accepted, 1)
}

// stallConn is the client's side of a connection whose writes can be
// made to stall, as writes to a server that stopped reading do: once
// stall is called, the writes after the next pass ones block until the
// connection is closed, and then fail as such a write fails.
type stallConn struct {
	net.Conn
	mu      sync.Mutex
	stalled bool
	pass    int
	blocked chan struct{} // signalled when a write blocks
	closed  chan struct{}
	once    sync.Once
}

// stallConns returns a wrap for startFakeWrapped and the connections it
// wrapped, in the order they were dialed.
func stallConns() (func(net.Conn) net.Conn, func() []*stallConn) {
	var mu sync.Mutex
	var conns []*stallConn
	wrap := func(c net.Conn) net.Conn {
		sc := &stallConn{Conn: c, blocked: make(chan struct{}, 1), closed: make(chan struct{})}
		mu.Lock()
		conns = append(conns, sc)
		mu.Unlock()
		return sc
	}
	return wrap, func() []*stallConn {
		mu.Lock()
		defer mu.Unlock()
		return append([]*stallConn(nil), conns...)
	}
}

// stall lets pass more writes through (a TLS record each) and blocks the
// next.
func (c *stallConn) stall(pass int) {
	c.mu.Lock()
	c.stalled, c.pass = true, pass
	c.mu.Unlock()
}

func (c *stallConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	block := c.stalled && c.pass == 0
	if c.stalled && c.pass > 0 {
		c.pass--
	}
	c.mu.Unlock()
	if !block {
		return c.Conn.Write(p)
	}
	select {
	case c.blocked <- struct{}{}:
	default:
	}
	<-c.closed
	return 0, &net.OpError{Op: "write", Net: "tcp", Err: net.ErrClosed}
}

func (c *stallConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// waitForStack waits until some goroutine's stack shows fn: a call
// blocked there.
func waitForStack(t *testing.T, fn string) {
	t.Helper()
	buf := make([]byte, 1<<20)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if bytes.Contains(buf[:runtime.Stack(buf, true)], []byte(fn)) {
			return
		}
	}
	t.Fatalf("no goroutine reached %s", fn)
}

// firstRequest reads the client's preface and its first request; ok is
// false when the connection ends before, which fails t (none: a
// connection the client may drop).
func (f *fakeConn) firstRequest(t *testing.T) (*request, bool) {
	if !f.preface() {
		return nil, false
	}
	req, err := f.read(false)
	if err != nil {
		if t != nil {
			t.Error(err)
		}
		return nil, false
	}
	return req, true
}

// firstHeaders reads the client's preface and frames up to its first
// HEADERS, and returns that stream's id (the rest of the request is left
// unread).
func (f *fakeConn) firstHeaders(t *testing.T) (uint32, bool) {
	if !f.preface() {
		return 0, false
	}
	for {
		fr, err := f.fr.ReadFrame()
		if err != nil {
			t.Error(err)
			return 0, false
		}
		if h, ok := fr.(*http2.MetaHeadersFrame); ok {
			return h.StreamID, true
		}
	}
}

// resetsBeforeNext reads frames until the HEADERS of the client's next
// call, which it answers "next", then until the client closes; it returns
// the RST_STREAM frames read before those HEADERS.
func (f *fakeConn) resetsBeforeNext(t *testing.T) []*http2.RSTStreamFrame {
	var resets []*http2.RSTStreamFrame
	for {
		fr, err := f.fr.ReadFrame()
		if err != nil {
			t.Error(err)
			return resets
		}
		switch fr := fr.(type) {
		case *http2.RSTStreamFrame:
			resets = append(resets, &http2.RSTStreamFrame{FrameHeader: fr.FrameHeader, ErrCode: fr.ErrCode})
		case *http2.MetaHeadersFrame:
			f.answer(fr.StreamID, "next")
			f.read(false) // until the client closes
			return resets
		}
	}
}

// answerNext reads the client's next request, answers it "next", and
// reads on until the client closes.
func (f *fakeConn) answerNext(t *testing.T) {
	req, err := f.read(false)
	if err != nil {
		t.Error(err)
		return
	}
	f.answer(req.id, "next")
	f.read(false)
}

// eachRequest reads the client's preface, then calls serve with each
// request it makes until the connection ends.
func (f *fakeConn) eachRequest(serve func(req *request)) {
	if !f.preface() {
		return
	}
	for {
		req, err := f.read(false)
		if err != nil {
			return
		}
		serve(req)
	}
}

// wantConns checks how many connections the fake server accepted.
func wantConns(t *testing.T, accepted *atomic.Int64, want int64) {
	t.Helper()
	if n := accepted.Load(); n != want {
		t.Errorf("%d connections, want %d", n, want)
	}
}

// answersNext checks that the next call, to path, is answered "next".
func answersNext(t *testing.T, ctx context.Context, tr *h2.Transport, path string) {
	t.Helper()
	if resp, err := post(ctx, tr, path); err != nil || string(resp.Body) != "next" {
		t.Errorf("the next call: %q, %v", resp.Body, err)
	}
}
