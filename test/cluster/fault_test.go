package cluster

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// The fault tests take minutes, so they run only when asked:
//
//	CRDSERVER_CLUSTER_TESTS=1 go test -count=1 -v ./test/cluster
const envRun = "CRDSERVER_CLUSTER_TESTS"

// startCluster starts 3 etcd members and 3 replicas for the test.
func startCluster(t *testing.T) *Cluster {
	t.Helper()
	if os.Getenv(envRun) == "" {
		t.Skipf("set %s=1 to run the cluster fault tests (a few minutes)", envRun)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := Start(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, r := range c.Replicas {
				t.Logf("replica %d log tail:\n%s", r.Index, lastLines(r.Log(), 30))
			}
		}
		c.Close()
	})
	return c
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// fault is one thing that goes wrong, and its repair.
type fault struct {
	name string
	// inject breaks something and returns what repairs it, called hold
	// after the fault began; nil when nothing is to be repaired.
	inject func(t *testing.T, ctx context.Context, c *Cluster, w *workload) (repair func())
	hold   time.Duration
	// quorum: every replica and a quorum of etcd remain while the fault
	// lasts, so every replica must serve again before it is repaired.
	quorum bool
}

var faults = []fault{
	{name: "kill -9 a replica", hold: time.Second, // writes through it fail meanwhile
		inject: func(t *testing.T, ctx context.Context, c *Cluster, w *workload) func() {
			r := c.Replicas[1]
			r.Kill()
			return func() { must(t, r.Start(ctx)) }
		}},
	{name: "kill -9 an etcd follower", hold: 2 * time.Second, quorum: true, inject: killMember((*Cluster).Follower)},
	{name: "kill -9 the etcd leader", hold: 2 * time.Second, quorum: true, inject: killMember((*Cluster).Leader)},
	// Frozen, the leader's term runs out among the others, who elect a
	// new one; thawed, it finds itself a follower of a newer term. A
	// frozen member keeps its sockets open and answers nothing, as a
	// partitioned one does to its clients.
	{name: "etcd leader partitioned", hold: 8 * time.Second, quorum: true, inject: freezeMember((*Cluster).Leader)},
	{name: "etcd follower partitioned", hold: 8 * time.Second, quorum: true, inject: freezeMember((*Cluster).Follower)},
	{name: "compaction while watchers lag", inject: func(t *testing.T, ctx context.Context, c *Cluster, w *workload) func() {
		// Watchers stop while the writes go on; etcd's history is
		// compacted to now; replica 0 restarts, so its watch cache begins
		// after the compaction. Its watchers must get 410 and relist; the
		// others resume from their replicas' event windows.
		resume := w.pauseWatchers()
		defer resume()
		time.Sleep(2 * time.Second)
		cli, err := c.EtcdClient()
		must(t, err)
		defer cli.Close()
		resp, err := cli.Get(ctx, "compact-probe")
		must(t, err)
		must(t, w.ref.waitFor(ctx, resp.Header.Revision))
		_, err = cli.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical())
		must(t, err)
		r := c.Replicas[0]
		r.Kill()
		must(t, r.Start(ctx))
		return nil
	}},
	{name: "restart every replica at once", inject: func(t *testing.T, ctx context.Context, c *Cluster, w *workload) func() {
		must(t, c.RestartReplicas(ctx))
		return nil
	}},
}

// killMember kills the etcd member pick chooses; the repair starts it
// again.
func killMember(pick func(*Cluster, context.Context) (*Member, error)) func(*testing.T, context.Context, *Cluster, *workload) func() {
	return func(t *testing.T, ctx context.Context, c *Cluster, w *workload) func() {
		m, err := pick(c, ctx)
		must(t, err)
		m.Kill()
		return func() { must(t, m.Start(ctx)) }
	}
}

// freezeMember stops the etcd member pick chooses (SIGSTOP); the repair
// resumes it.
func freezeMember(pick func(*Cluster, context.Context) (*Member, error)) func(*testing.T, context.Context, *Cluster, *workload) func() {
	return func(t *testing.T, ctx context.Context, c *Cluster, w *workload) func() {
		m, err := pick(c, ctx)
		must(t, err)
		must(t, m.Pause())
		return func() { must(t, m.Resume()) }
	}
}

