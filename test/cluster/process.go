package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
)

// process is one child process: an etcd member or a crdserver replica.
// Its output goes to a file in the cluster directory (for a person to read)
// and the last lines are kept for error messages.
type process struct {
	cmd    *exec.Cmd
	out    *tail
	exited chan struct{} // closed when the process has exited
	err    error         // cmd.Wait's result; read after exited is closed
}

// startProcess starts bin with args, appending its output to logFile.
func startProcess(bin string, args []string, logFile string) (*process, error) {
	f, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	p := &process{out: &tail{}, exited: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	w := io.MultiWriter(f, p.out)
	p.cmd.Stdout, p.cmd.Stderr = w, w
	setProcAttr(p.cmd)
	if err := p.cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		f.Close()
		close(p.exited)
	}()
	return p, nil
}

// kill sends SIGKILL, as a crash would, and waits until the process is
// gone. It does nothing to a process that has exited.
func (p *process) kill() {
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return
	}
	<-p.exited
}

// running reports whether the process has not exited yet.
func (p *process) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// tail keeps the last 16 KiB written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

const tailBytes = 16 << 10

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailBytes {
		t.buf = t.buf[len(t.buf)-tailBytes:]
		if i := bytes.IndexByte(t.buf, '\n'); i >= 0 {
			t.buf = t.buf[i+1:]
		}
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// freePorts returns n distinct loopback ports that were free a moment ago.
// Another process may take one before the caller binds it; on loopback in
// a test that is rare enough to accept.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		_, port, _ := net.SplitHostPort(l.Addr().String())
		p, _ := strconv.Atoi(port)
		ports = append(ports, p)
	}
	return ports, nil
}
