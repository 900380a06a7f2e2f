package apply

import (
	"sync"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// applyAgainRaw is applyAgain for a live object whose managedFields are
// kept encoded (the handler's form for the object a write starts from):
// the entries are read as they are, their field sets taken from
// sharedSets rather than decoded, and written back as they were, but for
// the applier's new time. ok is false when it did not apply; Apply then
// decodes the entries and goes its way, which also reports what is wrong
// with them or with config. declined reports that again looked at the
// apply and found it not of its kind: applyAgain would find the same.
func (m *Manager) applyAgainRaw(live, config map[string]any, manager string) (obj map[string]any, ok, declined bool) {
	raw, isRaw := rawManagedFields(live)
	if m.slow || !isRaw || manager == kubectlManager && hasLastApplied(live) {
		// The last-applied annotation of an object kubectl once applied
		// client-side follows its applies: Apply's way keeps it.
		return nil, false, false
	}
	pt, err := m.Types.Version(m.GroupVersion.Version)
	if err != nil {
		return nil, false, false
	}
	var entries []encodedEntry
	version := m.apiVersion()
	fields := fieldpath.ManagedFields{}
	settled := map[string]bool{}
	read := true
	eachEntry(raw, func(e encodedEntry, ok bool) bool {
		if _, dup := fields[e.key]; !ok || dup || e.version != version {
			read = false
			return false
		}
		set, clean, ok := sharedSets.get(pt, e.fields)
		if !ok {
			read = false
			return false
		}
		e.pos = len(entries)
		entries = append(entries, e)
		fields[e.key] = fieldpath.NewVersionedSet(set, fieldpath.APIVersion(e.version), e.op == opApply)
		settled[e.key] = clean
		return true
	})
	id := managerID{Manager: manager, Operation: opApply, Subresource: m.Subresource}.String()
	if _, applied := fields[id]; !read || !applied {
		// Not an applier applying again: spare typing config twice.
		return nil, false, false
	}
	if _, err := m.typed(config); err != nil {
		return nil, false, false
	}
	obj, changed, ok := m.again(pt, live, config, fields, id, func(key string, _ *fieldpath.Set) bool { return settled[key] })
	if !ok {
		return nil, false, true
	}
	if changed {
		for i := range entries {
			if entries[i].key != id {
				continue
			}
			if !entries[i].timeFound {
				return nil, false, false
			}
			entries[i].newTime = now()
		}
	}
	// obj's metadata is a copy (see again): live holds managedFields.
	out, _ := joinSorted(raw, entries, len(entries))
	metadata(obj)["managedFields"] = out
	return obj, true, false
}

// sharedSets holds the field sets of the FieldsV1 that applies read
// encoded, by the type they are of: objects written alike hold the same
// bytes, and decoding them, with the schema's reconciliation, cost an
// apply as much as the rest of its work on them. The sets are shared by
// every apply that reads them, so only read.
var sharedSets = fieldSetCache{byType: map[*typed.ParseableType]map[string]cachedSet{}}

// maxSharedSets bounds sharedSets: when it holds that many, it starts
// again.
const maxSharedSets = 1024

type fieldSetCache struct {
	mu     sync.Mutex
	byType map[*typed.ParseableType]map[string]cachedSet
	n      int
}

// cachedSet is a FieldsV1's set, and whether the schema's reconciliation
// leaves it as it is.
type cachedSet struct {
	set     *fieldpath.Set
	settled bool
}

// get returns the set of the FieldsV1 f, of type pt, and whether the
// reconciliation with pt's schema leaves it as it is; ok is false when f
// does not decode.
func (c *fieldSetCache) get(pt *typed.ParseableType, f []byte) (set *fieldpath.Set, settled, ok bool) {
	c.mu.Lock()
	cs, found := c.byType[pt][string(f)]
	c.mu.Unlock()
	if found {
		return cs.set, cs.settled, true
	}
	set, err := decodeEncodedFields(f)
	if err != nil {
		return nil, false, false
	}
	// The reconciliation reads the schema only, not the object.
	r, err := typed.ReconcileFieldSetWithSchema(set, typedValue(pt, map[string]any{}))
	cs = cachedSet{set: set, settled: err == nil && r == nil}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n >= maxSharedSets {
		clear(c.byType)
		c.n = 0
	}
	byF := c.byType[pt]
	if byF == nil {
		byF = map[string]cachedSet{}
		c.byType[pt] = byF
	}
	if _, dup := byF[string(f)]; !dup {
		byF[string(f)] = cs
		c.n++
	}
	return cs.set, cs.settled, true
}
