package h2_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2/hpack"

	"github.com/crdserver/crdserver/internal/webhook/h2"
	"github.com/crdserver/crdserver/internal/webhook/webhookcert"
)

// peer is a webhook server speaking net/http's HTTP/2, and a Transport
// that calls it.
type peer struct {
	srv *httptest.Server
	tr  *h2.Transport
	// accepted and closed count the server's connections.
	accepted, closed atomic.Int64
}

// start serves h with HTTP/2 offered; configure may change the server
// before it starts.
func start(t testing.TB, h http.Handler, configure func(*http.Server)) *peer {
	t.Helper()
	cert, ca, err := webhookcert.Certificate()
	if err != nil {
		t.Fatal(err)
	}
	p := &peer{srv: httptest.NewUnstartedServer(h)}
	p.srv.EnableHTTP2 = true
	p.srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	p.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			p.accepted.Add(1)
		case http.StateClosed:
			p.closed.Add(1)
		}
	}
	if configure != nil {
		configure(p.srv.Config)
	}
	p.srv.StartTLS()
	t.Cleanup(p.srv.Close)
	p.tr = transport(p.srv.Listener.Addr().String(), ca, []string{"h2", "http/1.1"})
	t.Cleanup(p.tr.CloseIdleConnections)
	return p
}

// transport dials addr, trusting the CA of caPEM, offering protos.
func transport(addr string, caPEM []byte, protos []string) *h2.Transport {
	return transportWrapped(addr, caPEM, protos, nil)
}

// transportWrapped is transport with its connections wrapped by wrap
// (below TLS), when it is not nil.
func transportWrapped(addr string, caPEM []byte, protos []string, wrap func(net.Conn) net.Conn) *h2.Transport {
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	cfg := &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", NextProtos: protos}
	return &h2.Transport{
		MaxResponse: 64 << 20,
		Dial: func(ctx context.Context) (*tls.Conn, error) {
			raw, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
			if err != nil {
				return nil, err
			}
			if wrap != nil {
				raw = wrap(raw)
			}
			tc := tls.Client(raw, cfg)
			if err := tc.HandshakeContext(ctx); err != nil {
				raw.Close()
				return nil, err
			}
			return tc, nil
		},
	}
}

var header = []hpack.HeaderField{
	{Name: "content-type", Value: "application/json"},
	{Name: "accept", Value: "application/json, */*"},
	{Name: "user-agent", Value: "Go-http-client/2.0"},
}

func post(ctx context.Context, tr *h2.Transport, path string, body ...[]byte) (h2.Response, error) {
	return tr.Post(ctx, &h2.Request{Authority: "webhook.example:443", Path: path, Header: header, Body: body})
}

// echo answers with what it was sent: the request line, the headers a
// webhook sees, and the body.
var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, "%s %s %s %s|%s|%s|%s|%d|", r.Proto, r.Method, r.Host, r.URL.RequestURI(),
		r.Header.Get("Content-Type"), r.Header.Get("Accept"), r.Header.Get("User-Agent"), r.ContentLength)
	w.Write(b)
})

func TestConcurrentCallsShareOneConnection(t *testing.T) {
	p := start(t, echo, nil)
	ctx := context.Background()
	// One call first: the calls at once then find its connection.
	if _, err := post(ctx, p.tr, "/warm"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			for j := range 20 {
				body := fmt.Sprintf(`{"call":%d}`, i*100+j)
				resp, err := post(ctx, p.tr, "/admit?timeout=10s", []byte(body[:5]), nil, []byte(body[5:]))
				if err != nil {
					t.Error(err)
					return
				}
				want := fmt.Sprintf("HTTP/2.0 POST webhook.example:443 /admit?timeout=10s|application/json|application/json, */*|Go-http-client/2.0|%d|%s", len(body), body)
				if resp.Status != 200 || string(resp.Body) != want {
					t.Errorf("answer %d %q, want 200 %q", resp.Status, resp.Body, want)
				}
			}
		})
	}
	wg.Wait()
	if n := p.accepted.Load(); n != 1 {
		t.Errorf("1000 calls, 50 at once, opened %d connections, want 1", n)
	}
}

