package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/apply"
	"github.com/crdserver/crdserver/internal/controllers"
	"github.com/crdserver/crdserver/internal/conversion"
	"github.com/crdserver/crdserver/internal/crd"
	"github.com/crdserver/crdserver/internal/handler"
	"github.com/crdserver/crdserver/internal/registry"
	crschema "github.com/crdserver/crdserver/internal/schema"
	"github.com/crdserver/crdserver/internal/storage"
	"github.com/crdserver/crdserver/internal/watchcache"
)

// crdServer serves the CRD controller: it turns stored CRDs into registry
// definitions and stores, writes their status, and deletes their instances.
type crdServer struct {
	s        *Server
	reg      *registry.Registry
	builtins []*registry.Definition
	// swapped, when set, is told after every registry swap.
	swapped func()

	// served turns true after the first Serve: /readyz waits for it so
	// that a restarted server answers for its CRDs at once.
	served atomic.Bool

	// statusManager is the field manager of the status the server writes
	// (statusFields), built once.
	statusOnce    sync.Once
	statusManager *apply.Manager

	mu   sync.Mutex
	crds map[string]map[string]any // by name, as last served
	// written holds the statuses this replica wrote, with their revision,
	// until the CRDs watch brings them back: names accepted for one CRD
	// count against the next at once, as upstream's naming controller
	// reads through a mutation cache. Without it, two CRDs created
	// together that ask for one kind could both be accepted.
	written map[string]writtenCRD
	// defs caches each CRD's definition by name, with the resourceVersion
	// it was built from: a swap rebuilds only the CRDs that changed.
	defs map[string]cachedDef
}

type writtenCRD struct {
	rev int64
	obj map[string]any
}

type cachedDef struct {
	rv  string
	def *registry.Definition
}

var _ controllers.CRDServer = (*crdServer)(nil)

var crdGR = schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}

func (c *crdServer) Serve(crds []map[string]any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.crds = make(map[string]map[string]any, len(crds))
	cache := make(map[string]cachedDef, len(crds))
	var restart []schema.GroupResource
	defs := slices.Clone(c.builtins)
	for _, obj := range crds {
		name, _ := nestedString(obj, "metadata", "name")
		rv, _ := nestedString(obj, "metadata", "resourceVersion")
		c.crds[name] = obj
		if !crd.NamesAccepted(obj) {
			continue
		}
		if cd, ok := c.defs[name]; ok && cd.rv == rv {
			cache[name] = cd
			defs = append(defs, cd.def)
			continue
		}
		def, err := crd.FromCRD(obj)
		var prev *registry.Definition
		if cd, ok := c.defs[name]; ok {
			prev = cd.def
		}
		if err == nil {
			err = compileSchemas(def, prev)
		}
		if err == nil {
			def.Converter = conversion.New(def, c.s.webhooks)
			def.FieldTypes = fieldTypes(def, prev)
			if w, ok := def.Converter.(*conversion.Webhook); ok {
				w.Metrics = c.s.metrics
			}
			// The CRD's revision bounds the objects that may predate its
			// schemas (conservatively: a replica that starts after a
			// status write takes that write's). A write that leaves the
			// storage schema as it was keeps the bound: otherwise every
			// replica whose definition a status write rebuilt (a
			// migration's storedVersions) would take the objects another
			// replica's migration just rewrote for outdated, and rewrite
			// them again.
			def.SchemaRevision, _ = strconv.ParseInt(rv, 10, 64)
			if prev != nil && !schemaChanged(prev, def) {
				def.SchemaRevision = prev.SchemaRevision
			}
		}
		if err != nil {
			c.s.log.Error("serving CRD", "crd", name, "err", err)
			continue
		}
		if prev, ok := c.defs[name]; ok && schemaChanged(prev.def, def) {
			// Cached objects were decoded with the old schema: start the
			// resource's cache afresh so that lists and watches prune and
			// default with the new one, as upstream rebuilds a CRD's
			// storage. Its watchers end and re-watch.
			restart = append(restart, def.GroupResource())
		}
		cache[name] = cachedDef{rv: rv, def: def}
		defs = append(defs, def)
	}
	c.defs = cache
	// Stores first, so that a route never exists without its store.
	keep := map[schema.GroupResource]bool{}
	for _, d := range defs {
		keep[d.GroupResource()] = true
		c.s.stores.ensure(d)
	}
	c.reg.Swap(defs)
	// After the swap, so that the new caches decode with the new schemas.
	for _, gr := range restart {
		c.s.stores.replace(gr)
	}
	c.s.stores.retain(keep)
	c.overlayWritten()
	c.served.Store(true)
	if c.s.gc != nil {
		c.s.gc.ResourcesChanged()
	}
	if c.swapped != nil {
		c.swapped()
	}
}

