package apply

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/merge"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"

	"github.com/crdserver/crdserver/internal/codec"
)

// MaxUpdateManagers is how many Update entries an object keeps; older
// ones are merged into one "ancient-changes" entry per apiVersion, as
// upstream caps them.
const MaxUpdateManagers = 10

// Convert converts an object to another apiVersion of its resource, as
// the server converts objects (None or webhook conversion).
type Convert func(obj map[string]any, apiVersion string) (map[string]any, error)

// Manager records managed fields for writes to one resource version
// through one endpoint (the resource or a subresource).
type Manager struct {
	Types *Types
	// GroupVersion is the request's; Kind the resource's kind.
	GroupVersion schema.GroupVersion
	Kind         string
	// Subresource is "" for the resource itself, else the subresource
	// ("status") that entries record.
	Subresource string
	// Reset are fields this endpoint does not write (status through the
	// resource, everything but status through /status), per apiVersion:
	// nobody gains their ownership here.
	Reset map[fieldpath.APIVersion]*fieldpath.Set
	// Convert converts objects to the versions other managers' entries
	// were recorded at; nil converts as None does (only apiVersion changes).
	Convert Convert
	// Peers are the types of the other resources served from this one's
	// storage, by group (core events and events.k8s.io events): entries
	// recorded through them are kept and compared at their versions,
	// converted with Convert. Entries of any other group are dropped.
	Peers map[string]*Types
	// Zero is the object a create is compared with: for a built-in with a
	// Go type, a new object of that type as it encodes (see
	// registry.Zeroer), which upstream's field manager compares a create
	// with; nil for an empty one. Shared, never modified.
	Zero map[string]any

	// slow turns the fast paths off (of updates, and keepingAll's of
	// applies), for tests that compare both ways.
	slow bool
}

func (m *Manager) apiVersion() string { return m.GroupVersion.String() }

// Update records what a create, update or patch by manager changed from
// live to obj, and sets obj's metadata.managedFields accordingly. live is
// nil for a create. As upstream's, it never fails a write: when the
// fields cannot be worked out, obj keeps live's managedFields. When it
// recorded them encoded, it returns what it knows of them (else nil).
func (m *Manager) Update(live, obj map[string]any, manager string) *Written {
	w, err := m.update(live, obj, manager)
	if err != nil {
		setManagedFields(obj, managedFieldsOf(live))
		return nil
	}
	return w
}

func (m *Manager) update(live, obj map[string]any, manager string) (*Written, error) {
	if raw, ok := rawManagedFields(live); ok {
		if done, w, err := m.updateRaw(live, obj, raw, manager); done || err != nil {
			return w, err
		}
	}
	if err := m.updateDecoded(live, obj, manager); err != nil {
		return nil, err
	}
	if live == nil && m.Zero != nil {
		m.disownZeroFields(obj, manager)
	}
	return nil, nil
}