// TestLargeBodies sends and receives bodies of megabytes, past the 64 KiB
// initial windows of both sides and the 4 MiB stream window the
// transport announces, several at once on one connection, with their
// length declared and without (as a webhook encoding its answer straight
// to the ResponseWriter sends it).
func TestLargeBodies(t *testing.T) {
	for _, declared := range []bool{true, false} {
		p := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			if declared {
				w.Header().Set("Content-Length", fmt.Sprint(2*len(b)))
			}
			w.Write(b)
			w.Write(bytes.ToUpper(b))
		}), nil)
		var wg sync.WaitGroup
		for i, size := range []int{100 << 10, 3 << 20, 5<<20 + 7, 1} {
			wg.Go(func() {
				body := bytes.Repeat([]byte{'a' + byte(i)}, size)
				resp, err := post(context.Background(), p.tr, "/convert", body[:size/3], body[size/3:])
				if err != nil {
					t.Error(err)
					return
				}
				if want := append(append([]byte(nil), body...), bytes.ToUpper(body)...); !bytes.Equal(resp.Body, want) {
					t.Errorf("declared %v, %d bytes sent: the answer has %d bytes, want %d", declared, size, len(resp.Body), len(want))
				}
				if declared && cap(resp.Body) != len(resp.Body) {
					t.Errorf("%d bytes sent: an answer of declared length %d has capacity %d", size, len(resp.Body), cap(resp.Body))
				}
			})
		}
		wg.Wait()
		if n := p.accepted.Load(); n > 2 {
			t.Errorf("declared %v: 4 calls at once opened %d connections", declared, n)
		}
	}
}

// TestAnswerHint: an answer of many frames is read into one buffer of the
// size the call expected and an eighth, unless its declared length is
// smaller; past a hint too small the buffer grows by quarters, so that it
// never holds twice the answer; a one-frame answer gets a buffer of its
// own size, whatever the hint.
func TestAnswerHint(t *testing.T) {
	const size = 1 << 20
	answer := bytes.Repeat([]byte("y"), size)
	p := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		if r.URL.Query().Get("declared") != "" {
			w.Header().Set("Content-Length", strconv.Itoa(n))
		}
		for i := 0; i < n; i += 16 << 10 {
			w.Write(answer[i:min(n, i+16<<10)])
			w.(http.Flusher).Flush()
		}
	}), nil)
	for _, c := range []struct {
		path    string
		hint    int
		wantCap int
	}{
		// An eighth over the hint, for answers a little larger.
		{"/?n=1048576", size + 100, (size + 100) * 9 / 8},
		// The declared length, when the hint is larger.
		{"/?n=1048576&declared=1", size + 100, size},
		// Its own size, for an answer of one frame.
		{"/?n=100", size, 100},
		// Past the hint and its eighth (345,600 bytes), by quarters:
		// 432,000, 540,000, 675,000, 843,750, 1,054,687.
		{"/?n=1048576", 300 << 10, 1054687},
	} {
		resp, err := p.tr.Post(context.Background(), &h2.Request{Authority: "webhook.example:443", Path: c.path, Header: header, AnswerHint: c.hint})
		if err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		if n := len(resp.Body); !bytes.Equal(resp.Body, answer[:n]) || (n != size && n != 100) {
			t.Errorf("%s: an answer of %d bytes, not the one sent", c.path, n)
		}
		if cap(resp.Body) != c.wantCap {
			t.Errorf("%s, hint %d: the answer's buffer holds %d bytes, want %d", c.path, c.hint, cap(resp.Body), c.wantCap)
		}
	}
}

// BenchmarkUndeclaredAnswer receives answers of a megabyte without a
// declared length, as a conversion webhook's review of 500 objects
// comes, with and without the size expected: the bytes allocated per call
// say how often the answer was copied while it grew.
func BenchmarkUndeclaredAnswer(b *testing.B) {
	answer := bytes.Repeat([]byte("x"), 1<<20)
	p := start(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i < len(answer); i += 16 << 10 {
			w.Write(answer[i:min(len(answer), i+16<<10)])
		}
	}), nil)
	for _, hint := range []int{0, len(answer)} {
		b.Run(fmt.Sprintf("hint=%d", hint), func(b *testing.B) {
			b.SetBytes(int64(len(answer)))
			b.ReportAllocs()
			for b.Loop() {
				resp, err := p.tr.Post(context.Background(), &h2.Request{Authority: "webhook.example:443", Path: "/", Header: header, AnswerHint: hint})
				if err != nil || len(resp.Body) != len(answer) {
					b.Fatalf("%d bytes, %v", len(resp.Body), err)
				}
			}
		})
	}
}

func TestAnswerTooLarge(t *testing.T) {
	for _, declared := range []bool{true, false} {
		p := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if declared {
				w.Header().Set("Content-Length", fmt.Sprint(2<<20))
			}
			w.Write(make([]byte, 2<<20))
		}), nil)
		p.tr.MaxResponse = 1 << 20
		if _, err := post(context.Background(), p.tr, "/"); !errors.Is(err, h2.ErrTooLarge) {
			t.Errorf("declared length %v: error %v, want ErrTooLarge", declared, err)
		}
		// The connection serves the next call.
		p.tr.MaxResponse = 0
		if resp, err := post(context.Background(), p.tr, "/"); err != nil || len(resp.Body) != 2<<20 {
			t.Errorf("declared length %v: the next call: %d bytes, %v", declared, len(resp.Body), err)
		}
		if n := p.accepted.Load(); n != 1 {
			t.Errorf("declared length %v: %d connections, want 1", declared, n)
		}
	}
}

