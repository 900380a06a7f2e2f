package controllers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/watchcache"
)

// GCResource is one served resource, as the garbage collector watches it.
type GCResource struct {
	Resource   schema.GroupResource
	Kind       string
	Namespaced bool
	Cache      *watchcache.Cache
}

// GCObject is what the collector reads of an object.
type GCObject struct {
	UID             types.UID
	ResourceVersion string
	Deleting        bool
	Finalizers      []string
	OwnerReferences []metav1.OwnerReference
}

// GCServer is what the garbage collector needs from the server. Every write
// names the object's uid, so that it never touches an object of the same
// name created since.
type GCServer interface {
	// Resources returns every resource served now.
	Resources() []GCResource
	// Get reads an object from storage (a quorum read, not a cache):
	// ErrGCNotFound when there is none.
	Get(ctx context.Context, r schema.GroupResource, namespace, name string) (*GCObject, error)
	// Delete deletes an object as a client's delete with this propagation
	// policy would, if it is still obj (its uid and resourceVersion).
	Delete(ctx context.Context, r schema.GroupResource, namespace, name string, obj *GCObject, policy metav1.DeletionPropagation) error
	// Update applies change to the object's owner references and
	// finalizers if its uid is still uid (compare-and-swap, retried on
	// conflict); change reports whether it changed anything. An object
	// being deleted whose last finalizer goes is deleted.
	Update(ctx context.Context, r schema.GroupResource, namespace, name string, uid types.UID, change func(*GCObject) bool) error
}

// GCServer's answers the collector branches on: the object is missing, or
// changed since it was read (a precondition failed; it is looked at again,
// without a warning: replicas racing each other meet it routinely).
var (
	ErrGCNotFound = errors.New("not found")
	ErrGCConflict = errors.New("changed since read")
)

// GarbageCollector deletes the objects whose owners are gone, and finishes
// the foreground and orphaning deletions of owners, as upstream's garbage
// collector does. A graph of owner references over every resource, fed by
// the watch caches, says which objects to look at. That an owner is gone is
// checked by a read from storage (by uid, in the dependent's namespace);
// every write names the object's uid and resourceVersion, or is an
// idempotent compare-and-swap, so several replicas may run it at once.
type GarbageCollector struct {
	Server GCServer
	Log    *slog.Logger
	// Workers is how many objects are worked on at once; read by Run.
	// Default 64: a worker mostly waits for etcd, which commits concurrent
	// writes in one batch, so more workers delete faster, up to a point
	// (on two cores, 64 deleted half again as fast as 16; 128 no faster).
	Workers int

	graph   *gcGraph
	queue   *workQueue[gcWork]
	changed chan struct{}
	// absent remembers owners found missing where they were looked for
	// (uids are never reused), so that the dependents of a deleted owner
	// cost one read, not one each.
	absent absentCache
	// kinds maps group/kind to the resource serving it.
	kindsMu sync.RWMutex
	kinds   map[schema.GroupKind]GCResource
}

// NewGarbageCollector returns a collector ready for Run and for
// ResourcesChanged.
func NewGarbageCollector(server GCServer, log *slog.Logger) *GarbageCollector {
	if log == nil {
		log = slog.Default()
	}
	return &GarbageCollector{
		Server: server, Log: log,
		graph: newGCGraph(), queue: newWorkQueue[gcWork](), changed: make(chan struct{}, 1),
	}
}

// ResourcesChanged tells the collector that resources were added or
// removed (a CRD served or gone). It never blocks.
func (gc *GarbageCollector) ResourcesChanged() {
	select {
	case gc.changed <- struct{}{}:
	default:
	}
}

