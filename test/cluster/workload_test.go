package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/crdserver/crdserver/test/cluster/history"
)

// Sizes of the load every fault runs under.
const (
	writers            = 3 // in turn through the replicas
	watchersPerReplica = 10
	loadKeys           = 20
	writePause         = 15 * time.Millisecond // between one writer's writes
	requestTimeout     = 5 * time.Second
)

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// workload writes ConfigMaps of one namespace through every replica and
// watches them from every replica, recording everything for the history
// checker, while a watch on etcd itself records the reference history.
type workload struct {
	t   *testing.T
	c   *Cluster
	ns  string
	dyn []dynamic.Interface // per replica

	mu      sync.Mutex
	h       history.History
	relists int

	stopWrites, stopWatches context.CancelFunc
	writers, watchers       sync.WaitGroup

	ref       refWatch
	paused    sync.RWMutex  // held for writing while watchers are paused
	pauseNow  chan struct{} // closed to end every watch for a pause; guarded by mu
	markerRV  int64         // set before stopWatches: watchers run until they reach it
	markerSet chan struct{}
}

// startWorkload creates namespace ns and starts the reference watch, the
// watchers and the writers.
func startWorkload(t *testing.T, c *Cluster, ns string) *workload {
	t.Helper()
	w := &workload{t: t, c: c, ns: ns, markerSet: make(chan struct{}), pauseNow: make(chan struct{})}
	for _, r := range c.Replicas {
		cfg, err := r.Config()
		if err != nil {
			t.Fatal(err)
		}
		w.dyn = append(w.dyn, dynamic.NewForConfigOrDie(cfg))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nsObj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}
	if _, err := w.dyn[0].Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(ctx, nsObj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", ns, err)
	}
	initial, err := w.ref.start(c, "/registry/configmaps/"+ns+"/")
	if err != nil {
		t.Fatal(err)
	}
	w.h.InitialRV = w.ref.from
	w.h.Initial = initial

	wctx, stopWatches := context.WithCancel(context.Background())
	w.stopWatches = stopWatches
	for i := range c.Replicas {
		for j := range watchersPerReplica {
			w.watchers.Go(func() { w.watcher(wctx, i, fmt.Sprintf("watcher %d/%d", i, j)) })
		}
	}
	wrctx, stopWrites := context.WithCancel(context.Background())
	w.stopWrites = stopWrites
	for i := range writers {
		replica := i % len(c.Replicas)
		w.writers.Go(func() { w.writer(wrctx, replica, fmt.Sprintf("w%d.%d", replica, i)) })
	}
	return w
}

func (w *workload) client(replica int) dynamic.ResourceInterface {
	return w.dyn[replica].Resource(configMaps).Namespace(w.ns)
}

func value(obj *unstructured.Unstructured) string {
	v, _, _ := unstructured.NestedString(obj.Object, "data", "v")
	return v
}

func rv(obj interface{ GetResourceVersion() string }) int64 {
	n, _ := strconv.ParseInt(obj.GetResourceVersion(), 10, 64)
	return n
}

// outcome classifies a write's error: a Status the server chose to send
// means the write did not happen; anything else (a timeout, a lost
// connection, a 5xx) leaves it unknown.
func outcome(err error) history.Outcome {
	switch {
	case err == nil:
		return history.Acknowledged
	case apierrors.IsConflict(err), apierrors.IsAlreadyExists(err), apierrors.IsNotFound(err), apierrors.IsInvalid(err):
		return history.Refused
	default:
		return history.Unknown
	}
}

// writer creates, updates and deletes the workload's keys through one
// replica until ctx ends, each write conditional on the revision it read.
func (w *workload) writer(ctx context.Context, replica int, name string) {
	c := w.client(replica)
	for seq := 0; ctx.Err() == nil; seq++ {
		time.Sleep(writePause)
		key := fmt.Sprintf("k%d", rand.IntN(loadKeys))
		val := fmt.Sprintf("%s-%d", name, seq)
		rctx, cancel := context.WithTimeout(ctx, requestTimeout)
		cur, err := c.Get(rctx, key, metav1.GetOptions{})
		var wr history.Write
		switch {
		case apierrors.IsNotFound(err):
			obj := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": key},
				"data":     map[string]any{"v": val},
			}}
			var got *unstructured.Unstructured
			got, err = c.Create(rctx, obj, metav1.CreateOptions{})
			wr = history.Write{Op: history.Create, Key: key, Value: val}
			if err == nil {
				wr.RV = rv(got)
			}
		case err != nil:
			cancel()
			continue // the read failed: nothing written
		case rand.IntN(4) == 0:
			pre := cur.GetResourceVersion()
			err = c.Delete(rctx, key, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &pre}})
			wr = history.Write{Op: history.Delete, Key: key, Precondition: rv(cur)}
		default:
			wr = history.Write{Op: history.Update, Key: key, Value: val, Precondition: rv(cur)}
			unstructured.SetNestedField(cur.Object, val, "data", "v")
			var got *unstructured.Unstructured
			got, err = c.Update(rctx, cur, metav1.UpdateOptions{})
			if err == nil {
				wr.RV = rv(got)
			}
		}
		cancel()
		if ctx.Err() != nil && err != nil {
			wr.Outcome = history.Unknown // cancelled by the end of the load
		} else {
			wr.Outcome = outcome(err)
		}
		w.mu.Lock()
		w.h.Writes = append(w.h.Writes, wr)
		w.mu.Unlock()
	}
}

