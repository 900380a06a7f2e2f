package conversion

import (
	"context"
	"fmt"
	"sync"

	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/registry"
)

// Typed converts the objects of a built-in whose versions have Go types of
// their own (CRDs in apiextensions.k8s.io v1beta1 and v1; events.k8s.io
// events, stored as core events) with the built-in's own conversion
// functions.
type Typed struct {
	Def *registry.Definition
	VC  registry.VersionConverter
	// Cache, when not nil, keeps the conversions of stored objects by key,
	// version and revision, so that the watchers of one version share one
	// conversion of each event, as the watch cache shares one encoding.
	Cache *Cache
}

// NewTyped returns def's Typed converter with a cache of cacheBytes, for
// Definition.Converter; it is nil when def's hooks convert nothing.
func NewTyped(def *registry.Definition, cacheBytes int) Converter {
	vc, ok := def.Hooks.(registry.VersionConverter)
	if !ok {
		return nil
	}
	return Typed{Def: def, VC: vc, Cache: NewCache(cacheBytes)}
}

// Convert implements Converter: objects convert to the storage form when
// to is the stored apiVersion, else from it (stored objects are always in
// that form; request bodies are the others).
func (t Typed) Convert(_ context.Context, to string, objs []Object) ([][]byte, error) {
	out := make([][]byte, len(objs))
	storage := t.Def.StorageAPIVersion()
	for i, o := range objs {
		if from, ok := o.headAPIVersion(); ok && from == to {
			out[i] = o.Bytes()
			continue
		}
		k := cacheKey{o.Key, to}
		if t.Cache != nil && o.Key != "" {
			if b, ok := t.Cache.get(k, o.Revision); ok {
				out[i] = b
				continue
			}
		}
		obj, err := Decode(o.Bytes())
		if err != nil {
			return nil, err
		}
		if to == storage {
			from, _ := obj["apiVersion"].(string)
			if obj, err = t.VC.ToStorage(obj, version(from)); err != nil {
				return nil, err
			}
		} else {
			obj = t.VC.FromStorage(obj, version(to))
		}
		if out[i], err = codec.Marshal(obj); err != nil {
			return nil, fmt.Errorf("encoding converted object: %w", err)
		}
		if t.Cache != nil && o.Key != "" {
			t.Cache.put(k, o.Revision, out[i])
		}
	}
	return out, nil
}

// Cache keeps converted stored objects by storage key and target
// apiVersion, with the revision they were converted at; safe for
// concurrent use. The bytes it returns are shared: callers must not
// modify them.
type Cache struct {
	mu sync.Mutex // guards c
	c  resultCache
}

// NewCache returns a cache of at most maxBytes of converted objects.
func NewCache(maxBytes int) *Cache {
	return &Cache{c: resultCache{max: maxBytes, m: map[cacheKey]cached{}}}
}

func (c *Cache) get(k cacheKey, rev int64) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.c.get(k, rev)
}

func (c *Cache) put(k cacheKey, rev int64, b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.c.put(k, rev, b, nil)
}
