package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
)

// errNoObjects is what a workload reports when it has nothing to work on,
// typically because every create failed.
var errNoObjects = errors.New("no objects to work on")

// bench is one run against one server: the resource under load, the objects
// this run created, and what to undo afterwards.
type bench struct {
	cfg    Config
	log    *slog.Logger
	client dynamic.Interface
	runID  string

	namespace string // "" for namespaces
	res       dynamic.ResourceInterface
	// meta is res through client-go's metadata client, for the watchers
	// of Config.ClientGo with Config.WatchAs metadata-protobuf; nil
	// otherwise.
	meta metadata.ResourceInterface
	// selector limits lists and watches of a cluster-scoped resource to
	// this run's objects; namespaced widgets live in a namespace of their own.
	selector string
	template *unstructured.Unstructured // padded to size; copies get a name
	nextName atomic.Int64
	// updateSeq numbers updates across the whole run. Every update writes a
	// new number, so none is a no-op (unless Config.Unchanged): servers
	// skip writing an unchanged object, and the watch workload would wait
	// for an event that never comes.
	updateSeq atomic.Int64

	pop population

	// bodies is set unless Config.ClientGo: requests then go through the
	// raw client (raw.go).
	bodies *rawBodies

	// http and host serve list-raw, which reads lists without decoding
	// them, so that it measures the server rather than the client.
	http *http.Client
	host string
	// hosts are host and Config.Servers; nextHost turns over them.
	hosts    []string
	hostTurn atomic.Uint64
	// restCfg is the configuration requests are sent with; admin is the
	// kubeconfig's, which grants other users their rights (identity.go).
	restCfg, admin *rest.Config
	// adminHTTP is admin's HTTP client, made by settleServer; unsettled
	// is set once the server refused it.
	adminHTTP *http.Client
	unsettled bool

	// hook is the conversion webhook of Config.Conversion "webhook".
	hook *benchWebhook

	installedCRD     bool
	createdNamespace bool
	etcdCleanup      func(context.Context) error // nil unless etcd keys were written
}

// population is the set of objects this run created, in creation order.
type population struct {
	mu    sync.RWMutex // guards slots (not the slots' contents)
	slots []*slot
}

// slot is one created object. mu is held across each update or delete of it,
// so that this process never conflicts with itself: workers that land on the
// same object (possible when there are fewer objects than workers) take
// turns instead of failing with 409.
type slot struct {
	name    string
	mu      sync.Mutex
	obj     *unstructured.Unstructured // latest version we wrote
	rv      string                     // resourceVersion of a raw create while obj is nil
	deleted bool
}

// locked returns the slot of object i mod n, locked, unless its object
// was deleted.
func (p *population) locked(i int) (*slot, error) {
	s := p.at(i % p.len())
	s.mu.Lock()
	if s.deleted {
		s.mu.Unlock()
		return nil, fmt.Errorf("object %s was deleted", s.name)
	}
	return s, nil
}

// own makes s hold its object: the raw client's creates keep only the
// name and resourceVersion, and the template is the rest.
func (b *bench) own(s *slot) {
	if s.obj == nil {
		s.obj = b.template.DeepCopy()
		s.obj.SetName(s.name)
		s.obj.SetResourceVersion(s.rv)
	}
}

// wrote records the resourceVersion of a raw write of s's object.
func (s *slot) wrote(rv string) {
	if s.obj != nil {
		s.obj.SetResourceVersion(rv)
	}
	s.rv = rv
}

func (p *population) add(obj *unstructured.Unstructured) {
	p.mu.Lock()
	p.slots = append(p.slots, &slot{name: obj.GetName(), obj: obj})
	p.mu.Unlock()
}

// addRaw adds an object the raw client created; its slot's obj is made
// from the template on its first update.
func (p *population) addRaw(name, resourceVersion string) {
	p.mu.Lock()
	p.slots = append(p.slots, &slot{name: name, rv: resourceVersion})
	p.mu.Unlock()
}

func (p *population) len() int {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return len(p.slots)
}

func (p *population) at(i int) *slot {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.slots[i]
}