// watcher lists and watches the workload's namespace through one replica
// as a reflector does: it resumes each watch from the last revision it saw,
// and relists after 410 Gone. It stops once it has seen the marker write
// after stopWatches, or when ctx ends without a marker.
func (w *workload) watcher(ctx context.Context, replica int, name string) {
	c := w.client(replica)
	var from int64
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			time.Sleep(100 * time.Millisecond)
		}
		if w.reachedMarker(ctx, from) {
			return
		}
		if from == 0 {
			l, err := w.list(ctx, c, name)
			if err != nil {
				continue
			}
			from = l
		}
		w.paused.RLock()
		w.paused.RUnlock()
		rec := history.Watch{Name: fmt.Sprintf("%s#%d", name, attempt), From: from}
		wi, err := c.Watch(ctx, metav1.ListOptions{
			ResourceVersion:     strconv.FormatInt(from, 10),
			AllowWatchBookmarks: true,
			TimeoutSeconds:      ptr(int64(5 + rand.IntN(10))),
		})
		if err != nil {
			if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				rec.Expired = true
				w.record(rec)
				from = 0
			}
			continue
		}
		from = w.consume(ctx, wi, &rec, from)
		wi.Stop()
		w.record(rec)
		if rec.Expired {
			from = 0
		}
	}
}

// consume reads one watch's events into rec until it ends, the marker is
// reached or the watchers are paused, and returns the revision to resume
// from.
func (w *workload) consume(ctx context.Context, wi watch.Interface, rec *history.Watch, from int64) int64 {
	marker := w.markerSet
	w.mu.Lock()
	pause := w.pauseNow
	w.mu.Unlock()
	for {
		if w.reachedMarker(ctx, from) {
			return from
		}
		var ev watch.Event
		var ok bool
		select {
		case <-marker:
			marker = nil // closed: from now on reachedMarker decides
			continue
		case <-pause:
			return from
		case ev, ok = <-wi.ResultChan():
		}
		if !ok {
			return from
		}
		switch ev.Type {
		case watch.Error:
			if err := apierrors.FromObject(ev.Object); apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				rec.Expired = true
			}
			return from
		case watch.Bookmark:
			obj := ev.Object.(*unstructured.Unstructured)
			from = rv(obj)
			rec.Events = append(rec.Events, history.Event{Type: watch.Bookmark, RV: from})
		default:
			obj := ev.Object.(*unstructured.Unstructured)
			from = rv(obj)
			rec.Events = append(rec.Events, history.Event{Type: ev.Type, Key: obj.GetName(), Value: value(obj), RV: from})
		}
	}
}

// reachedMarker reports whether the watchers are stopping and this one has
// seen everything up to the marker.
func (w *workload) reachedMarker(ctx context.Context, from int64) bool {
	select {
	case <-w.markerSet:
		return from >= w.markerRV || ctx.Err() != nil
	default:
		return ctx.Err() != nil
	}
}

// list records a list of the namespace and returns its revision.
func (w *workload) list(ctx context.Context, c dynamic.ResourceInterface, name string) (int64, error) {
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	l, err := c.List(rctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	rec := history.List{Name: name, RV: rv(l), Items: map[string]string{}}
	for _, it := range l.Items {
		rec.Items[it.GetName()] = value(&it)
	}
	w.mu.Lock()
	w.h.Lists = append(w.h.Lists, rec)
	w.relists++
	w.mu.Unlock()
	return rec.RV, nil
}

func (w *workload) record(rec history.Watch) {
	w.mu.Lock()
	w.h.Watches = append(w.h.Watches, rec)
	w.mu.Unlock()
}

// pauseWatchers ends every watch and holds the watchers back from opening
// the next until the returned function is called: they lag behind the
// writes, and resume from where they were.
func (w *workload) pauseWatchers() (resume func()) {
	w.paused.Lock()
	w.mu.Lock()
	close(w.pauseNow)
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		w.pauseNow = make(chan struct{})
		w.mu.Unlock()
		w.paused.Unlock()
	}
}

