package registry

import (
	"sort"
	"sync/atomic"
)

// Table is an immutable snapshot of every served definition.
type Table struct {
	// Generation increases with every swap; caches of derived documents
	// (discovery, OpenAPI) key on it.
	Generation int64
	defs       []*Definition
	byGR       map[grKey]*Definition
	// sharing holds, by storage, the definitions of a storage that more
	// than one serves (Definition.StoredAs).
	sharing map[grKey][]*Definition
	// builtinGroups are the groups a built-in serves resources in.
	builtinGroups map[string]bool
}

type grKey struct{ group, resource string }

// NewTable builds a table from definitions. Later definitions with the same
// group and resource replace earlier ones.
func NewTable(generation int64, defs []*Definition) *Table {
	t := &Table{Generation: generation, byGR: make(map[grKey]*Definition, len(defs)), builtinGroups: map[string]bool{"": true}}
	for _, d := range defs {
		t.byGR[grKey{d.Group, d.Resource}] = d
	}
	for _, d := range t.byGR {
		if !d.Custom() {
			t.builtinGroups[d.Group] = true
		}
	}
	for _, d := range t.byGR {
		t.defs = append(t.defs, d)
	}
	for _, d := range t.byGR {
		if d.StoredAs == nil {
			continue
		}
		if t.sharing == nil {
			t.sharing = map[grKey][]*Definition{}
		}
		k := grKey{d.StoredAs.Group, d.StoredAs.Resource}
		if len(t.sharing[k]) == 0 {
			if owner, ok := t.byGR[k]; ok {
				t.sharing[k] = append(t.sharing[k], owner)
			}
		}
		t.sharing[k] = append(t.sharing[k], d)
	}
	sort.Slice(t.defs, func(i, j int) bool {
		if t.defs[i].Group != t.defs[j].Group {
			return t.defs[i].Group < t.defs[j].Group
		}
		return t.defs[i].Resource < t.defs[j].Resource
	})
	return t
}

// Lookup returns the definition of group/resource.
func (t *Table) Lookup(group, resource string) (*Definition, bool) {
	d, ok := t.byGR[grKey{group, resource}]
	return d, ok
}

// SharingStorage returns the other definitions served from d's storage
// (see Definition.StoredAs): nil for most.
func (t *Table) SharingStorage(d *Definition) []*Definition {
	sgr := d.StorageGroupResource()
	all := t.sharing[grKey{sgr.Group, sgr.Resource}]
	if len(all) == 0 {
		return nil
	}
	out := make([]*Definition, 0, len(all)-1)
	for _, o := range all {
		if o != d {
			out = append(out, o)
		}
	}
	return out
}

// BuiltinGroup reports whether a built-in serves resources in group (the
// core group always counts). Upstream's built-in groups are served by its
// REST router, which answers a path it does not know with a JSON Status;
// any other path under /apis falls through to a plain-text 404.
func (t *Table) BuiltinGroup(group string) bool { return t.builtinGroups[group] }

// Definitions returns every definition, sorted by group then resource. The
// slice must not be modified.
func (t *Table) Definitions() []*Definition { return t.defs }

// Registry publishes the current Table. Readers call Current once per request
// and use that snapshot throughout.
type Registry struct {
	cur atomic.Pointer[Table]
}

// New returns a registry serving defs.
func New(defs []*Definition) *Registry {
	r := &Registry{}
	r.cur.Store(NewTable(1, defs))
	return r
}

// Current returns the table in force.
func (r *Registry) Current() *Table { return r.cur.Load() }

// Swap replaces the table with one built from defs and returns it.
func (r *Registry) Swap(defs []*Definition) *Table {
	for {
		old := r.cur.Load()
		t := NewTable(old.Generation+1, defs)
		if r.cur.CompareAndSwap(old, t) {
			return t
		}
	}
}
