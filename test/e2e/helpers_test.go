package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/crdserver/crdserver/test/kubectlbin"
)

// Time limits. Generous enough for a loaded 2-core machine, short enough that
// a hung server fails the test instead of the whole run.
const (
	startTimeout = 60 * time.Second // process start until /readyz is 200
	stopTimeout  = 10 * time.Second // SIGTERM until the process has exited
	kubectlLimit = 60 * time.Second // one kubectl invocation
)

// server is one running crdserver process.
type server struct {
	Dir        string // --data-dir
	URL        string // https://127.0.0.1:PORT, from the log line
	Kubeconfig string // admin kubeconfig path, from the log line

	// Config is the admin rest.Config from Kubeconfig, with client-side rate
	// limiting off so load tests measure the server.
	Config  *rest.Config
	Client  kubernetes.Interface
	Dynamic dynamic.Interface

	cmd      *exec.Cmd
	log      *logWriter
	cacheDir string // kubectl's --cache-dir, private to this server

	exited     chan struct{} // closed when the process has exited
	exitErr    error         // cmd.Wait's result; read after exited is closed
	terminated bool          // SIGTERM sent
}

// servingLine matches the log line that announces the URL and kubeconfig;
// slog's text handler quotes values only when they need it.
var servingLine = regexp.MustCompile(`crdserver serving.* url=("[^"]*"|\S+).* kubeconfig=("[^"]*"|\S+)`)

// servingAddrs reads the URL and kubeconfig from the serving line in
// either log format (--log-format=json writes one JSON object a line).
func servingAddrs(line string) ([]string, bool) {
	if m := servingLine.FindStringSubmatch(line); m != nil {
		return m[1:], true
	}
	var j struct{ Msg, URL, Kubeconfig string }
	if strings.HasPrefix(line, "{") && json.Unmarshal([]byte(line), &j) == nil && j.Msg == "crdserver serving" {
		return []string{strconv.Quote(j.URL), strconv.Quote(j.Kubeconfig)}, true
	}
	return nil, false
}

// startServer starts crdserver on dir (a fresh or an existing data
// directory), waits until /readyz answers 200 with the admin credentials, and
// registers a cleanup that stops it with SIGTERM and checks that it exits 0
// within stopTimeout.
func startServer(t *testing.T, dir string) *server {
	t.Helper()
	return startServerArgs(t, dir)
}

// startServerArgs is startServer with more flags for the server.
func startServerArgs(t *testing.T, dir string, args ...string) *server {
	t.Helper()
	s := &server{Dir: dir, exited: make(chan struct{}), cacheDir: t.TempDir()}
	served := make(chan []string, 1)
	s.log = &logWriter{onLine: func(line string) {
		if m, ok := servingAddrs(line); ok {
			select {
			case served <- m:
			default:
			}
		}
	}}
	s.cmd = exec.Command(binary, append([]string{"--data-dir", dir, "--secure-port", "0", "--bind-address", "127.0.0.1"}, args...)...)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	setProcAttr(s.cmd)
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", binary, err)
	}
	go func() {
		s.exitErr = s.cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		s.stopIfRunning(t)
		if t.Failed() {
			t.Logf("crdserver log (data dir %s):\n%s", dir, s.log.tail(80))
		}
	})

	select {
	case m := <-served:
		s.URL, s.Kubeconfig = unquote(m[0]), unquote(m[1])
	case <-s.exited:
		t.Fatalf("crdserver exited before serving (%v); log:\n%s", s.exitErr, s.log.tail(80))
	case <-time.After(startTimeout):
		t.Fatalf("crdserver did not log %q within %v; log:\n%s", "crdserver serving", startTimeout, s.log.tail(80))
	}
	if want := filepath.Join(dir, "admin.kubeconfig"); s.Kubeconfig != want {
		t.Errorf("kubeconfig logged as %q, want %q", s.Kubeconfig, want)
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		t.Fatalf("loading %s: %v", s.Kubeconfig, err)
	}
	if cfg.Host != s.URL {
		t.Errorf("kubeconfig server is %q, the log says %q", cfg.Host, s.URL)
	}
	cfg.QPS = -1 // no client-side rate limiting
	s.Config = cfg
	if s.Client, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatalf("typed client: %v", err)
	}
	if s.Dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		t.Fatalf("dynamic client: %v", err)
	}
	s.waitReady(t)
	return s
}