// updateDecoded is update from live's managedFields decoded.
func (m *Manager) updateDecoded(live, obj map[string]any, manager string) error {
	list, fromLive := m.startingEntries(live, obj)
	setManagedFields(obj, nil)
	if live != nil && len(list) == 0 {
		// An existing object without managed fields (a client cleared
		// them) is not tracked again until the next apply, as upstream's
		// skip-non-applied step decides.
		return nil
	}
	if manager == "" {
		manager = "unknown"
	}
	id := managerID{Manager: manager, Operation: opUpdate, APIVersion: m.apiVersion(), Subresource: m.Subresource}.String()
	v, err := m.Types.version(m.GroupVersion.Version)
	if err != nil {
		return err
	}
	pt := v.pt
	if live == nil && len(list) == 0 && !m.slow {
		// A create: see createdFields.
		if f, ok := createdFields(pt.Schema, pt.TypeRef, obj, m.Reset[fieldpath.APIVersion(m.apiVersion())]); ok && len(f) > 0 {
			setManagedFields(obj, []any{newEntry(id, m.apiVersion(), now(), f)})
			return nil
		}
	}
	if live == nil {
		live = map[string]any{"apiVersion": m.apiVersion(), "kind": m.Kind}
	}
	if fromLive && !m.slow {
		// Entries the server recorded itself can take the fast path.
		c, err := m.compare(v, live, obj)
		if err != nil {
			return err
		}
		if m.Reset != nil {
			c = c.FilterFields(fieldpath.NewExcludeFilterSetMap(m.Reset)[fieldpath.APIVersion(m.apiVersion())])
		}
		if out, ok := updateFast(list, c, m.apiVersion(), id); ok {
			setManagedFields(obj, out)
			return nil
		}
	}
	// Both objects are typed without validating them against the types:
	// the write validates obj against its schema anyway, and a typing
	// walk would cost as much as the comparison.
	liveT := typedValue(pt, shallowWithoutManagedFields(live))
	objT := typedValue(pt, shallowWithoutManagedFields(obj))
	mf, err := decodeManaged(list)
	if err != nil {
		mf = emptyManaged()
	}

	// The change is recorded under a temporary name, so that the
	// manager's own earlier entry loses what this write changed like any
	// other entry does; what it owned and this write kept stays its own.
	const self = "current-operation"
	_, fields, err := m.updater().Update(liveT, objT, fieldpath.APIVersion(m.apiVersion()), mf.fields, self)
	if err != nil {
		return err
	}
	stripMeta(fields, self)
	if vs, ok := fields[self]; ok {
		delete(fields, self)
		if prev, ok := fields[id]; ok {
			vs = fieldpath.NewVersionedSet(vs.Set().Union(prev.Set()), vs.APIVersion(), vs.Applied())
		}
		fields[id] = vs
		mf.times[id] = now()
	}
	mf.fields = fields
	capUpdateManagers(mf)
	return m.encodeInto(obj, mf)
}

// compare returns what an update from live to obj modified, added and
// removed, their managedFields left out.
func (m *Manager) compare(v *versionTypes, live, obj map[string]any) (*typed.Comparison, error) {
	if c, ok := scalarChanges(v.walk, live, obj); ok {
		return c, nil
	}
	pt := v.pt
	// Only what changed is compared: the rest would be walked for nothing.
	a, b := changedOnly(pt.Schema, pt.TypeRef, shallowWithoutManagedFields(live), shallowWithoutManagedFields(obj))
	return typedValue(pt, a).Compare(typedValue(pt, b))
}

// changes is compare as the list of the fields changed, added and
// removed.
func (m *Manager) changes(v *versionTypes, live, obj map[string]any) ([]fieldChange, error) {
	if changes, ok := scalarChangeList(v.walk, live, obj); ok {
		return changes, nil
	}
	pt := v.pt
	a, b := changedOnly(pt.Schema, pt.TypeRef, shallowWithoutManagedFields(live), shallowWithoutManagedFields(obj))
	c, err := typedValue(pt, a).Compare(typedValue(pt, b))
	if err != nil {
		return nil, err
	}
	return changesOf(c), nil
}

// startingEntries returns the managedFields entries an update starts
// from: those the client sent, when it sent valid ones to the resource
// itself (a client may rewrite them, or clear them with an empty list),
// else live's. fromLive reports entries the server recorded (live's, or
// the client's when they are live's unchanged, as clients that update
// what they read send them).
func (m *Manager) startingEntries(live, obj map[string]any) (list []any, fromLive bool) {
	liveList := managedFieldsOf(live)
	if m.Subresource != "" {
		return liveList, true
	}
	sent, present := metadata(obj)["managedFields"]
	sentList := entriesOf(sent)
	switch {
	case present && isReset(sentList):
		return nil, true
	case len(sentList) == 0:
		return liveList, true
	case jsonEqual(sentList, liveList):
		return liveList, true
	}
	if mf, err := decodeManaged(sentList); err == nil && len(mf.fields) > 0 {
		return sentList, false
	}
	return liveList, true
}