// TestMaxConcurrentStreams calls a server that takes one stream per
// connection: calls at once each get a connection of their own, rather
// than streams the server refuses.
func TestMaxConcurrentStreams(t *testing.T) {
	p := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(20 * time.Millisecond)
		echo(w, r)
	}), func(s *http.Server) { s.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: 1} })
	var wg sync.WaitGroup
	const calls = 8
	for range calls {
		wg.Go(func() {
			for range 3 {
				if resp, err := post(context.Background(), p.tr, "/", []byte("{}")); err != nil || resp.Status != 200 {
					t.Errorf("%d, %v", resp.Status, err)
				}
			}
		})
	}
	wg.Wait()
	if n := p.accepted.Load(); n < 2 || n > 3*calls {
		t.Errorf("%d calls at once opened %d connections", calls, n)
	}
}

// TestGracefulShutdown checks that a webhook server that shuts down does
// not wait for the transport: its GOAWAY closes an idle connection at
// once, and a busy one as soon as its last call is answered. net/http's
// client keeps idle connections until the server gives up on them after
// a second.
func TestGracefulShutdown(t *testing.T) {
	holding, release := make(chan struct{}, 1), make(chan struct{})
	p := startHolding(t, holding, release)
	// A call in flight as the shutdown starts is answered.
	answered := make(chan error, 1)
	go func() {
		_, err := post(context.Background(), p.tr, "/hold")
		answered <- err
	}()
	<-holding // the call reached the handler
	shut := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		p.srv.Config.Shutdown(context.Background())
		shut <- time.Since(start)
	}()
	time.Sleep(50 * time.Millisecond)
	close(release)
	if err := <-answered; err != nil {
		t.Errorf("the call in flight: %v", err)
	}
	if d := <-shut; d > 700*time.Millisecond {
		t.Errorf("Shutdown took %v", d)
	}
}

// TestGoAwayThenNewConnection checks that a connection the server gave up
// (its idle timeout: a GOAWAY) is closed at once, and the next call dials a
// new one.
func TestGoAwayThenNewConnection(t *testing.T) {
	p := start(t, echo, func(s *http.Server) { s.IdleTimeout = 100 * time.Millisecond })
	if _, err := post(context.Background(), p.tr, "/"); err != nil {
		t.Fatal(err)
	}
	// The server sends its GOAWAY after 100ms; it closes its end at once
	// when we close ours, a second later otherwise.
	waitClosed(t, p, 700*time.Millisecond, "the connection stayed open 700ms after the server's idle timeout of 100ms")
	nextCall(t, p, "the call after the GOAWAY", 2)
}

// TestServerClosesMidCall checks that a connection the server drops fails
// its calls, and that the next call dials anew.
func TestServerClosesMidCall(t *testing.T) {
	var p *peer
	p = start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/drop" {
			p.srv.CloseClientConnections()
			<-r.Context().Done()
			return
		}
		echo(w, r)
	}), nil)
	if _, err := post(context.Background(), p.tr, "/drop"); err == nil {
		t.Fatal("a call on a dropped connection succeeded")
	}
	nextCall(t, p, "the call after", 2)
}

// TestCallEnds checks calls that end before their answer: at their
// context's deadline, or cancelled. The connection serves the next calls.
func TestCallEnds(t *testing.T) {
	var reset atomic.Int64
	p := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hang" {
			<-r.Context().Done() // the stream's RST_STREAM cancels it
			reset.Add(1)
			return
		}
		echo(w, r)
	}), nil)
	// The connection is made first: a TLS handshake under -race on a busy
	// machine may take the first case's 100 ms alone, and the hangs must
	// reach the server.
	if _, err := post(context.Background(), p.tr, "/", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		want error
	}{
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 100*time.Millisecond)
		}, context.DeadlineExceeded},
		{"cancel", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(100*time.Millisecond, cancel)
			return ctx, cancel
		}, context.Canceled},
		{"already done", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, cancel
		}, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := tc.ctx()
			defer cancel()
			start := time.Now()
			_, err := post(ctx, p.tr, "/hang", bytes.Repeat([]byte("x"), 200<<10))
			if !errors.Is(err, tc.want) {
				t.Errorf("error %v, want %v", err, tc.want)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("the call returned after %v", d)
			}
			if resp, err := post(context.Background(), p.tr, "/", []byte("{}")); err != nil || resp.Status != 200 {
				t.Errorf("the next call: %d, %v", resp.Status, err)
			}
		})
	}
	for deadline := time.Now().Add(2 * time.Second); reset.Load() < 2 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if n := reset.Load(); n != 2 {
		t.Errorf("the server saw %d calls cancelled, want 2", n)
	}
	if n := p.accepted.Load(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
}