func (c *crdServer) SyncStatus(ctx context.Context, name string) error {
	if err := c.syncStatus(ctx, name); err != nil {
		return err
	}
	// A change to one CRD (a rename, a deletion) may free names that
	// another CRD of its group was refused: check those again, as
	// upstream's naming controller requeues the group. CRDs whose names
	// are accepted can't gain from it, and skipping them keeps a burst of
	// creations in one group linear.
	group := name[strings.IndexByte(name, '.')+1:]
	var errs []error
	for _, other := range c.refusedNames(group, name) {
		errs = append(errs, c.syncStatus(ctx, other))
	}
	return errors.Join(errs...)
}

// refusedNames names the CRDs of group, except skip, whose NamesAccepted
// condition is not True.
func (c *crdServer) refusedNames(group, skip string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var names []string
	for n, o := range c.crds {
		if g, _ := nestedString(o, "spec", "group"); g == group && n != skip &&
			crd.ConditionStatus(o, crd.ConditionNamesAccepted) != crd.StatusTrue {
			names = append(names, n)
		}
	}
	return names
}

// overlayWritten puts this replica's own status writes over the CRDs just
// served that they are newer than, and forgets those the watch has caught
// up with or whose CRD is gone. c.mu is held.
func (c *crdServer) overlayWritten() {
	for name, w := range c.written {
		cur, ok := c.crds[name]
		if !ok {
			delete(c.written, name)
			continue
		}
		rv, _ := nestedString(cur, "metadata", "resourceVersion")
		if rev, _ := strconv.ParseInt(rv, 10, 64); rev >= w.rev {
			delete(c.written, name)
			continue
		}
		c.crds[name] = w.obj
	}
}

// syncStatus recomputes one CRD's status against the others.
func (c *crdServer) syncStatus(ctx context.Context, name string) error {
	st, _ := c.s.stores.Store(crdGR)
	c.mu.Lock()
	others := make([]map[string]any, 0, len(c.crds))
	for n, o := range c.crds {
		if n != name {
			others = append(others, o)
		}
	}
	c.mu.Unlock()
	var written map[string]any
	kv, err := storage.GuaranteedUpdate(ctx, st.Storage, st.Key("", name), func(cur storage.KeyValue) ([]byte, error) {
		obj, err := handler.DecodeStored(cur.Value)
		if err != nil {
			return nil, err
		}
		old := runtime.DeepCopyJSON(obj)
		crd.SyncStatusServing(obj, others, c.builtins, time.Now(), c.servesAccepted(obj))
		written = obj
		if !reflect.DeepEqual(old["status"], obj["status"]) {
			// As upstream's naming and establishing controllers, which
			// write status through the API as kube-apiserver.
			c.statusFields().Update(old, obj, "kube-apiserver")
		}
		return handler.EncodeStored(obj)
	})
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	c.remember(name, written, kv.ModRevision)
	return nil
}

// statusFields is the field manager of the CRDs' status subresource,
// for the status this server writes.
func (c *crdServer) statusFields() *apply.Manager {
	c.statusOnce.Do(func() { c.statusManager = statusFieldManager(crd.Definition(), crd.Version) })
	return c.statusManager
}

// servesAccepted reports whether the registry serves obj's accepted names
// as a custom resource now.
func (c *crdServer) servesAccepted(obj map[string]any) bool {
	group, _ := nestedString(obj, "spec", "group")
	plural, _ := nestedString(obj, "status", "acceptedNames", "plural")
	def, ok := c.reg.Current().Lookup(group, plural)
	return ok && plural != "" && def.Hooks == nil
}

// remember keeps a status this replica wrote, at its revision, until the
// watch brings it back.
func (c *crdServer) remember(name string, obj map[string]any, rev int64) {
	if obj == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.crds[name]; !ok {
		return
	}
	if w, ok := c.written[name]; ok && w.rev >= rev {
		return
	}
	if md, ok := obj["metadata"].(map[string]any); ok {
		md["resourceVersion"] = strconv.FormatInt(rev, 10)
	}
	if c.written == nil {
		c.written = map[string]writtenCRD{}
	}
	c.written[name] = writtenCRD{rev: rev, obj: obj}
	c.crds[name] = obj
}

