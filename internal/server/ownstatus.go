package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/crdserver/crdserver/internal/apply"
	"github.com/crdserver/crdserver/internal/handler"
	"github.com/crdserver/crdserver/internal/registry"
	"github.com/crdserver/crdserver/internal/storage"
)

// ownStatus is an object whose status the server keeps itself (a
// policy's type checking, an APIService's availability, a
// PodDisruptionBudget's counts), read straight from storage to be written
// back at the revision read.
type ownStatus struct {
	st  *handler.Store
	key string
	kv  storage.KeyValue
}

// readOwnStatus reads the named cluster-scoped object of gr and decodes
// it into typed; found is false when there is none.
func (s *Server) readOwnStatus(ctx context.Context, gr schema.GroupResource, name string, typed any) (o ownStatus, found bool, err error) {
	return s.readOwnStatusIn(ctx, gr, "", name, typed)
}

// readOwnStatusIn is readOwnStatus for an object in namespace ns.
func (s *Server) readOwnStatusIn(ctx context.Context, gr schema.GroupResource, ns, name string, typed any) (o ownStatus, found bool, err error) {
	o.st, _ = s.stores.Store(gr)
	o.key = o.st.Key(ns, name)
	o.kv, err = o.st.Storage.Get(ctx, o.key)
	if errors.Is(err, storage.ErrNotFound) {
		return o, false, nil
	}
	if err != nil {
		return o, false, err
	}
	if err := json.Unmarshal(o.kv.Value, typed); err != nil {
		return o, false, fmt.Errorf("decoding %s %s: %w", gr, name, err)
	}
	return o, true, nil
}

// writeStatus stores the object read with its status as set changes it,
// if the object is still at the revision read. An object gone or changed
// since is not an error: its change brings its own sync.
func (o ownStatus) writeStatus(ctx context.Context, set func(status map[string]any)) error {
	return o.writeStatusAs(ctx, nil, "", set)
}

// writeStatusAs is writeStatus recording the write in the object's
// managedFields, through fields (its status field manager), as manager's
// Update: upstream's controllers write the status they keep through the
// API.
func (o ownStatus) writeStatusAs(ctx context.Context, fields *apply.Manager, manager string, set func(status map[string]any)) error {
	return settled(o.setStatusAs(ctx, fields, manager, set))
}

// setStatusAs is writeStatusAs reporting an object gone or changed since
// it was read as its storage error (storage.ErrNotFound,
// storage.ErrConflict), for a writer that must know its write landed.
func (o ownStatus) setStatusAs(ctx context.Context, fields *apply.Manager, manager string, set func(status map[string]any)) error {
	obj, err := handler.DecodeStored(o.kv.Value)
	if err != nil {
		return err
	}
	var old map[string]any
	if fields != nil {
		old = runtime.DeepCopyJSON(obj)
	}
	status, _ := obj["status"].(map[string]any)
	if status == nil {
		status = map[string]any{}
		obj["status"] = status
	}
	set(status)
	if fields != nil {
		fields.Update(old, obj, manager)
	}
	return o.put(ctx, obj)
}

// applyStatusAs stores the object read with status applied to it as
// manager's server-side apply of the status subresource, with force:
// upstream's controllers that apply the status they keep (the policy
// type checker) own just the fields they apply, whoever wrote them
// before. Like writeStatus, it writes only at the revision read.
func (o ownStatus) applyStatusAs(ctx context.Context, fields *apply.Manager, manager string, status map[string]any) error {
	live, err := handler.DecodeStored(o.kv.Value)
	if err != nil {
		return err
	}
	name, _ := metadata(live)["name"].(string)
	patch := map[string]any{
		"apiVersion": fields.GroupVersion.String(),
		"kind":       fields.Kind,
		"metadata":   map[string]any{"name": name},
		"status":     status,
	}
	obj, err := fields.Apply(runtime.DeepCopyJSON(live), patch, manager, true)
	if err != nil {
		return fmt.Errorf("applying the status of %s: %w", name, err)
	}
	// What a status apply merged outside the status is not kept, as
	// upstream's status strategies keep the stored object's.
	live["status"] = obj["status"]
	metadata(live)["managedFields"] = metadata(obj)["managedFields"]
	return o.store(ctx, live)
}

// store writes obj at the revision read; an object gone or changed since
// is not an error: its change brings its own sync.
func (o ownStatus) store(ctx context.Context, obj map[string]any) error {
	return settled(o.put(ctx, obj))
}

// put writes obj at the revision read.
func (o ownStatus) put(ctx context.Context, obj map[string]any) error {
	data, err := handler.EncodeStored(obj)
	if err != nil {
		return err
	}
	_, err = o.st.Storage.Update(ctx, o.key, data, o.kv.ModRevision)
	return err
}

// settled is nil for a write that found its object gone or changed.
func settled(err error) error {
	if errors.Is(err, storage.ErrNotFound) || errors.Is(err, storage.ErrConflict) {
		return nil
	}
	return err
}

// metadata is obj's metadata, added when it has none.
func metadata(obj map[string]any) map[string]any {
	md, _ := obj["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		obj["metadata"] = md
	}
	return md
}

// statusFieldManager is the field manager of def's status subresource at
// version, for the status the server writes: its writes own no spec.
func statusFieldManager(def *registry.Definition, version string) *apply.Manager {
	spec := fieldpath.NewSet(fieldpath.MakePathOrDie("spec"))
	reset := make(map[fieldpath.APIVersion]*fieldpath.Set, len(def.Versions))
	for _, v := range def.Versions {
		reset[fieldpath.APIVersion(registry.APIVersion(def.Group, v.Name))] = spec
	}
	return &apply.Manager{
		Types:        apply.NewTypes(def),
		GroupVersion: schema.GroupVersion{Group: def.Group, Version: version},
		Kind:         def.Kind,
		Subresource:  "status",
		Reset:        reset,
	}
}