// jsonEqual compares decoded JSON values.
func jsonEqual(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !jsonEqual(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !jsonEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	default:
		return a == b
	}
}

// isReset reports whether a client's managedFields asks to clear them:
// an empty list, or one empty entry.
func isReset(list []any) bool {
	switch len(list) {
	case 0:
		return list != nil
	case 1:
		e, ok := list[0].(map[string]any)
		return ok && len(e) == 0
	}
	return false
}

// Apply merges the applied configuration patch into live (nil when the
// object does not exist yet) for manager, and returns the merged object
// with its managedFields. A field another manager owns with a different
// value is a conflict (409) unless force. The merged object is live
// itself when the apply changes nothing.
func (m *Manager) Apply(live, patch map[string]any, manager string, force bool) (map[string]any, error) {
	apiVersion, _ := patch["apiVersion"].(string)
	kind, _ := patch["kind"].(string)
	if gv, err := schema.ParseGroupVersion(apiVersion); err != nil || kind != m.Kind || gv != m.GroupVersion {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid object type: %v", gvkOf(apiVersion, kind)))
	}
	if _, ok := metadata(patch)["managedFields"]; ok {
		return nil, apierrors.NewBadRequest("metadata.managedFields must be nil")
	}
	exists := live != nil
	again := exists
	if exists {
		obj, ok, declined := m.applyAgainRaw(live, patch, manager)
		if ok {
			return obj, nil
		}
		again = !declined
	}
	if live == nil {
		live = map[string]any{}
	}
	mf, err := decodeManaged(managedFieldsOf(live))
	if err != nil {
		return nil, fmt.Errorf("failed to decode managed fields: %w", err)
	}
	if exists && len(mf.fields) == 0 {
		if mf, err = m.beforeFirstApply(live); err != nil {
			return nil, fmt.Errorf("failed to create manager for existing fields: %w", err)
		}
	}
	patchT, err := m.typed(patch)
	if err != nil {
		// The client's configuration does not fit the schema (a field it
		// does not declare, duplicate list-map keys). Upstream answers
		// this message as a 500 (kubernetes/kubernetes#139253, whose fix
		// makes it a 400); it is the client's input, so a 400 here.
		return nil, apierrors.NewBadRequest(fmt.Sprintf("failed to create typed patch object (%s): %v", describe(patch, apiVersion, kind), err))
	}
	id := managerID{Manager: manager, Operation: opApply, Subresource: m.Subresource}.String()
	if again {
		pt, err := m.Types.Version(m.GroupVersion.Version)
		if err != nil {
			return nil, err
		}
		if obj, changed, ok := m.applyAgain(pt, live, patch, mf, id); ok {
			if changed {
				mf.times[id] = now()
			}
			return m.applied(obj, patch, mf, manager)
		}
	}
	liveT, err := m.typed(live, typed.AllowDuplicates)
	if err != nil {
		return nil, fmt.Errorf("failed to create typed live object (%s): %w", describe(live, apiVersion, kind), err)
	}
	u := m.updater()
	managers := m.keepingAll(u, patchT, mf.fields, id)
	merged, fields, err := u.Apply(liveT, patchT, fieldpath.APIVersion(m.apiVersion()), managers, id, force)
	var conflicts merge.Conflicts
	if errors.As(err, &conflicts) && manager == kubectlManager {
		// kubectl moving from client-side apply: fields it last applied
		// client-side, and left as it applied them, are its own.
		if conflicts = m.notLastApplied(live, liveT, conflicts); len(conflicts) == 0 {
			merged, fields, err = u.Apply(liveT, patchT, fieldpath.APIVersion(m.apiVersion()), managers, id, true)
		} else {
			err = conflicts
		}
	}
	if err != nil {
		if errors.As(err, &conflicts) {
			return nil, conflictError(conflicts)
		}
		return nil, err
	}
	stripMeta(fields, id)
	mf.fields = fields
	var obj map[string]any
	if merged == nil {
		obj = shallowWithoutManagedFields(live)
	} else {
		mf.times[id] = now()
		u, ok := merged.AsValue().Unstructured().(map[string]any)
		if !ok {
			return nil, fmt.Errorf("merged object is not an object")
		}
		obj = u
	}
	return m.applied(obj, patch, mf, manager)
}

