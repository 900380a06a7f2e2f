package controllers

import (
	"reflect"
	"strconv"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/crdserver/crdserver/internal/watchcache"
)

// gcNode is one object as the garbage collector's graph knows it: its
// identity, its owners, and how it is being deleted.
type gcNode struct {
	Resource        schema.GroupResource
	Namespace, Name string
	UID             types.UID
	// Revision is metadata.resourceVersion, kept as the number it is: the
	// graph holds a node per object, and the text is needed only when a
	// worker writes (object).
	Revision   int64
	Owners     []metav1.OwnerReference
	Finalizers []string
	// Deleting: metadata.deletionTimestamp is set.
	Deleting bool
	// Foreground and Orphan: the foregroundDeletion and orphan finalizers.
	Foreground, Orphan bool
}

// object returns what n says of its object.
func (n *gcNode) object() *GCObject {
	rv := ""
	if n.Revision != 0 {
		rv = strconv.FormatInt(n.Revision, 10)
	}
	return &GCObject{UID: n.UID, ResourceVersion: rv, Deleting: n.Deleting, Finalizers: n.Finalizers, OwnerReferences: n.Owners}
}

// useItemStrings makes n hold the item's name and namespace, which share
// the bytes of its key, and a uid in the item's own bytes, in place of
// the copies decoded from its JSON, when they are the same: the graph
// keeps a node for every object of every resource, and the cache keeps
// the item anyway. The node then keeps the item's bytes alive until it is
// replaced by the next revision's or removed; what outlives the node (the
// absent cache) clones them.
func (n *gcNode) useItemStrings(it *watchcache.Item) {
	if n.Name == it.Name {
		n.Name = it.Name
	}
	if n.Namespace == it.Namespace {
		n.Namespace = it.Namespace
	}
	if uid, ok := it.OwnString(string(n.UID)); ok {
		n.UID = types.UID(uid)
	}
}

// gcWork is one thing for a worker to do about an object.
type gcWork struct {
	UID types.UID
	// Orphan: remove the object's uid from its dependents' owner
	// references, then its orphan finalizer. Otherwise: decide whether
	// the object (a dependent, or an owner deleting its dependents in the
	// foreground) is to be deleted or changed.
	Orphan bool
}

// gcGraph is the dependency graph over every object of every resource:
// which objects name which owners. It is fed by the watch caches and
// decides nothing itself beyond which objects to look at: workers verify
// with live reads before they write. Safe for concurrent use.
type gcGraph struct {
	mu    sync.Mutex
	nodes map[types.UID]*gcNode
	// dependents indexes the nodes by the uids they name as owners; an
	// owner uid may have no node (never seen, or gone).
	dependents map[types.UID]map[types.UID]struct{}
}

func newGCGraph() *gcGraph {
	return &gcGraph{nodes: map[types.UID]*gcNode{}, dependents: map[types.UID]map[types.UID]struct{}{}}
}