func newBench(cfg Config, client dynamic.Interface) (*bench, error) {
	b := &bench{cfg: cfg, log: cfg.Logger, client: client, runID: newRunID()}
	switch cfg.Resource {
	case ResourceNamespaces:
		b.res = client.Resource(namespacesGVR)
		b.selector = LabelRun + "=" + b.runID
		b.template = newNamespace(b.objectName(0), b.runID, 0)
	case ResourceWidgets, ResourceCELWidgets:
		b.namespace = cfg.Namespace
		if b.namespace == "" {
			b.namespace = cfg.Prefix + "-" + b.runID
		}
		b.res = client.Resource(b.widgetsGVR()).Namespace(b.namespace)
		b.template = newWidget(b.objectName(0), b.namespace, b.runID, 0)
		if cfg.Resource == ResourceCELWidgets {
			b.template.SetKind(celWidgetKind)
		}
	}
	if err := padTo(b.template, cfg.ObjectSize); err != nil {
		return nil, err
	}
	if !cfg.ClientGo {
		var err error
		if b.bodies, err = newRawBodies(b); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// objectName names the i-th object. Namespaces are cluster-wide, so their
// names carry the run id to keep runs apart.
func (b *bench) objectName(i int) string {
	if b.cfg.Resource == ResourceNamespaces {
		return b.cfg.Prefix + "-" + b.runID + "-" + strconv.Itoa(i)
	}
	return b.cfg.Prefix + "-" + strconv.Itoa(i)
}

// widgets reports whether the resource under load is a Widget CRD.
func (b *bench) widgets() bool {
	return b.cfg.Resource == ResourceWidgets || b.cfg.Resource == ResourceCELWidgets
}

func (b *bench) widgetsGVR() schema.GroupVersionResource {
	if b.cfg.Resource == ResourceCELWidgets {
		return celWidgetsGVR
	}
	return widgetsGVR
}

func (b *bench) runner() Runner {
	return Runner{Concurrency: b.cfg.Concurrency, Count: b.cfg.Count, Duration: b.cfg.Duration, Rate: b.cfg.Rate}
}

func (b *bench) selected(w string) bool { return slices.Contains(b.cfg.Workloads, w) }

func (b *bench) run(ctx context.Context, report *Report) error {
	if err := b.setup(ctx); err != nil {
		return err
	}
	// Every workload but create needs objects; without create, make them.
	if !b.selected("create") {
		b.log.Info("creating objects to work on", "objects", b.cfg.Objects)
		kept, err := b.keptObjects(ctx)
		if err != nil {
			return err
		}
		r := Runner{Concurrency: b.cfg.Concurrency, Count: b.cfg.Objects}.Run(ctx, "prefill", func(ctx context.Context, _ int) error {
			return b.createOrAdopt(ctx, kept)
		})
		if r.Errors > 0 {
			b.log.Warn("some objects could not be created", "errors", r.Errors, "first", r.FirstError)
		}
	}
	// stopUsage ends the measuring of the server's usage during the
	// workload running; the workload's first result carries it.
	var stopUsage func() (*ServerUsage, error)
	add := func(r Result) {
		if stopUsage != nil {
			u, err := stopUsage()
			stopUsage = nil
			if err != nil {
				b.log.Warn("reading the server's usage", "err", err)
			}
			r.Server = u
		}
		b.log.Info("workload done", "workload", r.Name, "ops", r.Ops, "errors", r.Errors,
			"opsPerSecond", fmt.Sprintf("%.1f", r.OpsPerSecond()), "p50", r.P50, "p99", r.P99)
		report.Results = append(report.Results, r)
	}
	if b.selected("crds") {
		r, err := b.establishCRDs(ctx)
		if err != nil {
			return err
		}
		add(r)
	}
	if b.selected("openapi") {
		r, err := b.openapiLatency(ctx)
		if err != nil {
			return err
		}
		add(r)
	}
	if b.selected("fairness") && b.pop.len() > 0 && ctx.Err() == nil {
		results, note, err := b.fairness(ctx)
		if err != nil {
			return err
		}
		for _, r := range results {
			add(r)
		}
		report.Notes = append(report.Notes, note)
	}
	if b.selected("admission") && ctx.Err() == nil {
		notes, err := b.admission(ctx, add)
		if err != nil {
			return err
		}
		report.Notes = append(report.Notes, notes...)
	}
	if b.selected("fields") && ctx.Err() == nil {
		notes, err := b.fields(ctx, add)
		if err != nil {
			return err
		}
		report.Notes = append(report.Notes, notes...)
	}
	for _, w := range Workloads {
		if !b.selected(w) || ctx.Err() != nil {
			continue
		}
		if w != "create" && b.pop.len() == 0 {
			add(Result{Name: w, Summary: Summary{FirstError: errNoObjects.Error()}})
			continue
		}
		b.log.Info("workload starting", "workload", w, "objects", b.pop.len())
		if stopUsage != nil {
			stopUsage() // a workload skipped, without a result
		}
		stopUsage = watchServers(b.cfg.ServerPIDs)
		switch w {
		case "create":
			add(b.runner().Run(ctx, w, b.create))
		case "get":
			add(b.runner().Run(ctx, w, b.get))
		case "update":
			if n := b.pop.len(); n < b.cfg.Concurrency {
				b.log.Warn("fewer objects than workers: updates of one object wait for each other", "objects", n)
			}
			add(b.runner().Run(ctx, w, func(ctx context.Context, i int) error { return b.update(ctx, i, nil) }))
		case "status":
			if !b.widgets() {
				continue
			}
			add(b.runner().Run(ctx, w, b.status))
		case "patch":
			add(b.runner().Run(ctx, w, b.patch))
		case "apply":
			add(b.runner().Run(ctx, w, b.apply))
		case "list":
			add(b.runner().Run(ctx, w, b.list))
		case "list-raw":
			if b.http == nil {
				continue
			}
			add(b.runner().Run(ctx, w, b.listRaw))
		case "list-v2":
			if b.http == nil || b.cfg.Conversion == "" {
				continue
			}
			// The first list at v2 converts every object (cold); the
			// next ones find the conversions kept (warm). Each is
			// reported on its own, with the reviews it took and this
			// process's CPU, which is mostly the webhook's.
			var perList [2]time.Duration // this process's CPU per cold list, per warm list
			for k, run := range []struct {
				name string
				r    Runner
			}{{"list-v2-cold", Runner{Concurrency: 1, Count: 1}}, {w, b.runner()}} {
				if run.name == w {
					stopUsage = watchServers(b.cfg.ServerPIDs)
				}
				var reviews, objects int64
				if b.hook != nil {
					reviews, objects = b.hook.reviews.Load(), b.hook.objects.Load()
				}
				cpu := selfCPU()
				r := run.r.Run(ctx, run.name, b.listV2)
				cpu = selfCPU() - cpu
				add(r)
				if b.hook != nil {
					report.Notes = append(report.Notes, conversionNote(run.name, r.Ops, b.pop.len(), b.hook.reviews.Load()-reviews, b.hook.objects.Load()-objects, cpu))
				}
				perList[k] = perOp(cpu, r.Ops)
			}
			if b.hook != nil && perList[1] > 0 {
				report.Notes = append(report.Notes, webhookNote(perList[0], perList[1]))
			}
		case "list-paged":
			add(b.runner().Run(ctx, w, b.listPaged))
		case "list-raw-paged", "table", "table-paged", "metadata", "metadata-protobuf":
			if b.http == nil {
				continue
			}
			add(b.runner().Run(ctx, w, map[string]Op{
				"list-raw-paged": b.listRawPaged, "table": b.listTable,
				"table-paged": b.listTablePaged, "metadata": b.listMetadata,
				"metadata-protobuf": b.listMetadataProtobuf,
			}[w]))
		case "watch":
			writes, deliveries, err := b.watch(ctx)
			if err != nil {
				return err
			}
			add(writes)
			add(deliveries)
		case "delete":
			add(b.runner().Run(ctx, w, b.delete))
		}
	}
	if len(b.cfg.EtcdEndpoints) > 0 && ctx.Err() == nil {
		r, err := b.etcdPut(ctx)
		if err != nil {
			return err
		}
		add(r)
	}
	return ctx.Err()
}

// setup installs the CRD and creates the namespace widgets live in.
func (b *bench) setup(ctx context.Context) error {
	if !b.widgets() {
		return nil
	}
	if !b.cfg.SkipInstallCRD {
		if err := b.installCRD(ctx); err != nil {
			return err
		}
	}
	ns := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "Namespace",
		"metadata": map[string]any{
			"name":   b.namespace,
			"labels": map[string]any{LabelRun: b.runID},
		},
	}}
	_, err := b.client.Resource(namespacesGVR).Create(ctx, ns, metav1.CreateOptions{})
	switch {
	case err == nil:
		b.createdNamespace = true
	case apierrors.IsAlreadyExists(err):
		b.log.Info("using existing namespace", "namespace", b.namespace)
	default:
		return fmt.Errorf("creating namespace %s: %w", b.namespace, err)
	}

	// A new CRD is established before its handler serves everywhere;
	// wait until listing widgets works.
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := b.res.List(ctx, metav1.ListOptions{Limit: 1})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		return fmt.Errorf("waiting for widgets to be served: %w", err)
	}
	return nil
}

