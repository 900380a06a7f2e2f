// Package cluster starts crdserver as platform teams run it: an etcd
// cluster of several members and several crdserver replicas, each its own
// process on loopback, sharing one CA. Tests kill and restart any of them
// (kill -9, as a crash would) to check what survives; `go run
// ./test/cluster/cmd/devcluster` starts one for a person.
//
// etcd members are test/etcdserver processes (crdserver's embedded etcd,
// built from the Go module proxy), talking plain HTTP on loopback to each
// other and to the replicas: the replicas' own TLS (serving and client
// certificates from the shared CA) is what the cluster shares.
package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/crdserver/crdserver/internal/authn/satoken"
	"github.com/crdserver/crdserver/internal/certs"
	"github.com/crdserver/crdserver/internal/storage/etcdtest"
)

// Options say what to start. The zero value starts 3 members and 3
// replicas in a new temporary directory.
type Options struct {
	// Replicas and EtcdMembers count the processes (default 3 each).
	Replicas, EtcdMembers int
	// Dir holds every process's data and log (default: a new temporary
	// directory, removed by Close).
	Dir string
	// ReplicaArgs are extra crdserver flags for every replica.
	ReplicaArgs []string
	// CrdserverBinary is a crdserver built elsewhere (default: built from
	// this checkout once per process).
	CrdserverBinary string
	// StartTimeout bounds each start of a process until it serves
	// (default 60s: the machine may be loaded).
	StartTimeout time.Duration
	// Embedded starts crdserver as one binary with its embedded etcd:
	// a single replica and no etcd members (Replicas and EtcdMembers are
	// ignored). Endpoints then names the embedded etcd, which listens on
	// a new port after each restart.
	Embedded bool
}

// Cluster is a running etcd cluster with crdserver replicas on it.
type Cluster struct {
	Dir      string
	Etcd     []*Member
	Replicas []*Replica

	opts    Options
	tempDir bool // Dir was made by Start and is removed by Close
}

// Start builds what it needs, starts the etcd members, waits for them to
// form a cluster, then starts the replicas and waits until each serves
// /readyz. On error everything started is stopped again.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	opts.Replicas = cmp.Or(opts.Replicas, 3)
	opts.EtcdMembers = cmp.Or(opts.EtcdMembers, 3)
	if opts.Embedded {
		opts.Replicas, opts.EtcdMembers = 1, 0
	}
	opts.StartTimeout = cmp.Or(opts.StartTimeout, 60*time.Second)
	c := &Cluster{Dir: opts.Dir, opts: opts}
	if c.Dir == "" {
		if c.Dir, err = os.MkdirTemp("", "crdserver-cluster-"); err != nil {
			return nil, err
		}
		c.tempDir = true
	} else if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	var etcdBin string
	var wg sync.WaitGroup
	var etcdErr, buildErr error
	wg.Go(func() { etcdBin, etcdErr = etcdtest.Binary() })
	if c.opts.CrdserverBinary == "" {
		wg.Go(func() { c.opts.CrdserverBinary, buildErr = buildCrdserver() })
	}
	wg.Wait()
	if err := errors.Join(etcdErr, buildErr); err != nil {
		return nil, err
	}
	if !opts.Embedded {
		if err := c.startEtcd(ctx, etcdBin); err != nil {
			return nil, err
		}
	}
	if err := c.preparePKI(); err != nil {
		return nil, err
	}
	ports, err := freePorts(opts.Replicas)
	if err != nil {
		return nil, err
	}
	for i := range opts.Replicas {
		r := &Replica{
			Index: i,
			Dir:   filepath.Join(c.Dir, fmt.Sprintf("replica-%d", i)),
			URL:   fmt.Sprintf("https://127.0.0.1:%d", ports[i]),
			port:  ports[i],
			c:     c,
		}
		r.Kubeconfig = filepath.Join(r.Dir, certs.KubeconfigName)
		c.Replicas = append(c.Replicas, r)
	}
	if err := c.startReplicas(ctx, c.Replicas...); err != nil {
		return nil, err
	}
	return c, nil
}

// Close kills every process and removes Dir if Start made it.
func (c *Cluster) Close() {
	for _, r := range c.Replicas {
		r.Kill()
	}
	for _, m := range c.Etcd {
		m.Kill()
	}
	if c.tempDir {
		os.RemoveAll(c.Dir)
	}
}

// embeddedEtcd finds the embedded etcd's URL in crdserver's "crdserver
// serving" log line.
var embeddedEtcd = regexp.MustCompile(`crdserver serving.* etcd=(\S+)`)

