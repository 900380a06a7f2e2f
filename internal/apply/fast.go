package apply

import (
	"maps"
	"slices"
	"strings"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// The fast path of Update. An update usually changes a few fields of an
// object whose entries were all recorded at the request's version, and
// most entries own none of what changed. Structured-merge-diff's updater
// would decode every entry's field set, take the changed fields out of
// each, and encode them all again; here an entry is looked at in its
// FieldsV1 form, and decoded only when it owns a changed field. The
// result is the one the updater computes (Manager.update runs it when the
// fast path does not apply): every entry loses the fields the write
// changed or removed, and the writer's entry gains those it changed or
// added, with the time of the write.

// rawEntry is a managedFields entry as stored, not decoded.
type rawEntry struct {
	key    string
	e      map[string]any
	fields map[string]any
	op     string
	time   string
}

// updateFast computes the managedFields after a write by self (an Update
// manager key) that made the changes c (already filtered by the reset
// fields) to an object with the entries list. It reports false when the
// fast path does not apply: an entry at another version (the updater
// converts the object to compare there), an entry it cannot read, or more
// Update managers than the cap.
func updateFast(list []any, c *typed.Comparison, apiVersion, self string) ([]any, bool) {
	entries := make([]rawEntry, 0, len(list)+1)
	updaters := 0
	for _, x := range list {
		e, ok := x.(map[string]any)
		if !ok {
			return nil, false
		}
		var id managerID
		id.Manager, _ = e["manager"].(string)
		id.Operation, _ = e["operation"].(string)
		id.APIVersion, _ = e["apiVersion"].(string)
		id.Subresource, _ = e["subresource"].(string)
		fields, _ := e["fieldsV1"].(map[string]any)
		if id.APIVersion != apiVersion || (id.Operation != opApply && id.Operation != opUpdate) || e["fieldsType"] != "FieldsV1" || fields == nil {
			return nil, false
		}
		t, _ := e["time"].(string)
		if id.Operation == opUpdate {
			updaters++
		}
		entries = append(entries, rawEntry{key: id.String(), e: e, fields: fields, op: id.Operation, time: t})
	}

	changed := c.Modified.Union(c.Added).Union(c.Removed)
	cur := c.Modified.Union(c.Added).Difference(strippedFields)
	var paths []keyPath
	if len(entries) > 0 {
		paths = keyPaths(changed) // a create's are many, and never looked at
	}

	out := entries[:0]
	var prev *rawEntry
	for i := range entries {
		r := entries[i]
		if r.key == self && !cur.Empty() {
			prev = &r // a copy: out reuses entries' array
			continue
		}
		if !ownsAny(r.fields, paths) {
			out = append(out, r)
			continue
		}
		s, err := decodeFields(r.fields)
		if err != nil {
			return nil, false
		}
		if s = s.Difference(changed); s.Empty() {
			continue
		}
		f, err := encodeFields(s)
		if err != nil {
			return nil, false
		}
		out = append(out, withFields(r, f))
	}
	if !cur.Empty() {
		r, ok := mergeSelf(prev, self, apiVersion, changed, cur, paths)
		if !ok {
			return nil, false
		}
		if prev == nil {
			updaters++
		}
		out = append(out, r)
	}
	if updaters > MaxUpdateManagers {
		return nil, false
	}
	return sortedEntries(out), true
}

// mergeSelf is the writer's entry after the write: what it owned and the
// write left alone, and what the write changed or added (cur).
func mergeSelf(prev *rawEntry, self, apiVersion string, changed, cur *fieldpath.Set, paths []keyPath) (rawEntry, bool) {
	t := now()
	if prev != nil && ownsExactly(prev.fields, paths, cur) {
		// The usual update: the writer owned what it changed already.
		r := *prev
		if r.time != t {
			r.e = maps.Clone(r.e)
			r.e["time"] = t
			r.time = t
		}
		return r, true
	}
	s := cur
	if prev != nil {
		p, err := decodeFields(prev.fields)
		if err != nil {
			return rawEntry{}, false
		}
		s = p.Difference(changed).Union(cur)
	}
	f, err := encodeFields(s)
	if err != nil {
		return rawEntry{}, false
	}
	return rawEntry{key: self, e: newEntry(self, apiVersion, t, f), fields: f, op: opUpdate, time: t}, true
}

// newEntry is the Update entry of the manager key at time t.
func newEntry(key, apiVersion, t string, fields map[string]any) map[string]any {
	id := parseManagerID(key)
	e := map[string]any{"manager": id.Manager, "operation": opUpdate, "apiVersion": apiVersion, "time": t, "fieldsType": "FieldsV1", "fieldsV1": fields}
	if id.Subresource != "" {
		e["subresource"] = id.Subresource
	}
	return e
}

// keyPath is a field path as the keys of a FieldsV1 object.
type keyPath struct {
	path fieldpath.Path
	keys []string
}

func keyPaths(s *fieldpath.Set) []keyPath {
	var out []keyPath
	s.Iterate(func(p fieldpath.Path) {
		if kp, ok := newKeyPath(p.Copy()); ok {
			out = append(out, kp)
		}
	})
	return out
}

// newKeyPath is the keyPath of p, which it keeps; false when an element
// of p cannot be written as a key.
func newKeyPath(p fieldpath.Path) (keyPath, bool) {
	kp := keyPath{path: p, keys: make([]string, len(p))}
	for i, pe := range p {
		if pe.FieldName != nil {
			// As SerializePathElement writes a field name, without its
			// pooled JSON stream.
			kp.keys[i] = "f:" + *pe.FieldName
			continue
		}
		k, err := fieldpath.SerializePathElement(pe)
		if err != nil {
			return keyPath{}, false
		}
		kp.keys[i] = k
	}
	return kp, true
}

// hasMember reports whether the FieldsV1 object f has the path as a member.
func hasMember(f map[string]any, keys []string) bool {
	for i, k := range keys {
		child, ok := f[k].(map[string]any)
		if !ok {
			return false
		}
		if i == len(keys)-1 {
			_, self := child["."]
			return self || len(child) == 0
		}
		f = child
	}
	return false
}

func ownsAny(f map[string]any, paths []keyPath) bool {
	for _, p := range paths {
		if hasMember(f, p.keys) {
			return true
		}
	}
	return false
}

// ownsExactly reports whether f, among paths, owns those in cur and no
// other: then taking paths out and putting cur back leaves f as it is.
func ownsExactly(f map[string]any, paths []keyPath, cur *fieldpath.Set) bool {
	for _, p := range paths {
		if hasMember(f, p.keys) != cur.Has(p.path) {
			return false
		}
	}
	return true
}

func withFields(r rawEntry, f map[string]any) rawEntry {
	r.e = maps.Clone(r.e)
	r.e["fieldsV1"] = f
	r.fields = f
	return r
}

// sortedEntries returns the entries in upstream's order: by operation
// (Apply before Update), time, manager, apiVersion and subresource; nil
// when there are none.
func sortedEntries(rs []rawEntry) []any {
	if len(rs) == 0 {
		return nil
	}
	type sortable struct {
		op, manager, apiVersion, sub string
		secs                         int64
		e                            map[string]any
	}
	s := make([]sortable, len(rs))
	for i, r := range rs {
		id := parseManagerID(r.key)
		av, _ := r.e["apiVersion"].(string)
		s[i] = sortable{op: r.op, manager: id.Manager, apiVersion: av, sub: id.Subresource, secs: unixSeconds(r.time), e: r.e}
	}
	slices.SortFunc(s, func(a, b sortable) int {
		return compareEntries(a.op, b.op, a.secs, b.secs, a.manager, b.manager, a.apiVersion, b.apiVersion, a.sub, b.sub)
	})
	out := make([]any, len(s))
	for i := range s {
		out[i] = s[i].e
	}
	return out
}

// compareEntries orders two entries as upstream sorts them: by operation,
// time (in seconds), manager, apiVersion and subresource.
func compareEntries(opA, opB string, secsA, secsB int64, managerA, managerB, versionA, versionB, subA, subB string) int {
	if c := strings.Compare(opA, opB); c != 0 {
		return c
	}
	if secsA != secsB {
		if secsA < secsB {
			return -1
		}
		return 1
	}
	if c := strings.Compare(managerA, managerB); c != 0 {
		return c
	}
	if c := strings.Compare(versionA, versionB); c != 0 {
		return c
	}
	return strings.Compare(subA, subB)
}