// applied finishes Apply of patch by manager, merged into obj with the
// managed fields mf.
func (m *Manager) applied(obj, patch map[string]any, mf *managed, manager string) (map[string]any, error) {
	var err error
	if manager == kubectlManager && hasLastApplied(obj) {
		// The annotation keeps following what kubectl applies, so that
		// going back to client-side apply works.
		if obj, err = withLastApplied(obj, patch); err != nil {
			return nil, err
		}
	}
	if err := m.encodeInto(obj, mf); err != nil {
		return nil, err
	}
	return obj, nil
}

// keepingAll returns managers for u.Apply of config by the applier id:
// without the applier's last entry when config still sets every field
// that entry holds, at the same version. Apply's prune then has nothing
// to remove (it removes fields the applier applied last time and no
// longer does), and skips its work, which takes its walks of the merged
// object (a fifth of an apply) whatever it finds; the entry is replaced
// by config's fields either way. Otherwise managers as they are.
func (m *Manager) keepingAll(u *merge.Updater, config *typed.TypedValue, managers fieldpath.ManagedFields, id string) fieldpath.ManagedFields {
	last, ok := managers[id]
	version := fieldpath.APIVersion(m.apiVersion())
	if m.slow || !ok || last.APIVersion() != version || !last.Applied() {
		return managers
	}
	if !m.coveredBy(u, config, last.Set()) {
		return managers
	}
	out := make(fieldpath.ManagedFields, len(managers))
	for k, v := range managers {
		if k != id {
			out[k] = v
		}
	}
	return out
}

// coveredBy reports whether config sets every field of last, as
// structured-merge-diff's Difference of last and config's fields (those
// u does not ignore) finds it.
func (m *Manager) coveredBy(u *merge.Updater, config *typed.TypedValue, last *fieldpath.Set) bool {
	version := fieldpath.APIVersion(m.apiVersion())
	if obj, ok := config.AsValue().Unstructured().(map[string]any); ok {
		switch covers(config.Schema(), config.TypeRef(), obj, last, m.Reset[version]) {
		case covered:
			return true
		case uncovered:
			return false
		}
	}
	set, err := config.ToFieldSet()
	if err != nil {
		return false
	}
	if f := u.IgnoreFilter[version]; f != nil {
		set = f.Filter(set)
	}
	return last.Difference(set).Empty()
}

// beforeFirstApply returns the managed fields of live, an object nobody
// manages, as upstream sets them up before applying to it: every field
// belongs to an Update manager "before-first-apply", so that the apply
// conflicts where it changes a value.
//
// A built-in's live object is typed as upstream types its Go object,
// through the unstructured converter, which leaves out the empty structs
// and maps its omitempty fields hold (a CSR's status {}): they are not
// fields anyone owns.
func (m *Manager) beforeFirstApply(live map[string]any) (*managed, error) {
	obj := withoutManagedFields(live) // update sets obj's managedFields
	if m.Zero != nil {
		obj = withoutEmptyObjects(obj)
	}
	if _, err := m.update(nil, obj, "before-first-apply"); err != nil {
		return nil, err
	}
	return decodeManaged(managedFieldsOf(obj))
}

func (m *Manager) encodeInto(obj map[string]any, mf *managed) error {
	list, err := mf.encode()
	if err != nil {
		return fmt.Errorf("failed to encode managed fields: %w", err)
	}
	setManagedFields(obj, list)
	return nil
}

func (m *Manager) updater() *merge.Updater {
	u := &merge.Updater{Converter: converter{m}}
	if m.Reset != nil {
		u.IgnoreFilter = fieldpath.NewExcludeFilterSetMap(m.Reset)
	}
	return u
}

