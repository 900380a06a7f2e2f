package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

const (
	startTimeout = 2 * time.Minute  // start until /readyz answers 200
	stopTimeout  = 30 * time.Second // SIGTERM until exit, then SIGKILL
)

// process is a server (or its etcd) the runner started.
type process struct {
	name       string
	cmd        *exec.Cmd
	url        string
	kubeconfig string
	logPath    string
	exited     chan struct{} // closed once the process has exited
	deps       []*process    // stopped after this one (its etcd)
}

// start runs bin with args, writing its output to logPath. onLine sees
// every line of output, in order, until the process exits.
func start(name, bin string, args []string, logPath string, onLine func(string)) (*process, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	p := &process{name: name, logPath: logPath, exited: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = pw, pw
	// Its own process group: a Ctrl-C of the runner reaches the runner,
	// which stops the server in order, not the server directly.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			fmt.Fprintln(log, sc.Text())
			if onLine != nil {
				onLine(sc.Text())
			}
		}
		io.Copy(log, pr) // a line longer than the buffer: keep draining
		log.Close()
	}()
	go func() {
		p.cmd.Wait()
		pw.Close()
		close(p.exited)
	}()
	return p, nil
}

// stop sends SIGTERM, waits, and kills the process if it does not exit in
// time; then it stops the processes this one depends on.
func (p *process) stop() {
	if p == nil {
		return
	}
	select {
	case <-p.exited:
	default:
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(stopTimeout):
			fmt.Fprintf(os.Stderr, "%s did not exit within %s of SIGTERM; killing it\n", p.name, stopTimeout)
			p.cmd.Process.Kill()
			<-p.exited
		}
	}
	for _, d := range p.deps {
		d.stop()
	}
}

// servingLine is crdserver's announcement of its URL and kubeconfig (see
// test/e2e); slog's text handler quotes values only when they need it.
var servingLine = regexp.MustCompile(`crdserver serving.* url=("[^"]*"|\S+).* kubeconfig=("[^"]*"|\S+)`)

// startCrdserver builds crdserver from the checkout and starts it on a
// fresh data directory and a free port.
func startCrdserver(ctx context.Context, paths paths, dir string) (*process, error) {
	bin := filepath.Join(dir, "crdserver")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/crdserver")
	cmd.Dir = paths.root
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build ./cmd/crdserver: %w\n%s", err, out)
	}
	served := make(chan [2]string, 1)
	p, err := start("crdserver", bin, []string{
		"--data-dir", filepath.Join(dir, "data"),
		"--secure-port", "0",
		"--bind-address", "127.0.0.1",
	}, filepath.Join(dir, "crdserver.log"), func(line string) {
		if m := servingLine.FindStringSubmatch(line); m != nil {
			select {
			case served <- [2]string{unquote(m[1]), unquote(m[2])}:
			default:
			}
		}
	})
	if err != nil {
		return nil, err
	}
	select {
	case m := <-served:
		p.url, p.kubeconfig = m[0], m[1]
	case <-p.exited:
		return nil, fmt.Errorf("crdserver exited before serving; see %s", p.logPath)
	case <-time.After(startTimeout):
		p.stop()
		return nil, fmt.Errorf("crdserver did not log %q within %s; see %s", "crdserver serving", startTimeout, p.logPath)
	case <-ctx.Done():
		p.stop()
		return nil, ctx.Err()
	}
	if err := waitReady(ctx, p); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

// crashers are specs that end the whole test binary, not only themselves,
// when the server lacks a resource: they fail in a goroutine without
// Ginkgo's recovery. Each is skipped, with a note, where the resource is
// not served.
var crashers = []struct {
	groupVersion, resource string
	specs                  string // Ginkgo regular expression
}{
	// chunking.go and table_conversion.go create their pod templates in
	// parallel goroutines.
	{"v1", "podtemplates", `Servers with support for API chunking`},
	{"v1", "podtemplates", `Servers with support for Table transformation should return chunks of table results`},
}

// skipCrashers adds to skip the crashers the server would set off.
func skipCrashers(skip string, p *process) (string, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", p.kubeconfig)
	if err != nil {
		return "", err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	for _, c := range crashers {
		served := false
		list, err := client.Discovery().ServerResourcesForGroupVersion(c.groupVersion)
		if err != nil && !apierrors.IsNotFound(err) {
			return "", fmt.Errorf("discovery of %s: %w", c.groupVersion, err)
		}
		if list != nil {
			for _, r := range list.APIResources {
				served = served || r.Name == c.resource
			}
		}
		if !served {
			fmt.Printf("NOTE: %s does not serve %s %s; skipping %q, whose failure would end the whole suite\n", p.name, c.groupVersion, c.resource, c.specs)
			skip += "|" + c.specs
		}
	}
	return skip, nil
}

// waitReady polls /readyz with the kubeconfig's credentials until it
// answers 200.
func waitReady(ctx context.Context, p *process) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", p.kubeconfig)
	if err != nil {
		return fmt.Errorf("loading %s: %w", p.kubeconfig, err)
	}
	clientset, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	client := clientset.Discovery().RESTClient()
	deadline := time.Now().Add(startTimeout)
	var last error
	for time.Now().Before(deadline) {
		var code int
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := client.Get().AbsPath("/readyz").Do(rctx).StatusCode(&code).Error()
		cancel()
		if err == nil && code == 200 {
			return nil
		}
		last = fmt.Errorf("code %d: %v", code, err)
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited while starting; see %s", p.name, p.logPath)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return errors.Join(fmt.Errorf("%s: /readyz not 200 within %s; see %s", p.name, startTimeout, p.logPath), last)
}

func unquote(s string) string {
	if u, err := strconv.Unquote(s); err == nil {
		return u
	}
	return s
}
