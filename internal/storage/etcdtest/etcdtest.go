// Package etcdtest starts etcd servers for tests: in the test process
// (StartEmbedded) or as a child process (StartExternal, StartProcess) built
// from test/etcdserver, which gives tests an etcd they can kill without
// downloading release binaries.
package etcdtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crdserver/crdserver/internal/storage/embedded"
)

// StartEmbedded starts an etcd in this process on a temporary directory and
// returns its client URLs. It stops at the end of the test.
func StartEmbedded(t testing.TB) []string {
	t.Helper()
	s, err := embedded.Start(context.Background(), embedded.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.Endpoints()
}

// StartExternal starts an etcd child process on a temporary directory and
// returns its client URLs. It is killed at the end of the test.
func StartExternal(t testing.TB) []string {
	t.Helper()
	return StartProcess(t, t.TempDir()).Endpoints
}

// Process is an etcd child process.
type Process struct {
	Endpoints []string
	cmd       *exec.Cmd
	stderr    *syncBuffer
	done      chan struct{} // closed when the process has exited
}

// StartProcess starts an etcd child process on dataDir, which may hold the
// data of an earlier process, and waits until it serves requests. The
// process is killed at the end of the test if it is still running.
func StartProcess(t testing.TB, dataDir string) *Process {
	t.Helper()
	bin := binary(t)
	portFile := filepath.Join(t.TempDir(), "url")
	p := &Process{stderr: &syncBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(bin, "--data-dir", dataDir, "--port-file", portFile)
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(p.Kill)

	deadline := time.After(30 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if b, err := os.ReadFile(portFile); err == nil {
			p.Endpoints = []string{strings.TrimSpace(string(b))}
			return p
		}
		select {
		case <-tick.C:
		case <-p.done:
			t.Fatalf("etcdserver exited before it was ready: %v\n%s", p.cmd.ProcessState, p.stderr)
		case <-deadline:
			p.Kill()
			t.Fatalf("etcdserver not ready after 30s\n%s", p.stderr)
		}
	}
}

// Kill kills the process with SIGKILL, as a crash would, and waits for it
// to exit.
func (p *Process) Kill() {
	p.cmd.Process.Kill()
	<-p.done
}

var build struct {
	once sync.Once
	path string
	err  error
}

// binary is Binary for a test: it fails the test if the build fails.
func binary(t testing.TB) string {
	t.Helper()
	path, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// Binary builds test/etcdserver once per process and returns its path. It
// goes to a fixed path per module checkout, replaced atomically, so
// repeated runs leave one file behind rather than one per run.
func Binary() (string, error) {
	build.once.Do(func() { build.path, build.err = BuildPackage("./test/etcdserver", "etcdserver") })
	return build.path, build.err
}

// BuildPackage builds the main package pkg (a path relative to the
// module root, "./cmd/crdserver") of the crdserver checkout the go command
// finds from the working directory into a fixed path per checkout and
// name, replaced atomically, and returns that path.
func BuildPackage(pkg, name string) (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("locating the module: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("not inside the crdserver module")
	}
	root := filepath.Dir(gomod)
	sum := sha256.Sum256([]byte(root))
	dir := filepath.Join(os.TempDir(), "crdserver-etcdtest")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, name+"-"+hex.EncodeToString(sum[:6]))
	tmp, err := os.CreateTemp(dir, "."+name+"-*")
	if err != nil {
		return "", err
	}
	tmp.Close()
	cmd := exec.Command("go", "build", "-o", tmp.Name(), pkg)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("building %s: %w\n%s", pkg, err, out)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	return path, nil
}

// syncBuffer collects the child's stderr for failure messages.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