// typed types obj at the manager's version, without its managedFields,
// which nobody owns and which typing would only walk.
func (m *Manager) typed(obj map[string]any, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	pt, err := m.Types.Version(m.GroupVersion.Version)
	if err != nil {
		return nil, err
	}
	return pt.FromUnstructured(shallowWithoutManagedFields(obj), opts...)
}

// typedValue types obj as pt without checking it against the type.
func typedValue(pt *typed.ParseableType, obj map[string]any) *typed.TypedValue {
	return typed.AsTypedUnvalidated(value.NewValueInterface(obj), pt.Schema, pt.TypeRef)
}

// converter lets structured-merge-diff compare objects at the versions
// other managers' entries were recorded at.
type converter struct{ m *Manager }

func (c converter) Convert(tv *typed.TypedValue, version fieldpath.APIVersion) (*typed.TypedValue, error) {
	gv, err := schema.ParseGroupVersion(string(version))
	if err != nil {
		return nil, err
	}
	obj, _ := tv.AsValue().Unstructured().(map[string]any)
	if av, _ := obj["apiVersion"].(string); av == string(version) {
		return tv, nil
	}
	types := c.m.Types
	if gv.Group != c.m.GroupVersion.Group {
		if types = c.m.Peers[gv.Group]; types == nil {
			return nil, missingVersion(string(version))
		}
	}
	pt, err := types.Version(gv.Version)
	if err != nil {
		return nil, err
	}
	// obj is the typed value's own map: converting must not change it
	// (None conversion sets apiVersion in place), so the converter gets a
	// shallow copy.
	out := maps.Clone(obj)
	if out == nil {
		out = map[string]any{}
	}
	if c.m.Convert != nil && obj != nil {
		if out, err = c.m.Convert(out, string(version)); err != nil {
			return nil, err
		}
	} else {
		out["apiVersion"] = string(version)
	}
	return pt.FromUnstructured(out, typed.AllowDuplicates)
}

func (converter) IsMissingVersionError(err error) bool {
	var mv missingVersionError
	return errors.As(err, &mv)
}

// stripMeta removes from manager's set the fields nobody owns: apiVersion,
// kind and the metadata the server sets (labels, annotations, finalizers
// and ownerReferences stay ownable).
func stripMeta(fields fieldpath.ManagedFields, manager string) {
	vs, ok := fields[manager]
	if !ok {
		return
	}
	s := vs.Set().Difference(strippedFields)
	if s.Empty() {
		delete(fields, manager)
		return
	}
	fields[manager] = fieldpath.NewVersionedSet(s, vs.APIVersion(), vs.Applied())
}

var strippedFields = fieldpath.NewSet(
	fieldpath.MakePathOrDie("apiVersion"),
	fieldpath.MakePathOrDie("kind"),
	fieldpath.MakePathOrDie("metadata"),
	fieldpath.MakePathOrDie("metadata", "name"),
	fieldpath.MakePathOrDie("metadata", "namespace"),
	fieldpath.MakePathOrDie("metadata", "creationTimestamp"),
	fieldpath.MakePathOrDie("metadata", "selfLink"),
	fieldpath.MakePathOrDie("metadata", "uid"),
	fieldpath.MakePathOrDie("metadata", "clusterName"),
	fieldpath.MakePathOrDie("metadata", "generation"),
	fieldpath.MakePathOrDie("metadata", "managedFields"),
	fieldpath.MakePathOrDie("metadata", "resourceVersion"),
)