// TestEmbedded kills the single binary, crdserver with its embedded etcd,
// under the same load and checks the same history.
func TestEmbedded(t *testing.T) {
	if os.Getenv(envRun) == "" {
		t.Skipf("set %s=1 to run the cluster fault tests (a few minutes)", envRun)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := Start(ctx, Options{Embedded: true})
	must(t, err)
	defer c.Close()
	runFault(t, c, "load", fault{name: "kill -9 the single binary mid-write", inject: func(t *testing.T, ctx context.Context, c *Cluster, w *workload) func() {
		r := c.Replicas[0]
		r.Kill()
		must(t, r.Start(ctx))
		must(t, w.ref.reconnect(c))
		return nil
	}})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestCluster runs the convergence check, then each fault under load on
// one cluster, each fault with a namespace and a history of its own.
func TestCluster(t *testing.T) {
	c := startCluster(t)
	t.Run("convergence", func(t *testing.T) { testConvergence(t, c) })
	t.Run("late replica", func(t *testing.T) { testLateReplica(t, c) })
	t.Run("misconfigured replica", func(t *testing.T) { testMisconfiguredReplica(t, c) })
	t.Run("controllers act once", func(t *testing.T) { testControllersActOnce(t, c) })
	t.Run("migration and CRD finalization act once", func(t *testing.T) { testMigrationActsOnce(t, c) })
	for i, f := range faults {
		t.Run(f.name, func(t *testing.T) { runFault(t, c, fmt.Sprintf("load-%d", i), f) })
	}
	t.Run("etcd lost", func(t *testing.T) { testEtcdLost(t, c) })
}

// runFault runs the load for a few seconds, injects the fault, waits
// until every replica serves writes again, runs on a few seconds, and
// checks the history.
func runFault(t *testing.T, c *Cluster, ns string, f fault) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	w := startWorkload(t, c, ns)
	probe := startOutageProbe(t, c)
	time.Sleep(3 * time.Second)
	start := time.Now()
	repair := f.inject(t, ctx, c, w)
	during := "" // how soon every replica served while the fault lasted
	if f.quorum {
		during = fmt.Sprintf(" (%v while the fault lasted)", waitServing(t, ctx, c, start).Round(time.Millisecond))
	}
	time.Sleep(time.Until(start.Add(f.hold)))
	if repair != nil {
		repair()
	}
	recovered := waitServing(t, ctx, c, start)
	time.Sleep(3 * time.Second)
	outage := probe.done()
	rep := w.stop()
	lost := 0
	for _, v := range rep.Violations {
		if v.Rule == "lost" {
			lost++
		}
	}
	t.Logf("%s: writes acknowledged %d (unknown outcome %d), lost %d; watch events checked %d in %d watches (%d ended 410, %d lists); violations %d; every replica serving again %v after the fault began (the repair included)%s; longest write outage of a replica %v",
		f.name, rep.Acknowledged, rep.Unknown, lost, rep.WatchEvents, rep.Watches, rep.ExpiredWatches, rep.Lists, len(rep.Violations), recovered.Round(time.Millisecond), during, outage.Round(time.Millisecond))
	for i, v := range rep.Violations {
		if i == 20 {
			t.Errorf("... and %d more", len(rep.Violations)-i)
			break
		}
		t.Error(v)
	}
	if rep.Acknowledged == 0 || rep.WatchEvents == 0 {
		t.Errorf("nothing checked: %+v", rep)
	}
}

// waitServing waits until every replica acknowledges a write and returns
// the time since start.
func waitServing(t *testing.T, ctx context.Context, c *Cluster, start time.Time) time.Duration {
	t.Helper()
	for _, r := range c.Replicas {
		cfg, err := r.Config()
		must(t, err)
		probes := dynamic.NewForConfigOrDie(cfg).Resource(configMaps).Namespace("default")
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"generateName": "probe-"},
		}}
		for {
			rctx, cancel := context.WithTimeout(ctx, requestTimeout)
			_, err := probes.Create(rctx, obj, metav1.CreateOptions{})
			cancel()
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("replica %d does not serve writes: %v", r.Index, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return time.Since(start)
}

// outageProbe patches one ConfigMap per replica every 50ms and measures
// each replica's longest write outage: the longest time between two
// acknowledged patches with a failed one in between.
type outageProbe struct {
	stop    context.CancelFunc
	wg      sync.WaitGroup
	longest []time.Duration // per replica; read after done
}

func startOutageProbe(t *testing.T, c *Cluster) *outageProbe {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p := &outageProbe{stop: cancel, longest: make([]time.Duration, len(c.Replicas))}
	for i, r := range c.Replicas {
		cfg, err := r.Config()
		must(t, err)
		cm := dynamic.NewForConfigOrDie(cfg).Resource(configMaps).Namespace("default")
		name := fmt.Sprintf("outage-probe-%d", i)
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name},
		}}
		if _, err := cm.Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		p.wg.Go(func() {
			lastOK, failed := time.Now(), false
			for n := 0; ctx.Err() == nil; n++ {
				rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
				patch := fmt.Sprintf(`{"data":{"n":"%d"}}`, n)
				_, err := cm.Patch(rctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
				rcancel()
				switch {
				case ctx.Err() != nil:
				case err != nil:
					failed = true
				default:
					if failed {
						p.longest[i] = max(p.longest[i], time.Since(lastOK))
					}
					lastOK, failed = time.Now(), false
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
	return p
}

// done stops the probe and returns the longest outage of any replica.
func (p *outageProbe) done() time.Duration {
	p.stop()
	p.wg.Wait()
	return slices.Max(p.longest)
}