// Endpoints are the client URLs of every etcd member, or of a running
// Embedded replica's etcd.
func (c *Cluster) Endpoints() []string {
	if c.opts.Embedded {
		m := embeddedEtcd.FindAllStringSubmatch(c.Replicas[0].Log(), -1)
		if len(m) == 0 {
			return nil
		}
		return strings.Split(strings.Trim(m[len(m)-1][1], `"`), ",")
	}
	var eps []string
	for _, m := range c.Etcd {
		eps = append(eps, m.ClientURL)
	}
	return eps
}

// EtcdClient connects to every member; the caller closes it.
func (c *Cluster) EtcdClient() (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second})
}

// Leader returns the member that leads the etcd cluster, asking the running
// members until one names a leader.
func (c *Cluster) Leader(ctx context.Context) (*Member, error) {
	cli, err := c.EtcdClient()
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	for {
		for _, m := range c.Etcd {
			if !m.Running() {
				continue
			}
			sctx, cancel := context.WithTimeout(ctx, time.Second)
			st, err := cli.Status(sctx, m.ClientURL)
			cancel()
			if err == nil && st.Leader != 0 && st.Leader == st.Header.MemberId {
				return m, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("no etcd leader: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Follower returns a running member that does not lead.
func (c *Cluster) Follower(ctx context.Context) (*Member, error) {
	l, err := c.Leader(ctx)
	if err != nil {
		return nil, err
	}
	for _, m := range c.Etcd {
		if m != l && m.Running() {
			return m, nil
		}
	}
	return nil, errors.New("no running follower")
}

// RestartReplicas kills every replica at once, starts them all again and
// waits until each serves.
func (c *Cluster) RestartReplicas(ctx context.Context) error {
	for _, r := range c.Replicas {
		r.Kill()
	}
	return c.startReplicas(ctx, c.Replicas...)
}

func (c *Cluster) startReplicas(ctx context.Context, rs ...*Replica) error {
	errs := make([]error, len(rs))
	var wg sync.WaitGroup
	for i, r := range rs {
		wg.Go(func() { errs[i] = r.Start(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// preparePKI makes the CA and the service account signing key once and
// copies them into every replica's data directory, where each replica
// issues its own serving and admin certificates from them: a kubeconfig of
// one replica is good for all, as behind a load balancer, and so are
// service account tokens.
func (c *Cluster) preparePKI() error {
	shared := filepath.Join(c.Dir, "pki")
	if _, err := certs.EnsureUnsynced(shared, nil); err != nil {
		return err
	}
	if _, err := satoken.LoadOrCreateKey(filepath.Join(shared, "service-account.key")); err != nil {
		return err
	}
	for i := range c.opts.Replicas {
		// A directory reused from an earlier run keeps its files.
		if err := certs.CopyShared(shared, filepath.Join(c.Dir, fmt.Sprintf("replica-%d", i), "pki")); err != nil {
			return err
		}
	}
	return nil
}

// CACertFile is the CA every replica's serving certificate chains to.
func (c *Cluster) CACertFile() string { return filepath.Join(c.Dir, "pki", certs.CACertName) }

// Replica is one crdserver process.
type Replica struct {
	Index      int
	Dir        string // --data-dir
	URL        string // https://127.0.0.1:PORT; the port stays across restarts
	Kubeconfig string // admin kubeconfig, written by the replica at start

	port int
	c    *Cluster
	mu   sync.Mutex
	proc *process
}

// Start starts the replica (again) on its data directory and port and
// waits until it answers /readyz with 200.
func (r *Replica) Start(ctx context.Context) error {
	args := []string{
		"--data-dir", r.Dir,
		"--bind-address", "127.0.0.1",
		"--secure-port", strconv.Itoa(r.port),
	}
	if !r.c.opts.Embedded {
		args = append(args, "--etcd-servers", strings.Join(r.c.Endpoints(), ","))
	}
	args = append(args, r.c.opts.ReplicaArgs...)
	p, err := startProcess(r.c.opts.CrdserverBinary, args, filepath.Join(r.c.Dir, fmt.Sprintf("replica-%d.log", r.Index)))
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.proc = p
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, r.c.opts.StartTimeout)
	defer cancel()
	if err := r.WaitReady(ctx); err != nil {
		return fmt.Errorf("replica %d: %w\n%s", r.Index, err, p.out)
	}
	return nil
}

// Kill kills the replica with SIGKILL and waits until it is gone.
func (r *Replica) Kill() {
	if p := r.process(); p != nil {
		p.kill()
	}
}

// Running reports whether the replica's process is alive.
func (r *Replica) Running() bool {
	p := r.process()
	return p != nil && p.running()
}

// Log is the end of the replica's output since its last start.
func (r *Replica) Log() string {
	if p := r.process(); p != nil {
		return p.out.String()
	}
	return ""
}

func (r *Replica) process() *process {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.proc
}

// Config is the admin rest.Config of the replica's kubeconfig, without
// client-side rate limiting.
func (r *Replica) Config() (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", r.Kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS = -1
	return cfg, nil
}

// WaitReady polls /readyz until it answers 200, the process exits, or ctx
// ends.
func (r *Replica) WaitReady(ctx context.Context) error {
	p := r.process()
	var last error
	for {
		if last = r.ready(ctx); last == nil {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("exited (%v) before it was ready", p.err)
		case <-ctx.Done():
			return fmt.Errorf("not ready: %w (last: %v)", ctx.Err(), last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (r *Replica) ready(ctx context.Context) error {
	cfg, err := r.Config()
	if err != nil {
		return err // no kubeconfig yet
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.URL+"/readyz", nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/readyz: %d %s", resp.StatusCode, body)
	}
	return nil
}

// Member is one etcd process.
type Member struct {
	Name      string
	ClientURL string
	PeerURL   string
	Dir       string

	bin   string
	args  []string
	log   string
	limit time.Duration
	mu    sync.Mutex
	proc  *process
}

// startEtcd starts every member at once (a new cluster needs a quorum
// before any member is ready) and waits until all are ready.
func (c *Cluster) startEtcd(ctx context.Context, bin string) error {
	n := c.opts.EtcdMembers
	ports, err := freePorts(2 * n)
	if err != nil {
		return err
	}
	var initial []string
	for i := range n {
		m := &Member{
			Name:      fmt.Sprintf("etcd-%d", i),
			ClientURL: fmt.Sprintf("http://127.0.0.1:%d", ports[2*i]),
			PeerURL:   fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1]),
			Dir:       filepath.Join(c.Dir, fmt.Sprintf("etcd-%d", i)),
			bin:       bin,
			log:       filepath.Join(c.Dir, fmt.Sprintf("etcd-%d.log", i)),
			limit:     c.opts.StartTimeout,
		}
		initial = append(initial, m.Name+"="+m.PeerURL)
		c.Etcd = append(c.Etcd, m)
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, m := range c.Etcd {
		m.args = []string{
			"--data-dir", m.Dir,
			"--name", m.Name,
			"--listen-client", strings.TrimPrefix(m.ClientURL, "http://"),
			"--listen-peer", strings.TrimPrefix(m.PeerURL, "http://"),
			"--initial-cluster", strings.Join(initial, ","),
			// crdserver's watch caches ask for progress when they need it;
			// a second's notifications keep idle watches' bookmarks fresh.
			"--watch-progress-notify-interval", "1s",
		}
		wg.Go(func() { errs[i] = m.Start(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Start starts the member (again) on its data directory and waits until it
// serves: it has joined a cluster with a leader.
func (m *Member) Start(ctx context.Context) error {
	portFile := filepath.Join(filepath.Dir(m.Dir), m.Name+".url")
	os.Remove(portFile)
	p, err := startProcess(m.bin, append(m.args, "--port-file", portFile), m.log)
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.proc = p
	m.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, m.limit)
	defer cancel()
	for {
		if _, err := os.Stat(portFile); err == nil {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited before it was ready (%v)\n%s", m.Name, p.err, p.out)
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %w\n%s", m.Name, ctx.Err(), p.out)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Kill kills the member with SIGKILL and waits until it is gone.
func (m *Member) Kill() {
	m.mu.Lock()
	p := m.proc
	m.mu.Unlock()
	if p != nil {
		p.kill()
	}
}

// Pause freezes the member (SIGSTOP) until Resume: its peers and clients
// reach its sockets but get no answer, as across a network partition.
func (m *Member) Pause() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.proc.pause()
}

// Resume lets a paused member run again.
func (m *Member) Resume() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.proc.resume()
}

// Running reports whether the member's process is alive.
func (m *Member) Running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.proc != nil && m.proc.running()
}

var crdserverBuild struct {
	once sync.Once
	path string
	err  error
}

// buildCrdserver builds cmd/crdserver once per process, to a fixed path
// per checkout.
func buildCrdserver() (string, error) {
	crdserverBuild.once.Do(func() {
		crdserverBuild.path, crdserverBuild.err = etcdtest.BuildPackage("./cmd/crdserver", "crdserver")
	})
	return crdserverBuild.path, crdserverBuild.err
}