// stop ends the writes, writes a marker through replica 0 (retrying until
// one is acknowledged), waits until the reference and every watcher have
// seen it, and checks the history.
func (w *workload) stop() history.Report {
	t := w.t
	t.Helper()
	w.stopWrites()
	w.writers.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	marker := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "marker"},
		"data":     map[string]any{"v": "marker"},
	}}
	var markerRV int64
	for markerRV == 0 {
		rctx, rcancel := context.WithTimeout(ctx, requestTimeout)
		got, err := w.client(rand.IntN(len(w.dyn))).Create(rctx, marker, metav1.CreateOptions{})
		rcancel()
		switch {
		case err == nil:
			markerRV = rv(got)
		case ctx.Err() != nil:
			t.Fatalf("no replica acknowledged the marker write: %v", err)
		default:
			time.Sleep(100 * time.Millisecond)
		}
	}
	w.markerRV = markerRV
	close(w.markerSet)
	if err := w.ref.waitFor(ctx, markerRV); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { w.watchers.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Errorf("watchers did not reach the marker write at %d within 60s", markerRV)
	}
	w.stopWatches()
	<-done
	w.ref.stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.h.Reference = w.ref.events()
	return history.Check(w.h)
}

// refWatch is a watch on etcd itself: the reference history.
type refWatch struct {
	cli    *clientv3.Client
	prefix string
	from   int64
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	evs    []history.Event
	last   int64 // the reference is complete up to here: last event or progress notification
	err    error
}

// start reads what is under prefix, the state the reference starts from,
// and watches it from there.
func (r *refWatch) start(c *Cluster, prefix string) (initial map[string]string, err error) {
	cli, err := c.EtcdClient()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	resp, err := cli.Get(ctx, prefix, clientv3.WithPrefix())
	cancel()
	if err != nil {
		cli.Close()
		return nil, fmt.Errorf("etcd: %w", err)
	}
	// What the namespace holds already (the kube-root-ca.crt ConfigMap the
	// server puts in every namespace, if it is there yet) is where the
	// reference starts.
	initial = make(map[string]string, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		initial[strings.TrimPrefix(string(kv.Key), prefix)] = storedValue(kv.Value)
	}
	r.prefix, r.from = prefix, resp.Header.Revision
	r.watch(cli, r.from+1)
	return initial, nil
}

// reconnect resumes the reference on c's current etcd endpoints (an
// embedded etcd has a new port after each restart) from the revision up to
// which it is complete.
func (r *refWatch) reconnect(c *Cluster) error {
	r.stop()
	cli, err := c.EtcdClient()
	if err != nil {
		return err
	}
	r.mu.Lock()
	from := max(r.last, r.from) + 1
	r.mu.Unlock()
	r.watch(cli, from)
	return nil
}

// watch records the changes under the prefix from revision from on.
func (r *refWatch) watch(cli *clientv3.Client, from int64) {
	r.cli, r.done = cli, make(chan struct{})
	var ctx context.Context
	ctx, r.cancel = context.WithCancel(context.Background())
	wc := cli.Watch(ctx, r.prefix, clientv3.WithPrefix(), clientv3.WithRev(from), clientv3.WithPrevKV(), clientv3.WithProgressNotify())
	prefix := r.prefix
	go func() {
		defer close(r.done)
		for resp := range wc {
			r.mu.Lock()
			if err := resp.Err(); err != nil {
				r.err = err
				r.mu.Unlock()
				return
			}
			for _, ev := range resp.Events {
				he := history.Event{Key: strings.TrimPrefix(string(ev.Kv.Key), prefix), RV: ev.Kv.ModRevision}
				if ev.Type == clientv3.EventTypeDelete {
					he.Type = history.Deleted
					if ev.PrevKv != nil {
						he.Value = storedValue(ev.PrevKv.Value)
					}
				} else {
					he.Value = storedValue(ev.Kv.Value)
				}
				r.evs = append(r.evs, he)
				r.last = max(r.last, he.RV)
			}
			if resp.IsProgressNotify() {
				// Every change up to the header's revision was delivered.
				r.last = max(r.last, resp.Header.Revision)
			}
			r.mu.Unlock()
		}
	}()
}

// storedValue is data.v of a stored ConfigMap.
func storedValue(b []byte) string {
	var cm struct{ Data map[string]string }
	if json.Unmarshal(b, &cm) != nil {
		return "<undecodable>"
	}
	return cm.Data["v"]
}

// waitFor waits until the reference has seen revision rev.
func (r *refWatch) waitFor(ctx context.Context, rev int64) error {
	for {
		r.mu.Lock()
		last, err := r.last, r.err
		r.mu.Unlock()
		switch {
		case err != nil:
			return fmt.Errorf("reference watch on etcd: %w", err)
		case last >= rev:
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("reference watch on etcd did not reach %d (at %d): %w", rev, last, ctx.Err())
		case <-r.done:
			return errors.New("reference watch on etcd ended")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (r *refWatch) stop() {
	r.cancel()
	<-r.done
	r.cli.Close()
}

func (r *refWatch) events() []history.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]history.Event(nil), r.evs...)
}

func ptr[T any](v T) *T { return &v }