// waitReady polls /readyz with the admin client until it answers 200.
func (s *server) waitReady(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(startTimeout)
	var last string
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		var code int
		body, err := s.Client.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).StatusCode(&code).Raw()
		cancel()
		if err == nil && code == 200 {
			return
		}
		last = fmt.Sprintf("code %d, err %v, body %q", code, err, body)
		select {
		case <-s.exited:
			t.Fatalf("crdserver exited while waiting for /readyz (%v); log:\n%s", s.exitErr, s.log.tail(80))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz not 200 within %v; last answer: %s", startTimeout, last)
		}
	}
}

// stop sends SIGTERM and fails the test unless the process exits with
// status 0 within stopTimeout. It returns how long the exit took.
func (s *server) stop(t *testing.T) time.Duration {
	t.Helper()
	start := time.Now()
	s.terminate(t)
	s.waitExit(t, stopTimeout)
	return time.Since(start)
}

// terminate sends SIGTERM once. A second SIGTERM would kill the server
// without a graceful shutdown, so callers pair it with waitExit, not stop.
func (s *server) terminate(t *testing.T) {
	t.Helper()
	s.terminated = true
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Errorf("SIGTERM: %v", err)
	}
}

// waitExit fails the test unless the process exits with status 0 within
// limit; past it the process is killed.
func (s *server) waitExit(t *testing.T, limit time.Duration) {
	t.Helper()
	select {
	case <-s.exited:
	case <-time.After(limit):
		t.Errorf("crdserver did not exit within %v of SIGTERM; killing it", limit)
		s.cmd.Process.Kill()
		<-s.exited
		return
	}
	if s.exitErr != nil {
		t.Errorf("crdserver exited with %v after SIGTERM, want exit status 0", s.exitErr)
	}
}

// kill sends SIGKILL (kill -9) and waits for the process to be gone.
func (s *server) kill(t *testing.T) {
	t.Helper()
	if err := s.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Errorf("SIGKILL: %v", err)
	}
	<-s.exited
}

func (s *server) stopIfRunning(t *testing.T) {
	select {
	case <-s.exited:
	default:
		if !s.terminated {
			s.terminate(t)
		}
		s.waitExit(t, stopTimeout)
	}
}

// caPool is the CA bundle of the server's kubeconfig.
func (s *server) caPool(t *testing.T) *x509.CertPool {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(s.Config.CAData) {
		t.Fatalf("kubeconfig %s holds no CA certificate", s.Kubeconfig)
	}
	return pool
}