func (b *bench) installCRD(ctx context.Context) error {
	crd, err := WidgetsCRDFor(b.cfg.Resource)
	if err != nil {
		return err
	}
	if b.cfg.Conversion == ConversionWebhook {
		hook, err := startBenchWebhook()
		if err != nil {
			return fmt.Errorf("starting the conversion webhook: %w", err)
		}
		b.hook = hook
	}
	if b.cfg.Conversion != "" {
		if err := addVersion2(crd, b.cfg.Conversion, b.hook); err != nil {
			return err
		}
	}
	crds := b.client.Resource(crdsGVR)
	_, err = crds.Create(ctx, crd, metav1.CreateOptions{})
	switch {
	case err == nil:
		b.installedCRD = true
		b.log.Info("installed CRD", "name", crd.GetName())
	case apierrors.IsAlreadyExists(err):
		b.log.Info("using existing CRD", "name", crd.GetName())
	default:
		return fmt.Errorf("creating CRD %s: %w", crd.GetName(), err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := crds.Get(ctx, crd.GetName(), metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return conditionTrue(got, "Established"), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for CRD %s to be established: %w", crd.GetName(), err)
	}
	return nil
}

func conditionTrue(obj *unstructured.Unstructured, condType string) bool {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == condType && m["status"] == "True" {
			return true
		}
	}
	return false
}

// create creates the next object from the template. The copy is made inside
// the measured time, as a real client would build its object; it costs a
// few microseconds against a request's hundreds.
func (b *bench) create(ctx context.Context, _ int) error {
	return b.createNamed(ctx, b.objectName(int(b.nextName.Add(1)-1)))
}

func (b *bench) createNamed(ctx context.Context, name string) error {
	if b.bodies != nil {
		return b.rawCreate(ctx, name)
	}
	obj := b.template.DeepCopy()
	obj.SetName(name)
	created, err := b.res.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	b.pop.add(created)
	return nil
}

// keptObjects lists the objects an earlier run kept (--cleanup=false):
// name → resourceVersion.
func (b *bench) keptObjects(ctx context.Context) (map[string]string, error) {
	l, err := b.res.List(ctx, metav1.ListOptions{LabelSelector: b.selector})
	if err != nil {
		return nil, fmt.Errorf("listing kept objects: %w", err)
	}
	kept := make(map[string]string, len(l.Items))
	for _, it := range l.Items {
		kept[it.GetName()] = it.GetResourceVersion()
	}
	return kept, nil
}

// createOrAdopt creates the next object or, when an earlier run kept one
// of that name, adopts it as it is.
func (b *bench) createOrAdopt(ctx context.Context, kept map[string]string) error {
	name := b.objectName(int(b.nextName.Add(1) - 1))
	if rv, ok := kept[name]; ok {
		b.pop.addRaw(name, rv)
		return nil
	}
	return b.createNamed(ctx, name)
}

func (b *bench) get(ctx context.Context, i int) error {
	if b.bodies != nil {
		return b.rawGet(ctx, i)
	}
	s := b.pop.at(i % b.pop.len())
	_, err := b.res.Get(ctx, s.name, metav1.GetOptions{})
	return err
}

// update writes object i mod n with annotationSeq set to the next update
// number (and, for widgets, a spec change so the generation moves too).
// started, if set, is called with that number right before the request.
func (b *bench) update(ctx context.Context, i int, started func(seq int64)) error {
	return b.replace(ctx, i, "", func(obj *unstructured.Unstructured) error {
		annotations := obj.GetAnnotations()
		if annotations == nil {
			annotations = map[string]string{}
		}
		seq := b.nextSeq(started != nil)
		annotations[annotationSeq] = strconv.FormatInt(seq, 10)
		obj.SetAnnotations(annotations)
		if b.widgets() {
			if err := unstructured.SetNestedField(obj.Object, seq%1000, "spec", "replicas"); err != nil {
				return err
			}
		}
		if started != nil {
			started(seq)
		}
		return nil
	})
}

// replace writes object i mod n, through sub ("" or "/status"), once
// change has made it what the write sends. The object is our own copy,
// changed in place: on failure the next write retries with the same
// resourceVersion, which is still current.
func (b *bench) replace(ctx context.Context, i int, sub string, change func(obj *unstructured.Unstructured) error) error {
	s, err := b.pop.locked(i)
	if err != nil {
		return err
	}
	defer s.mu.Unlock()
	b.own(s)
	if err := change(s.obj); err != nil {
		return err
	}
	if b.bodies != nil {
		return b.rawReplace(ctx, s, sub)
	}
	var updated *unstructured.Unstructured
	if sub == "/status" {
		updated, err = b.res.UpdateStatus(ctx, s.obj, metav1.UpdateOptions{})
	} else {
		updated, err = b.res.Update(ctx, s.obj, metav1.UpdateOptions{})
	}
	if err != nil {
		return err
	}
	s.obj = updated
	return nil
}

// nextSeq is the number the next write sets: a new one, or with
// Config.Unchanged the same one every time unless the write must change
// its object (the watch workload waits for its event).
func (b *bench) nextSeq(mustChange bool) int64 {
	if b.cfg.Unchanged && !mustChange {
		return 0
	}
	return b.updateSeq.Add(1)
}

// status replaces the status of object i mod n through the status
// subresource, with readyReplicas set to the next update number (mod
// 1000), as a controller reporting what it sees.
func (b *bench) status(ctx context.Context, i int) error {
	return b.replace(ctx, i, "/status", func(obj *unstructured.Unstructured) error {
		return unstructured.SetNestedField(obj.Object, b.nextSeq(false)%1000, "status", "readyReplicas")
	})
}

// patch changes object i mod n as update does, sent as a JSON merge patch
// of the changed fields.
func (b *bench) patch(ctx context.Context, i int) error {
	s, err := b.pop.locked(i)
	if err != nil {
		return err
	}
	defer s.mu.Unlock()
	seq := b.nextSeq(false)
	p := map[string]any{"metadata": map[string]any{"annotations": map[string]any{annotationSeq: strconv.FormatInt(seq, 10)}}}
	if b.widgets() {
		p["spec"] = map[string]any{"replicas": seq % 1000}
	}
	body, err := json.Marshal(p)
	if err != nil {
		return err
	}
	if b.bodies == nil {
		updated, err := b.res.Patch(ctx, s.name, types.MergePatchType, body, metav1.PatchOptions{})
		if err != nil {
			return err
		}
		s.obj = updated
		return nil
	}
	data, release, err := b.doWith(ctx, b.http, http.MethodPatch, b.collectionPath()+"/"+s.name, body, http.StatusOK, "application/json", string(types.MergePatchType))
	if err != nil {
		return err
	}
	defer release()
	rv, err := resourceVersionOf(data)
	if err != nil {
		return err
	}
	s.wrote(rv)
	return nil
}

// applyManager is the field manager of the apply workload.
const applyManager = "crdserver-bench"

// apply server-side applies object i mod n: the template with the next
// update number (and, for widgets, a spec change), as applyManager.
func (b *bench) apply(ctx context.Context, i int) error {
	s, err := b.pop.locked(i)
	if err != nil {
		return err
	}
	defer s.mu.Unlock()
	obj := b.template.DeepCopy()
	obj.SetName(s.name)
	seq := b.nextSeq(false)
	obj.SetAnnotations(map[string]string{annotationSeq: strconv.FormatInt(seq, 10)})
	if b.widgets() {
		if err := unstructured.SetNestedField(obj.Object, seq%1000, "spec", "replicas"); err != nil {
			return err
		}
	}
	if b.bodies != nil {
		return b.rawApply(ctx, s, obj.Object)
	}
	applied, err := b.res.Apply(ctx, s.name, obj, metav1.ApplyOptions{FieldManager: applyManager, Force: true})
	if err != nil {
		return err
	}
	s.obj = applied
	return nil
}

func (b *bench) list(ctx context.Context, _ int) error {
	_, err := b.res.List(ctx, metav1.ListOptions{LabelSelector: b.selector})
	return err
}

// listRaw lists over plain HTTP and reads the body without decoding it.
func (b *bench) listRaw(ctx context.Context, _ int) error {
	return b.listRawAt(ctx, b.collectionPath())
}

// listV2 is listRaw at the widgets' version v2.
func (b *bench) listV2(ctx context.Context, _ int) error {
	return b.listRawAt(ctx, strings.Replace(b.collectionPath(), "/"+widgetsGVR.Version+"/", "/"+widgetsV2+"/", 1))
}

func (b *bench) listRawAt(ctx context.Context, path string) error {
	q := url.Values{}
	if b.selector != "" {
		q.Set("labelSelector", b.selector)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(b.host, "/")+path+"?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := b.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("list: HTTP %d (%d bytes)", resp.StatusCode, n)
	}
	return nil
}

func (b *bench) listPaged(ctx context.Context, _ int) error {
	opts := metav1.ListOptions{LabelSelector: b.selector, Limit: b.cfg.PageSize}
	for {
		l, err := b.res.List(ctx, opts)
		if err != nil {
			return err
		}
		if opts.Continue = l.GetContinue(); opts.Continue == "" {
			return nil
		}
	}
}

// delete deletes object i; past the last object it stops the run.
func (b *bench) delete(ctx context.Context, i int) error {
	if i >= b.pop.len() {
		return ErrStop
	}
	return b.deleteSlot(ctx, b.pop.at(i))
}

func (b *bench) deleteSlot(ctx context.Context, s *slot) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.deleted {
		return nil
	}
	if b.bodies != nil {
		if err := b.rawDelete(ctx, s.name); err != nil {
			return err
		}
		s.deleted = true
		return nil
	}
	if err := b.res.Delete(ctx, s.name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	s.deleted = true
	return nil
}

// watch opens the watchers, runs updates and measures, for every update and
// every watcher, the time from the update's start to the event's arrival.
// It returns the updates' result ("watch-update") and the deliveries'
// ("watch"), where an event not delivered within WatchTimeout after the last
// update counts as an error.
func (b *bench) watch(ctx context.Context) (writes, deliveries Result, err error) {
	// Watch from the current revision so that no earlier event is replayed.
	l, err := b.res.List(ctx, metav1.ListOptions{LabelSelector: b.selector, Limit: 1})
	if err != nil {
		return writes, deliveries, fmt.Errorf("watch: listing for a start revision: %w", err)
	}
	watchCtx, stopWatchers := context.WithCancel(ctx)
	defer stopWatchers()

	var (
		sent      sync.Map // update number (int64) → time.Time its request started
		rec       Recorder
		delivered atomic.Int64
		lastSeen  atomic.Int64 // unix nanos of the latest delivery
		progress  = make(chan struct{}, 1)
		wg        sync.WaitGroup
		stoppers  []func()
	)
	// Stopping each watcher, not only cancelling its context, is what ends
	// every kind of watch.Interface (fakes ignore the context).
	stopAll := func() {
		stopWatchers()
		for _, stop := range stoppers {
			stop()
		}
		wg.Wait()
	}
	for w := range b.cfg.Watchers {
		next, stop, err := b.startWatcher(watchCtx, l.GetResourceVersion())
		if err != nil {
			stopAll()
			return writes, deliveries, fmt.Errorf("watch: starting watcher %d: %w", w, err)
		}
		stoppers = append(stoppers, stop)
		wg.Go(func() {
			for {
				ev, ok := next()
				if !ok {
					break
				}
				switch ev.typ {
				case watch.Modified:
				case watch.Error:
					// Stopping the watchers ends their streams with an
					// error event; only earlier ones are the server's.
					if watchCtx.Err() == nil {
						rec.Fail(ev.err)
					}
					continue
				default:
					continue
				}
				start, ok := sent.Load(ev.seq)
				if !ok {
					continue
				}
				now := time.Now()
				rec.Observe(now.Sub(start.(time.Time)))
				lastSeen.Store(now.UnixNano())
				delivered.Add(1)
				select {
				case progress <- struct{}{}:
				default:
				}
			}
			if watchCtx.Err() == nil {
				rec.Fail(errors.New("watch closed by the server before all events arrived"))
			}
		})
	}

	first := time.Now()
	writes = b.runner().Run(ctx, "watch-update", func(ctx context.Context, i int) error {
		return b.update(ctx, i, func(seq int64) { sent.Store(seq, time.Now()) })
	})

	// Every successful update should reach every watcher.
	expected := int64(writes.Ops) * int64(b.cfg.Watchers)
	timeout := time.NewTimer(b.cfg.WatchTimeout)
	defer timeout.Stop()
wait:
	for delivered.Load() < expected {
		select {
		case <-progress:
		case <-timeout.C:
			break wait
		case <-ctx.Done():
			break wait
		}
	}
	stopAll()

	deliveries = Result{Name: "watch", Summary: rec.Summary()}
	if missing := expected - int64(deliveries.Ops); missing > 0 {
		deliveries.Errors += int(missing)
		if deliveries.FirstError == "" {
			deliveries.FirstError = fmt.Sprintf("%d of %d events not delivered within %v", missing, expected, b.cfg.WatchTimeout)
		}
	}
	if last := lastSeen.Load(); last != 0 {
		deliveries.Elapsed = time.Unix(0, last).Sub(first)
	}
	return writes, deliveries, nil
}

// watchEvent is what the watch workload needs of an event: its type, the
// object's update number (-1 if none) and, for an error event, the error.
type watchEvent struct {
	typ watch.EventType
	seq int64
	err error
}

// startWatcher opens one watch from resourceVersion, in the form
// Config.WatchAs. next blocks for the next event and reports false once
// the stream has ended; stop ends it.
func (b *bench) startWatcher(ctx context.Context, resourceVersion string) (next func() (watchEvent, bool), stop func(), err error) {
	if b.bodies != nil {
		w, err := b.startRawWatch(ctx, resourceVersion)
		if err != nil {
			return nil, nil, err
		}
		next = func() (watchEvent, bool) {
			ev, err := w.next()
			return ev, err == nil
		}
		return next, w.close, nil
	}
	opts := metav1.ListOptions{LabelSelector: b.selector, ResourceVersion: resourceVersion}
	var wi watch.Interface
	if b.meta != nil {
		wi, err = b.meta.Watch(ctx, opts)
	} else {
		wi, err = b.res.Watch(ctx, opts)
	}
	if err != nil {
		return nil, nil, err
	}
	next = func() (watchEvent, bool) {
		ev, ok := <-wi.ResultChan()
		if !ok {
			return watchEvent{}, false
		}
		out := watchEvent{typ: ev.Type, seq: -1}
		if ev.Type == watch.Error {
			out.err = apierrors.FromObject(ev.Object)
		}
		// An Unstructured from the dynamic client, a
		// PartialObjectMetadata from the metadata client.
		if obj, ok := ev.Object.(metav1.Object); ok {
			if seq, err := strconv.ParseInt(obj.GetAnnotations()[annotationSeq], 10, 64); err == nil {
				out.seq = seq
			}
		}
		return out, true
	}
	return next, wi.Stop, nil
}

// metadataResource is the resource under load through client-go's
// metadata client made from cfg.
func (b *bench) metadataResource(cfg *rest.Config) (metadata.ResourceInterface, error) {
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if b.widgets() {
		return mc.Resource(b.widgetsGVR()).Namespace(b.namespace), nil
	}
	return mc.Resource(namespacesGVR), nil
}

// cleanup deletes, in order, the objects still alive, the namespace and the
// CRD, each only if this run created it, and the etcd keys it wrote.
func (b *bench) cleanup(ctx context.Context) error {
	var errs []error
	if b.selected("crds") {
		if err := b.deleteCRDs(ctx); err != nil {
			errs = append(errs, fmt.Errorf("deleting CRDs: %w", err))
		}
	}
	if n := b.pop.len(); n > 0 {
		b.log.Info("cleaning up objects", "objects", n)
		r := Runner{Concurrency: b.cfg.Concurrency, Count: n}.Run(ctx, "cleanup", func(ctx context.Context, i int) error {
			return b.deleteSlot(ctx, b.pop.at(i))
		})
		if r.Errors > 0 {
			errs = append(errs, fmt.Errorf("%d objects not deleted, first error: %s", r.Errors, r.FirstError))
		}
	}
	if b.createdNamespace {
		err := b.client.Resource(namespacesGVR).Delete(ctx, b.namespace, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting namespace %s: %w", b.namespace, err))
		}
	}
	if b.installedCRD {
		err := b.client.Resource(crdsGVR).Delete(ctx, b.widgetsGVR().GroupResource().String(), metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting CRD: %w", err))
		}
	}
	if b.etcdCleanup != nil {
		if err := b.etcdCleanup(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// nextHost is the server the next raw request goes to: each in turn.
func (b *bench) nextHost() string {
	if len(b.hosts) < 2 {
		return b.host
	}
	return b.hosts[(b.hostTurn.Add(1)-1)%uint64(len(b.hosts))]
}