func (c *crdServer) Cleanup(ctx context.Context, name string) (bool, error) {
	st, _ := c.s.stores.Store(crdGR)
	kv, err := st.Storage.Get(ctx, st.Key("", name))
	if errors.Is(err, storage.ErrNotFound) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	obj, err := handler.DecodeStored(kv.Value)
	if err != nil {
		return false, err
	}
	group, _ := nestedString(obj, "spec", "group")
	plural, _ := nestedString(obj, "status", "acceptedNames", "plural")
	if plural == "" {
		plural, _ = nestedString(obj, "spec", "names", "plural")
	}
	gr := schema.GroupResource{Group: group, Resource: plural}
	def, served := c.reg.Current().Lookup(group, plural)
	if served && def.Hooks != nil {
		// A built-in owns these names: this CRD never served them, and
		// its objects are not this CRD's to delete.
		served, gr = false, schema.GroupResource{}
	}
	ist, hasStore := c.s.stores.Store(gr)
	if gr.Resource != "" && (!served || !hasStore) {
		// Not served here (names not accepted, or a replica that could
		// not build it): delete whatever is stored under its prefix.
		remaining, err := c.deleteRaw(ctx, c.s.stores.keyPrefix(gr))
		if err != nil || remaining > 0 {
			return false, err
		}
	}
	if served && hasStore {
		res, err := ist.Cache.List(ctx, watchcache.ListOptions{})
		if err != nil {
			return false, fmt.Errorf("listing instances of %s: %w", gr, err)
		}
		for _, it := range res.Items {
			_, _, err := c.s.handler.DeleteObject(ctx, def, ist, it.Namespace, it.Name, &metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				return false, fmt.Errorf("deleting %s %s/%s: %w", gr, it.Namespace, it.Name, err)
			}
		}
		if len(res.Items) > 0 {
			return false, nil // look again once the deletes are seen
		}
	}
	// No instances remain: drop the cleanup finalizer; the CRD goes when no
	// finalizer is left.
	kv, err = storage.GuaranteedUpdate(ctx, st.Storage, st.Key("", name), func(cur storage.KeyValue) ([]byte, error) {
		o, err := handler.DecodeStored(cur.Value)
		if err != nil {
			return nil, err
		}
		crd.RemoveCleanupFinalizer(o)
		return handler.EncodeStored(o)
	})
	if errors.Is(err, storage.ErrNotFound) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	o, err := handler.DecodeStored(kv.Value)
	if err != nil {
		return false, err
	}
	if md, _ := o["metadata"].(map[string]any); md != nil {
		if f, _ := md["finalizers"].([]any); len(f) > 0 {
			return true, nil // other finalizers: their owners finish
		}
	}
	_, _, err = st.Storage.Delete(ctx, st.Key("", name), kv.ModRevision)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return false, err
	}
	return true, nil
}

func nestedString(obj map[string]any, path ...string) (string, bool) {
	var cur any = obj
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return "", false
		}
		cur = m[p]
	}
	s, ok := cur.(string)
	return s, ok
}

// compileSchemas compiles each version's schema once, when it changes;
// the handler prunes, defaults and validates with the compiled form. A
// version whose schema is the same as in prev (the CRD as served before
// this change, or nil) keeps its compiled form, and a changed one keeps
// the CEL programs of the rules whose part of the schema did not change:
// rules are costly to compile, and most CRD writes (status, labels)
// leave schemas alone.
func compileSchemas(def, prev *registry.Definition) error {
	for i := range def.Versions {
		v := &def.Versions[i]
		if len(v.OpenAPISchema) == 0 {
			continue
		}
		pv := prev.Version(v.Name)
		if pv != nil && prev.PreserveUnknownFields != def.PreserveUnknownFields {
			pv = nil // pruning starts or stops: compile afresh
		}
		var prevSchema *crschema.Schema
		if pv != nil {
			if bytes.Equal(pv.OpenAPISchema, v.OpenAPISchema) && pv.Schema != nil {
				v.Schema = pv.Schema
				continue
			}
			prevSchema, _ = pv.Schema.(*crschema.Schema)
		}
		var props apiextensionsv1.JSONSchemaProps
		if err := json.Unmarshal(v.OpenAPISchema, &props); err != nil {
			return fmt.Errorf("version %s: decoding schema: %w", v.Name, err)
		}
		s, err := crschema.Recompile(prevSchema, &props)
		if err != nil {
			return fmt.Errorf("version %s: compiling schema: %w", v.Name, err)
		}
		if def.PreserveUnknownFields {
			s = s.PreservingUnknownFields()
		}
		v.Schema = s
	}
	return nil
}

// fieldTypes returns def's server-side apply types: prev's when no
// version's schema changed (they are built on first use, and most CRD
// writes leave schemas alone), else new ones.
func fieldTypes(def, prev *registry.Definition) *apply.Types {
	if t, ok := prev.FieldTypesIfSame(def).(*apply.Types); ok {
		return t
	}
	return apply.NewTypes(def)
}

// schemaChanged reports whether the storage version's schema, or whether
// objects are pruned, differs.
func schemaChanged(old, cur *registry.Definition) bool {
	if old.PreserveUnknownFields != cur.PreserveUnknownFields {
		return true // pruning starts or stops
	}
	o, c := old.StorageVersion(), cur.StorageVersion()
	if o == nil || c == nil {
		return o != c
	}
	return o.Name != c.Name || string(o.OpenAPISchema) != string(c.OpenAPISchema)
}

// deleteRaw deletes the keys under prefix straight from storage, a page at
// a time, and reports how many it found (0 when the prefix is empty).
func (c *crdServer) deleteRaw(ctx context.Context, prefix string) (int, error) {
	res, err := c.s.backend.List(ctx, prefix, storage.ListOptions{Limit: 500})
	if err != nil {
		return 0, fmt.Errorf("listing %s: %w", prefix, err)
	}
	for _, kv := range res.Items {
		if _, _, err := c.s.backend.Delete(ctx, kv.Key, kv.ModRevision); err != nil &&
			!errors.Is(err, storage.ErrNotFound) && !errors.Is(err, storage.ErrConflict) {
			return 0, fmt.Errorf("deleting %s: %w", kv.Key, err)
		}
	}
	return len(res.Items), nil
}