// capUpdateManagers merges the oldest Update entries beyond
// MaxUpdateManagers into one "ancient-changes" entry per apiVersion.
func capUpdateManagers(mf *managed) {
	var updaters []string
	for key, vs := range mf.fields {
		if !vs.Applied() {
			updaters = append(updaters, key)
		}
	}
	if len(updaters) <= MaxUpdateManagers {
		return
	}
	slices.SortFunc(updaters, func(a, b string) int {
		ta, tb := unixSeconds(mf.times[a]), unixSeconds(mf.times[b])
		if ta != tb {
			if ta < tb {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	firstOfVersion := map[fieldpath.APIVersion]string{}
	for i, n := 0, len(updaters); i < len(updaters) && n > MaxUpdateManagers; i++ {
		key := updaters[i]
		vs := mf.fields[key]
		bucket := managerID{Manager: "ancient-changes", Operation: opUpdate, APIVersion: string(vs.APIVersion())}.String()
		first, seen := firstOfVersion[vs.APIVersion()]
		if !seen {
			firstOfVersion[vs.APIVersion()] = key
			continue
		}
		if _, ok := mf.fields[bucket]; !ok {
			mf.fields[bucket] = mf.fields[first]
			delete(mf.fields, first)
		}
		mf.fields[bucket] = fieldpath.NewVersionedSet(vs.Set().Union(mf.fields[bucket].Set()), vs.APIVersion(), vs.Applied())
		delete(mf.fields, key)
		n--
		if t, ok := mf.times[key]; ok {
			mf.times[bucket] = t
		} else {
			delete(mf.times, bucket)
		}
	}
}

// Helpers on unstructured objects.

func metadata(obj map[string]any) map[string]any {
	md, _ := obj["metadata"].(map[string]any)
	return md
}

// managedFieldsOf returns obj's managedFields entries, decoded when they
// are kept encoded (see fastraw.go).
func managedFieldsOf(obj map[string]any) []any {
	return entriesOf(metadata(obj)["managedFields"])
}

// entriesOf is managedFieldsOf for the value of a managedFields member.
func entriesOf(v any) []any {
	switch v := v.(type) {
	case []any:
		return v
	case codec.Raw:
		d, _ := codec.DecodeRaw(v) // Raws hold what Marshal wrote
		l, _ := d.([]any)
		return l
	}
	return nil
}

func setManagedFields(obj map[string]any, list []any) {
	md := metadata(obj)
	if list == nil {
		if md != nil {
			delete(md, "managedFields")
		}
		return
	}
	if md == nil {
		md = map[string]any{}
		obj["metadata"] = md
	}
	md["managedFields"] = list
}

// shallowWithoutManagedFields returns obj, or a shallow copy of it whose
// metadata lacks managedFields.
func shallowWithoutManagedFields(obj map[string]any) map[string]any {
	if _, ok := metadata(obj)["managedFields"]; !ok {
		return obj
	}
	return withoutManagedFields(obj)
}

// withoutManagedFields returns a shallow copy of obj whose metadata, a
// copy too, lacks managedFields.
// withoutEmptyObjects is a copy of obj without the members, at any depth
// of objects, that are empty objects once theirs are left out.
func withoutEmptyObjects(obj map[string]any) map[string]any {
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		if m, ok := v.(map[string]any); ok {
			if m = withoutEmptyObjects(m); len(m) == 0 {
				continue
			}
			v = m
		}
		out[k] = v
	}
	return out
}

func withoutManagedFields(obj map[string]any) map[string]any {
	out := maps.Clone(obj)
	md := maps.Clone(metadata(obj))
	if md == nil {
		md = map[string]any{}
	}
	delete(md, "managedFields")
	out["metadata"] = md
	return out
}

// describe names an object in errors as upstream does:
// "namespace/name; group/version, Kind=kind".
func describe(obj map[string]any, apiVersion, kind string) string {
	md := metadata(obj)
	ns, _ := md["namespace"].(string)
	name, _ := md["name"].(string)
	return fmt.Sprintf("%s/%s; %v", ns, name, gvkOf(apiVersion, kind))
}

func gvkOf(apiVersion, kind string) schema.GroupVersionKind {
	gv, _ := schema.ParseGroupVersion(apiVersion)
	return gv.WithKind(kind)
}