// Run works until ctx ends and returns once its workers and watches have.
func (gc *GarbageCollector) Run(ctx context.Context) {
	if gc.Workers == 0 {
		gc.Workers = 64
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer gc.queue.shutDown()
	wg.Go(func() { gc.dispatch(ctx, &wg) })
	watching := map[schema.GroupResource]bool{}
	var mu sync.Mutex
	for {
		gc.refreshKinds()
		for _, r := range gc.Server.Resources() {
			mu.Lock()
			start := !watching[r.Resource]
			watching[r.Resource] = true
			mu.Unlock()
			if start {
				wg.Go(func() {
					gc.watchResource(ctx, r.Resource)
					mu.Lock()
					delete(watching, r.Resource)
					mu.Unlock()
					// Served again meanwhile (a CRD deleted and
					// recreated)? The next pass starts it anew.
					gc.ResourcesChanged()
				})
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-gc.changed:
		}
	}
}

func (gc *GarbageCollector) refreshKinds() {
	kinds := map[schema.GroupKind]GCResource{}
	for _, r := range gc.Server.Resources() {
		kinds[schema.GroupKind{Group: r.Resource.Group, Kind: r.Kind}] = r
	}
	gc.kindsMu.Lock()
	gc.kinds = kinds
	gc.kindsMu.Unlock()
}

func (gc *GarbageCollector) resource(r schema.GroupResource) (GCResource, bool) {
	for _, res := range gc.Server.Resources() {
		if res.Resource == r {
			return res, true
		}
	}
	return GCResource{}, false
}

// watchResource feeds the graph with one resource's objects until ctx ends
// or the resource is no longer served. Each watch starts with every current
// object; objects the graph holds that a new watch does not list went while
// no watch was open, and are removed.
func (gc *GarbageCollector) watchResource(ctx context.Context, r schema.GroupResource) {
	for ctx.Err() == nil {
		res, ok := gc.resource(r)
		if !ok {
			// Not served anymore: its objects are gone with it.
			for _, uid := range gc.graph.uidsOf(r) {
				gc.removed(uid)
			}
			return
		}
		gc.watchOnce(ctx, res)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (gc *GarbageCollector) watchOnce(ctx context.Context, res GCResource) {
	if err := res.Cache.WaitReady(ctx); err != nil {
		return
	}
	initial := true
	w, err := res.Cache.Watch(ctx, watchcache.WatchOptions{SendInitialEvents: &initial, AllowBookmarks: true, ResourceVersionMatch: watchcache.MatchNotOlderThan})
	if err != nil {
		if ctx.Err() == nil {
			gc.Log.Warn("garbage collector: watch", "resource", res.Resource, "err", err)
		}
		return
	}
	defer w.Stop()
	listed := map[types.UID]bool{} // nil once the initial events are in
	// Every write of the resource comes through here: an object's
	// metadata kept in parts (watchcache.Item.MetadataInto) is put
	// together in buf, which the node decoded from it does not keep,
	// rather than in a new copy each time.
	var buf []byte
	for {
		var ev watchcache.Event
		var ok bool
		select {
		case <-ctx.Done():
			return
		case ev, ok = <-w.ResultChan():
		}
		if !ok || ev.Type == watchcache.Error {
			return
		}
		switch ev.Type {
		case watchcache.Added, watchcache.Modified:
			n, err := itemGCNode(res.Resource, ev.Item, &buf)
			if err != nil {
				gc.Log.Error("garbage collector: decoding", "resource", res.Resource, "name", ev.Item.Name, "err", err)
				continue
			}
			n.useItemStrings(ev.Item)
			if listed != nil {
				listed[n.UID] = true
			}
			gc.queue.add(gc.graph.observe(n)...)
		case watchcache.Deleted:
			if n, err := itemGCNode(res.Resource, ev.Item, &buf); err == nil {
				gc.removed(n.UID)
			}
		case watchcache.Bookmark:
			if ev.InitialEventsEnd && listed != nil {
				for _, uid := range gc.graph.uidsOf(res.Resource) {
					if !listed[uid] {
						gc.removed(uid)
					}
				}
				listed = nil
			}
		}
	}
}

// absentKey is an owner's uid and the namespace it was missing from ("" for
// cluster-scoped owners). Absence from one namespace says nothing of
// another: a dependent in another namespace naming the same uid is not
// told its owner is gone until its own lookup says so.
type absentKey struct {
	uid       types.UID
	namespace string
}

// removed records that the object uid is gone.
func (gc *GarbageCollector) removed(uid types.UID) {
	if n := gc.graph.node(uid); n != nil {
		gc.absent.add(uid, n.Namespace)
	}
	gc.queue.add(gc.graph.remove(uid)...)
}

func (gc *GarbageCollector) isAbsent(uid types.UID, namespace string) bool {
	return gc.absent.has(absentKey{uid, namespace})
}

// absentCache holds the most recently added keys, between absentCacheSize
// and twice as many: when the newer of its two generations fills, the older
// is dropped. Forgetting an absent owner costs one more read, no more.
type absentCache struct {
	mu         sync.Mutex
	cur, older map[absentKey]struct{}
}

const absentCacheSize = 10000

// add records uid as absent from namespace. It keeps copies: a node's
// strings may share its cache item's bytes (useItemStrings), which the
// cache, kept long after, is not to hold.
func (c *absentCache) add(uid types.UID, namespace string) {
	k := absentKey{types.UID(strings.Clone(string(uid))), strings.Clone(namespace)}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur == nil || len(c.cur) >= absentCacheSize {
		c.older, c.cur = c.cur, make(map[absentKey]struct{}, 64)
	}
	c.cur[k] = struct{}{}
}

func (c *absentCache) has(k absentKey) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.cur[k]
	if !ok {
		_, ok = c.older[k]
	}
	return ok
}

// itemGCNode is decodeGCNode of the item's object. It reads metadata
// alone, without the field sets of managedFields the item shares with
// others (watchcache.Item.MetadataInto), which are most of what a scan of
// metadata would skip; buf holds what it puts together, and the node
// keeps none of it.
func itemGCNode(r schema.GroupResource, it *watchcache.Item, buf *[]byte) (*gcNode, error) {
	if md, ok := it.MetadataInto(buf); ok {
		if n, ok := scanGCMetadata(r, md); ok {
			return n, nil
		}
	}
	return decodeGCNode(r, it.JSONInto(buf))
}

func decodeGCNode(r schema.GroupResource, data []byte) (*gcNode, error) {
	// Every write of every resource comes through here: read the members
	// of metadata the graph needs, and skip the rest unread (decoding the
	// whole object cost a sixth of an update's CPU, and decoding metadata
	// with encoding/json still a twentieth, mostly in managedFields).
	if n, ok := scanGCNode(r, data); ok {
		return n, nil
	}
	// Not compact JSON, or of unexpected types: decoding says what is
	// wrong, or reads what the scan did not.
	return unmarshalGCNode(r, data)
}

// unmarshalGCNode is decodeGCNode with encoding/json: the reference.
func unmarshalGCNode(r schema.GroupResource, data []byte) (*gcNode, error) {
	var obj struct {
		Metadata json.RawMessage `json:"metadata"`
	}
	if err := json.Unmarshal(data, &obj); err != nil {
		return nil, err
	}
	var md struct {
		Namespace         string                  `json:"namespace"`
		Name              string                  `json:"name"`
		UID               types.UID               `json:"uid"`
		ResourceVersion   string                  `json:"resourceVersion"`
		OwnerReferences   []metav1.OwnerReference `json:"ownerReferences"`
		Finalizers        []string                `json:"finalizers"`
		DeletionTimestamp *metav1.Time            `json:"deletionTimestamp"`
	}
	if len(obj.Metadata) > 0 {
		if err := json.Unmarshal(obj.Metadata, &md); err != nil {
			return nil, err
		}
	}
	rev, err := parseRevision(md.ResourceVersion)
	if err != nil {
		return nil, err
	}
	return newGCNode(r, md.Namespace, md.Name, md.UID, rev, md.OwnerReferences, md.Finalizers, md.DeletionTimestamp != nil), nil
}

// parseRevision reads a stored object's resourceVersion, its revision in
// storage ("" reads as 0).
func parseRevision(rv string) (int64, error) {
	if rv == "" {
		return 0, nil
	}
	rev, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("metadata.resourceVersion %q: not a revision", rv)
	}
	return rev, nil
}

// scanGCNode reads a node from the metadata of a compact JSON object,
// decoding only the members it needs, in one scan (managedFields, a third
// of a typical object, are checked once); ok is false when there is no
// metadata, it is not a compact object, or one of the members is not of
// its type.
func scanGCNode(r schema.GroupResource, data []byte) (n *gcNode, ok bool) {
	var md gcMeta
	found, ok := codec.EachMemberAt(data, []string{"metadata"}, md.member)
	if !found || !ok || md.bad {
		return nil, false
	}
	return md.node(r)
}

// scanGCMetadata is scanGCNode of an object whose metadata, a compact
// JSON object, is md.
func scanGCMetadata(r schema.GroupResource, md []byte) (n *gcNode, ok bool) {
	var m gcMeta
	if !codec.EachMember(md, m.member) || m.bad {
		return nil, false
	}
	return m.node(r)
}

// gcMeta collects the members of metadata a node is made of, as
// encoding/json decodes them: a repeated member counts by its last value.
type gcMeta struct {
	namespace, name, rv, uid string
	owners                   []metav1.OwnerReference
	finalizers               []string
	deleting                 bool
	bad                      bool // a member is not of its type
}

// member reads the metadata member key, of value v, and reports whether
// it is of its type.
func (m *gcMeta) member(key string, v []byte) bool {
	ok := true
	switch key {
	case "namespace", "name", "uid", "resourceVersion":
		ok = nullableString(v, m.stringMember(key))
	case "ownerReferences":
		m.owners = nil
		ok = json.Unmarshal(v, &m.owners) == nil
	case "finalizers":
		m.finalizers = nil
		ok = json.Unmarshal(v, &m.finalizers) == nil
	case "deletionTimestamp":
		var t *metav1.Time
		ok = json.Unmarshal(v, &t) == nil
		m.deleting = t != nil
	}
	m.bad = !ok
	return ok
}

// stringMember is where the string member key goes.
func (m *gcMeta) stringMember(key string) *string {
	switch key {
	case "namespace":
		return &m.namespace
	case "name":
		return &m.name
	case "uid":
		return &m.uid
	}
	return &m.rv
}

// nullableString decodes the encoded string or null v into *out, as
// encoding/json decodes it into a string ("" for null).
func nullableString(v []byte, out *string) bool {
	if string(v) == "null" {
		*out = ""
		return true
	}
	s, ok := codec.StringValue(v)
	*out = s
	return ok
}

// node is the node of the metadata read; ok is false when its
// resourceVersion is not a revision.
func (m *gcMeta) node(r schema.GroupResource) (*gcNode, bool) {
	rev, err := parseRevision(m.rv)
	if err != nil {
		return nil, false
	}
	return newGCNode(r, m.namespace, m.name, types.UID(m.uid), rev, m.owners, m.finalizers, m.deleting), true
}

func newGCNode(r schema.GroupResource, namespace, name string, uid types.UID, rev int64, owners []metav1.OwnerReference, finalizers []string, deleting bool) *gcNode {
	return &gcNode{
		Resource: r, Namespace: namespace, Name: name, UID: uid,
		Revision:   rev,
		Owners:     owners,
		Finalizers: finalizers,
		Deleting:   deleting,
		Foreground: slices.Contains(finalizers, metav1.FinalizerDeleteDependents),
		Orphan:     slices.Contains(finalizers, metav1.FinalizerOrphanDependents),
	}
}

// dispatch hands each queued item to a goroutine of its own, at most
// Workers at once, until the queue shuts down. Goroutines come and go with
// the work: an idle server keeps none (a fixed pool cost ~1.5 MB of RSS).
func (gc *GarbageCollector) dispatch(ctx context.Context, wg *sync.WaitGroup) {
	slots := make(chan struct{}, gc.Workers)
	for {
		slots <- struct{}{}
		w, ok := gc.queue.get()
		if !ok {
			return
		}
		wg.Go(func() {
			defer func() { <-slots }()
			gc.process(ctx, w)
		})
	}
}

func (gc *GarbageCollector) process(ctx context.Context, w gcWork) {
	var err error
	if w.Orphan {
		err = gc.orphan(ctx, w.UID)
	} else {
		err = gc.attemptToDelete(ctx, w.UID)
	}
	gc.queue.done(w)
	if errors.Is(err, ErrGCNotFound) {
		err = nil // gone meanwhile (another replica was quicker)
	}
	if err != nil && ctx.Err() == nil {
		if !errors.Is(err, errRetry) && !errors.Is(err, ErrGCConflict) {
			gc.Log.Warn("garbage collector", "uid", w.UID, "err", err)
		}
		gc.queue.retry(w)
	} else {
		gc.queue.forget(w)
	}
}

// errRetry asks for the work to be retried later, without a warning.
var errRetry = errors.New("retry")

// ownerState is what a reference's owner turns out to be.
type ownerState int

const (
	ownerSolid   ownerState = iota
	ownerAbsent             // gone, or never was: the reference dangles
	ownerWaiting            // deleting its dependents in the foreground
	ownerInvalid            // a namespaced owner of a cluster-scoped object
)

// attemptToDelete looks at one object: an owner deleting its dependents in
// the foreground, or a dependent whose owners may be gone or waiting for
// it. It follows upstream's attemptToDeleteItem.
func (gc *GarbageCollector) attemptToDelete(ctx context.Context, uid types.UID) error {
	n := gc.graph.node(uid)
	if n == nil {
		return nil // gone; its removal queued what depends on it
	}
	if n.Deleting && !n.Foreground {
		return nil // on its way; its removal will queue its dependents
	}
	// Upstream reads the object again here; the cache's copy will do, as
	// every write below names its resourceVersion (or reads it afresh):
	// a decision made on a stale copy fails, and is made again.
	latest := n.object()
	if n.Deleting && n.Foreground {
		return gc.deletingDependents(ctx, n)
	}
	if len(latest.OwnerReferences) == 0 {
		return nil
	}
	var solid, dangling, waiting []types.UID
	for _, ref := range latest.OwnerReferences {
		state, err := gc.ownerState(ctx, n, ref)
		if err != nil {
			return err
		}
		switch state {
		case ownerInvalid:
			// Upstream leaves such an object alone: no lookup will ever
			// find its owner, and it is not the collector's to delete.
			return nil
		case ownerSolid:
			solid = append(solid, ref.UID)
		case ownerAbsent:
			dangling = append(dangling, ref.UID)
		case ownerWaiting:
			waiting = append(waiting, ref.UID)
		}
	}
	switch {
	case len(solid) > 0:
		// It stays: only the references to missing owners go, and those to
		// owners waiting for it, which would otherwise wait forever.
		drop := append(dangling, waiting...)
		if len(drop) == 0 {
			return nil
		}
		return gc.Server.Update(ctx, n.Resource, n.Namespace, n.Name, uid, func(o *GCObject) bool {
			before := len(o.OwnerReferences)
			o.OwnerReferences = slices.DeleteFunc(o.OwnerReferences, func(r metav1.OwnerReference) bool { return slices.Contains(drop, r.UID) })
			return len(o.OwnerReferences) != before
		})
	case len(waiting) > 0 && len(gc.graph.dependentsOf(uid, false)) > 0:
		// An owner waits for it, and it has dependents of its own: they go
		// first, in the foreground too, so the owner waits for them all.
		// A dependent already deleting its own dependents may close a
		// circle back to the waiting owner, which would then wait forever:
		// as upstream does, it stops blocking its owners first.
		for _, dep := range gc.graph.dependentsOf(uid, false) {
			if !dep.Deleting || !dep.Foreground {
				continue
			}
			unblocked := false
			err := gc.Server.Update(ctx, n.Resource, n.Namespace, n.Name, uid, func(o *GCObject) bool {
				unblocked = false
				for i := range o.OwnerReferences {
					if blocks(&o.OwnerReferences[i]) {
						o.OwnerReferences[i].BlockOwnerDeletion = nil
						unblocked = true
					}
				}
				return unblocked
			})
			if err != nil || unblocked {
				return err // the change, once watched, queues it again
			}
			break
		}
		return gc.delete(ctx, n, latest, metav1.DeletePropagationForeground)
	default:
		// No owner left: it goes, its dependents as its own finalizers
		// say, in the background otherwise.
		policy := metav1.DeletePropagationBackground
		switch {
		case slices.Contains(latest.Finalizers, metav1.FinalizerOrphanDependents):
			policy = metav1.DeletePropagationOrphan
		case slices.Contains(latest.Finalizers, metav1.FinalizerDeleteDependents):
			policy = metav1.DeletePropagationForeground
		}
		return gc.delete(ctx, n, latest, policy)
	}
}

func (gc *GarbageCollector) delete(ctx context.Context, n *gcNode, latest *GCObject, policy metav1.DeletionPropagation) error {
	err := gc.Server.Delete(ctx, n.Resource, n.Namespace, n.Name, latest, policy)
	if errors.Is(err, ErrGCNotFound) {
		return nil
	}
	return err
}

// ownerState finds out, by a read from storage, what the owner ref of n is.
// The owner is looked up in n's namespace (a namespaced object's owners
// share its namespace) or, when its kind is cluster-scoped, among
// cluster-scoped objects.
func (gc *GarbageCollector) ownerState(ctx context.Context, n *gcNode, ref metav1.OwnerReference) (ownerState, error) {
	// Known gone, as a cluster-scoped owner or from n's namespace.
	if gc.isAbsent(ref.UID, "") || gc.isAbsent(ref.UID, n.Namespace) {
		return ownerAbsent, nil
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return ownerAbsent, nil // no owner can have it
	}
	gc.kindsMu.RLock()
	res, ok := gc.kinds[schema.GroupKind{Group: gv.Group, Kind: ref.Kind}]
	gc.kindsMu.RUnlock()
	if !ok {
		// Perhaps a CRD not served yet: upstream waits for it, too.
		return 0, fmt.Errorf("%w: owner kind %s not served", errRetry, ref.Kind)
	}
	ns := ""
	if res.Namespaced {
		if n.Namespace == "" {
			return ownerInvalid, nil
		}
		ns = n.Namespace
	}
	owner, err := gc.Server.Get(ctx, res.Resource, ns, ref.Name)
	if errors.Is(err, ErrGCNotFound) || (err == nil && owner.UID != ref.UID) {
		gc.absent.add(ref.UID, ns)
		return ownerAbsent, nil
	}
	if err != nil {
		return 0, err
	}
	if owner.Deleting && slices.Contains(owner.Finalizers, metav1.FinalizerDeleteDependents) {
		return ownerWaiting, nil
	}
	return ownerSolid, nil
}

// deletingDependents works on an owner deleted in the foreground: once no
// dependent blocks it, its foregroundDeletion finalizer goes; until then,
// the blocking dependents are deleted.
func (gc *GarbageCollector) deletingDependents(ctx context.Context, owner *gcNode) error {
	blocking := gc.graph.dependentsOf(owner.UID, true)
	if len(blocking) == 0 {
		return gc.Server.Update(ctx, owner.Resource, owner.Namespace, owner.Name, owner.UID, func(o *GCObject) bool {
			return removeFinalizer(o, metav1.FinalizerDeleteDependents)
		})
	}
	for _, dep := range blocking {
		if !dep.Deleting {
			gc.queue.add(gcWork{UID: dep.UID})
		}
	}
	return nil // the dependents' removal queues the owner again
}

// orphan removes owner's uid from its dependents' owner references, then
// its orphan finalizer.
func (gc *GarbageCollector) orphan(ctx context.Context, uid types.UID) error {
	owner := gc.graph.node(uid)
	if owner == nil {
		return nil
	}
	deps, err := gc.orphanedDependents(ctx, owner)
	if err != nil {
		return err
	}
	for _, dep := range deps {
		err := gc.Server.Update(ctx, dep.Resource, dep.Namespace, dep.Name, dep.UID, func(o *GCObject) bool {
			before := len(o.OwnerReferences)
			o.OwnerReferences = slices.DeleteFunc(o.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == uid })
			return len(o.OwnerReferences) != before
		})
		if err != nil && !errors.Is(err, ErrGCNotFound) {
			return err
		}
	}
	err = gc.Server.Update(ctx, owner.Resource, owner.Namespace, owner.Name, uid, func(o *GCObject) bool {
		return removeFinalizer(o, metav1.FinalizerOrphanDependents)
	})
	if errors.Is(err, ErrGCNotFound) {
		return nil
	}
	return err
}

// orphanedDependents returns the dependents of owner, which is being
// deleted orphaning them: those in the graph, and those the graph has not
// seen yet. Each resource's watch feeds the graph at its own pace, so a
// dependent written just before its owner's deletion may reach the graph
// after the owner is gone; left out here, it would keep its reference to
// the owner and later be collected as if the owner had been deleted in the
// background. So every resource's cache, once current to the owner's
// revision (later than any write before the deletion), is searched too.
// Orphaning is rare, and the search reads only objects that name the
// owner's uid somewhere.
func (gc *GarbageCollector) orphanedDependents(ctx context.Context, owner *gcNode) ([]*gcNode, error) {
	deps := gc.graph.dependentsOf(owner.UID, false)
	known := make(map[types.UID]bool, len(deps))
	for _, d := range deps {
		known[d.UID] = true
	}
	uid := []byte(owner.UID)
	// A namespaced owner's dependents are in its namespace (a
	// cluster-scoped object cannot depend on it); a cluster-scoped
	// owner's are anywhere.
	opts := watchcache.ListOptions{Namespace: owner.Namespace, ResourceVersion: strconv.FormatInt(owner.Revision, 10), ResourceVersionMatch: watchcache.MatchNotOlderThan}
	var buf []byte
	var pieces [][]byte
	for _, r := range gc.Server.Resources() {
		if r.Cache == nil || (owner.Namespace != "" && !r.Namespaced) {
			continue
		}
		res, err := r.Cache.List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("looking for the dependents of %s in %s: %w", owner.UID, r.Resource, err)
		}
		for _, it := range res.Items {
			if !namesUID(it, uid, &pieces) {
				continue
			}
			n, err := itemGCNode(r.Resource, it, &buf)
			if err != nil || known[n.UID] || ownerRef(n.Owners, owner.UID) == nil {
				continue
			}
			known[n.UID] = true
			deps = append(deps, n)
		}
	}
	return deps, nil
}

// namesUID reports whether the item's bytes contain uid, read in its
// pieces, without putting it together: an owner reference's uid is in the
// item's own bytes, which end only where a shared field set begins.
func namesUID(it *watchcache.Item, uid []byte, pieces *[][]byte) bool {
	*pieces = it.AppendPieces((*pieces)[:0])
	for _, p := range *pieces {
		if bytes.Contains(p, uid) {
			return true
		}
	}
	return false
}

func removeFinalizer(o *GCObject, f string) bool {
	before := len(o.Finalizers)
	o.Finalizers = slices.DeleteFunc(o.Finalizers, func(x string) bool { return x == f })
	return len(o.Finalizers) != before
}