// servedCertificate is the leaf certificate the server presents, checked
// against the kubeconfig's CA.
func (s *server) servedCertificate(t *testing.T) *x509.Certificate {
	t.Helper()
	host := strings.TrimPrefix(s.URL, "https://")
	conn, err := tls.Dial("tcp", host, &tls.Config{RootCAs: s.caPool(t), ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatalf("TLS dial %s with the kubeconfig's CA: %v", host, err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0]
}

// kubectl runs the real kubectl against srv and returns its standard output;
// it fails the test if kubectl fails.
func kubectl(t *testing.T, srv *server, args ...string) string {
	t.Helper()
	stdout, stderr, err := kubectlResult(srv, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout, stderr)
	}
	return stdout
}

// kubectlResult runs kubectl against srv and returns what it printed.
func kubectlResult(srv *server, args ...string) (stdout, stderr string, err error) {
	// The first call may build kubectl, which takes minutes: not within
	// one invocation's time limit.
	if _, err := kubectlbin.Find(); err != nil {
		return "", "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), kubectlLimit)
	defer cancel()
	cmd, err := kubectlCommand(ctx, srv, args...)
	if err != nil {
		return "", "", err
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// kubectlCommand is kubectl with srv's kubeconfig and a private discovery
// cache, and no KUBECONFIG from the environment. The kubectl is $KUBECTL,
// else kubectl on PATH, else upstream's kubectl built from the Go module
// proxy (test/kubectlbin); the error is that build's.
func kubectlCommand(ctx context.Context, srv *server, args ...string) (*exec.Cmd, error) {
	path, err := kubectlbin.Find()
	if err != nil {
		return nil, err
	}
	full := append([]string{"--kubeconfig", srv.Kubeconfig, "--cache-dir", srv.cacheDir}, args...)
	cmd := exec.CommandContext(ctx, path, full...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KUBECONFIG=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	return cmd, nil
}

// lineStream runs a long-lived kubectl (such as get -w) and delivers its
// standard output line by line. The process is killed at cleanup.
type lineStream struct {
	lines  chan string
	stderr *bytes.Buffer
}

func kubectlStream(t *testing.T, srv *server, args ...string) *lineStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd, err := kubectlCommand(ctx, srv, args...)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	ls := &lineStream{lines: make(chan string, 100), stderr: new(bytes.Buffer)}
	cmd.Stderr = ls.stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
	}
	go func() {
		defer close(ls.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			ls.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		cancel()
		cmd.Wait()
	})
	return ls
}

// waitLine returns the first line for which match is true, failing the test
// if none comes within timeout. Lines before it are returned too.
func (ls *lineStream) waitLine(t *testing.T, timeout time.Duration, what string, match func(string) bool) (line string, before []string) {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case l, ok := <-ls.lines:
			if !ok {
				t.Fatalf("kubectl ended before %s; output:\n%s\nstderr:\n%s", what, strings.Join(before, "\n"), ls.stderr)
			}
			if match(l) {
				return l, before
			}
			before = append(before, l)
		case <-timer.C:
			t.Fatalf("no %s within %v; output so far:\n%s", what, timeout, strings.Join(before, "\n"))
		}
	}
}

// waitServiceAccount waits until the server's controller has made ns's
// default service account, which a pod created there needs.
func waitServiceAccount(t *testing.T, srv *server, ns string) {
	t.Helper()
	waitFor(t, 30*time.Second, "the default service account", func() (bool, error) {
		_, _, err := kubectlResult(srv, "get", "serviceaccount", "default", "-n", ns)
		return err == nil, nil
	})
}

// waitFor polls cond until it reports true, failing the test after timeout.
// It is for state that only another process changes (the server's
// controllers), where no clock can be injected.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var lastErr error
	for {
		ok, err := cond()
		if ok {
			return
		}
		lastErr = err
		if time.Now().After(deadline) {
			t.Fatalf("%s: not true within %v (last error: %v)", what, timeout, lastErr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// testContext is a context that ends with the test or after limit.
func testContext(t *testing.T, limit time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	t.Cleanup(cancel)
	return ctx
}

// getWith GETs url with the header fields given and returns the answer
// (its body closed) and its body as sent.
func getWith(t *testing.T, hc *http.Client, url string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp, body
}

func ptr[T any](v T) *T { return &v }

func decodeJSON(data []byte, v any) error { return json.Unmarshal(data, v) }

func unquote(s string) string {
	if u, err := strconv.Unquote(s); err == nil {
		return u
	}
	return s
}

// logWriter collects a process's output and calls onLine for every complete
// line. It is safe for the concurrent writes of stdout and stderr.
type logWriter struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	partial []byte
	onLine  func(string)
}

var _ io.Writer = (*logWriter)(nil)

func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		w.onLine(string(w.partial[:i]))
		w.partial = w.partial[i+1:]
	}
	return len(p), nil
}

// tail is the last n lines written.
func (w *logWriter) tail(n int) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	lines := strings.Split(strings.TrimRight(w.buf.String(), "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("... (%d lines before)", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// lines is every complete line written so far.
func (w *logWriter) lines() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.buf.String()
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return strings.Split(s[:i], "\n")
	}
	return nil
}
