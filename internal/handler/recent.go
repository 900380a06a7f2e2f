package handler

import (
	"sync"

	"github.com/crdserver/crdserver/internal/registry"
	"github.com/crdserver/crdserver/internal/watchcache"
)

// recentObjects keeps the protobuf encodings of the objects of recent
// watch events, so that the watchers of one event in one form encode it
// once between them, as upstream's watch cache does: they take each event
// within moments of each other. It keeps the latest ones, up to
// recentEntries and recentBytes; an encoding too large for it is not
// kept, and one that has gone is encoded again.
type recentObjects struct {
	mu    sync.Mutex
	m     map[recentKey][]byte
	order []recentKey // oldest first, from head
	head  int
	size  int
}

// recentKey names an event's object in one form: the cached item, the
// version the watch reads (its object may be converted to it) and the
// metadata form asked for, if any.
type recentKey struct {
	item    *watchcache.Item
	version *registry.Version
	as      string
	asV     string
}

const (
	recentEntries = 1024
	recentBytes   = 8 << 20
	recentLargest = 256 << 10
)

func (r *recentObjects) get(k recentKey) ([]byte, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, ok := r.m[k]
	return b, ok
}

// put keeps b, which must not be modified afterwards, for k.
func (r *recentObjects) put(k recentKey, b []byte) {
	if len(b) > recentLargest {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[recentKey][]byte{}
	}
	if _, ok := r.m[k]; ok {
		return // another watcher encoded it too
	}
	for len(r.order)-r.head >= recentEntries || r.size+len(b) > recentBytes {
		old := r.order[r.head]
		r.order[r.head] = recentKey{}
		r.head++
		r.size -= len(r.m[old])
		delete(r.m, old)
	}
	if r.head > len(r.order)/2 {
		r.order = append(r.order[:0], r.order[r.head:]...)
		r.head = 0
	}
	r.m[k] = b
	r.order = append(r.order, k)
	r.size += len(b)
}