// TestEarlyAnswer checks a call the server answers before reading its
// body: the call gets the answer, and the stream ends on both sides (a
// server of one stream per connection serves the next call on it).
func TestEarlyAnswer(t *testing.T) {
	p := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusRequestEntityTooLarge)
		w.Write([]byte("too large"))
	}), func(s *http.Server) { s.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: 1} })
	for range 3 {
		resp, err := post(context.Background(), p.tr, "/", make([]byte, 8<<20))
		if err != nil || resp.Status != http.StatusRequestEntityTooLarge || string(resp.Body) != "too large" {
			t.Fatalf("answer %d %q, %v", resp.Status, resp.Body, err)
		}
	}
	if n := p.accepted.Load(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
}

// TestHTTP1Server checks that a server without h2 fails the call with
// ErrNotH2, for its caller to use HTTP/1.1.
func TestHTTP1Server(t *testing.T) {
	cert, ca, err := webhookcert.Certificate()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(echo)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS() // EnableHTTP2 unset: HTTP/1.1 only
	defer srv.Close()
	tr := transport(srv.Listener.Addr().String(), ca, []string{"h2", "http/1.1"})
	if _, err := post(context.Background(), tr, "/"); !errors.Is(err, h2.ErrNotH2) {
		t.Errorf("error %v, want ErrNotH2", err)
	}
}

func TestIdleTimeout(t *testing.T) {
	p := start(t, echo, nil)
	p.tr.IdleTimeout = 50 * time.Millisecond
	for range 3 {
		if _, err := post(context.Background(), p.tr, "/"); err != nil {
			t.Fatal(err)
		}
	}
	waitClosed(t, p, 2*time.Second, "an idle connection stayed open past the idle timeout")
	nextCall(t, p, "the next call", 2)
}

// waitClosed waits up to within for the server's one connection to close,
// and fails with stayedOpen if it does not.
func waitClosed(t *testing.T, p *peer, within time.Duration, stayedOpen string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for p.closed.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if p.closed.Load() != 1 {
		t.Fatal(stayedOpen)
	}
}

// startHolding starts a peer that echoes, holding calls to /hold until
// release closes (each tells holding first), and makes one call to it.
func startHolding(t *testing.T, holding chan<- struct{}, release <-chan struct{}) *peer {
	p := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			holding <- struct{}{}
			<-release
		}
		echo(w, r)
	}), nil)
	if _, err := post(context.Background(), p.tr, "/"); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCloseIdleConnections(t *testing.T) {
	holding, release := make(chan struct{}, 1), make(chan struct{})
	p := startHolding(t, holding, release)
	p.tr.CloseIdleConnections()
	answered := make(chan error, 1)
	go func() {
		_, err := post(context.Background(), p.tr, "/hold")
		answered <- err
	}()
	<-holding
	// A busy connection is left alone.
	p.tr.CloseIdleConnections()
	close(release)
	if err := <-answered; err != nil {
		t.Fatalf("the call on the busy connection: %v", err)
	}
	if n := p.accepted.Load(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
	deadline := time.Now().Add(2 * time.Second)
	for p.closed.Load() != 1 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := p.closed.Load(); n != 1 {
		t.Errorf("%d connections closed, want the idle one", n)
	}
}

func TestDialErrors(t *testing.T) {
	p := start(t, echo, nil)
	_, otherCA, _ := webhookcert.Certificate()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := l.Addr().String()
	l.Close()
	for _, tc := range []struct {
		name string
		tr   *h2.Transport
		want string
	}{
		{"refused", transport(refused, otherCA, []string{"h2"}), "connection refused"},
		{"unknown CA", transport(p.srv.Listener.Addr().String(), otherCA, []string{"h2"}), "tls: failed to verify certificate: x509: certificate signed by unknown authority"},
	} {
		_, err := post(context.Background(), tc.tr, "/")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

// nextCall checks that a call now succeeds and that the peer has accepted
// conns connections in all.
func nextCall(t *testing.T, p *peer, what string, conns int64) {
	t.Helper()
	if resp, err := post(context.Background(), p.tr, "/"); err != nil || resp.Status != 200 {
		t.Fatalf("%s: %d, %v", what, resp.Status, err)
	}
	if n := p.accepted.Load(); n != conns {
		t.Errorf("%d connections, want %d", n, conns)
	}
}