// observe records n (added or changed) and returns what is to be looked at
// because of the change:
//   - n itself when it names an owner the graph has not seen where the
//     reference points, or that is being deleted (a dangling reference, or
//     a dependent of an owner that waits for it);
//   - n and its dependents when it starts deleting them in the foreground;
//   - n's orphaning when it starts to orphan its dependents;
//   - the foreground-deleting owners n stopped naming, or stopped blocking,
//     which may now be finished.
func (g *gcGraph) observe(n *gcNode) []gcWork {
	g.mu.Lock()
	defer g.mu.Unlock()
	old := g.nodes[n.UID]
	g.nodes[n.UID] = n
	var work []gcWork
	var oldOwners []metav1.OwnerReference
	if old != nil {
		oldOwners = old.Owners
	}
	for _, ref := range oldOwners {
		cur := ownerRef(n.Owners, ref.UID)
		if cur == nil {
			g.unlink(ref.UID, n.UID)
		}
		if (cur == nil || !blocks(cur)) && blocks(&ref) {
			work = g.appendIfForeground(work, ref.UID)
		}
	}
	look := false
	for _, ref := range n.Owners {
		g.link(ref.UID, n.UID)
		owner := g.nodes[ref.UID]
		// An owner seen elsewhere than the reference says (another
		// namespace, another name) is not the owner: the lookup will
		// find the reference dangling.
		if owner == nil || owner.Deleting || owner.Name != ref.Name ||
			(owner.Namespace != "" && owner.Namespace != n.Namespace) {
			look = true
		}
	}
	if look && (old == nil || !reflect.DeepEqual(old.Owners, n.Owners) || old.Deleting != n.Deleting) {
		work = append(work, gcWork{UID: n.UID})
	}
	if n.Deleting && n.Foreground && (old == nil || !old.Foreground || !old.Deleting) {
		for dep := range g.dependents[n.UID] {
			work = append(work, gcWork{UID: dep})
		}
		work = append(work, gcWork{UID: n.UID})
	}
	if n.Deleting && n.Orphan && (old == nil || !old.Orphan || !old.Deleting) {
		work = append(work, gcWork{UID: n.UID, Orphan: true})
	}
	return work
}

// remove forgets the object uid (deleted) and returns what is to be looked
// at: its dependents, which may have lost their last owner, and the owners
// deleting in the foreground that it blocked.
func (g *gcGraph) remove(uid types.UID) []gcWork {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := g.nodes[uid]
	if n == nil {
		return nil
	}
	delete(g.nodes, uid)
	var work []gcWork
	for dep := range g.dependents[uid] {
		work = append(work, gcWork{UID: dep})
	}
	for _, ref := range n.Owners {
		g.unlink(ref.UID, uid)
		work = g.appendIfForeground(work, ref.UID)
	}
	return work
}

// node returns the node of uid, or nil. Nodes are never modified once in
// the graph (observe replaces them), so the caller may read it unlocked.
func (g *gcGraph) node(uid types.UID) *gcNode {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.nodes[uid]
}

// dependentsOf returns the nodes naming uid as an owner; with blocking,
// only those whose reference blocks the owner's deletion.
func (g *gcGraph) dependentsOf(uid types.UID, blocking bool) []*gcNode {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []*gcNode
	for dep := range g.dependents[uid] {
		n := g.nodes[dep]
		if n == nil {
			continue
		}
		if blocking && !blocks(ownerRef(n.Owners, uid)) {
			continue
		}
		out = append(out, n)
	}
	return out
}

// uidsOf returns the uids of the nodes of resource r.
func (g *gcGraph) uidsOf(r schema.GroupResource) []types.UID {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []types.UID
	for uid, n := range g.nodes {
		if n.Resource == r {
			out = append(out, uid)
		}
	}
	return out
}

func (g *gcGraph) appendIfForeground(work []gcWork, owner types.UID) []gcWork {
	if o := g.nodes[owner]; o != nil && o.Deleting && o.Foreground {
		work = append(work, gcWork{UID: owner})
	}
	return work
}

func (g *gcGraph) link(owner, dep types.UID) {
	m := g.dependents[owner]
	if m == nil {
		m = map[types.UID]struct{}{}
		g.dependents[owner] = m
	}
	m[dep] = struct{}{}
}

func (g *gcGraph) unlink(owner, dep types.UID) {
	m := g.dependents[owner]
	delete(m, dep)
	if len(m) == 0 {
		delete(g.dependents, owner)
	}
}

// ownerRef returns the reference to uid in refs, or nil.
func ownerRef(refs []metav1.OwnerReference, uid types.UID) *metav1.OwnerReference {
	for i := range refs {
		if refs[i].UID == uid {
			return &refs[i]
		}
	}
	return nil
}

func blocks(ref *metav1.OwnerReference) bool {
	return ref != nil && ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion
}
