package server

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/crdserver/crdserver/internal/controllers"
	"github.com/crdserver/crdserver/internal/handler"
	"github.com/crdserver/crdserver/internal/registry"
	"github.com/crdserver/crdserver/internal/storage"
)

// gcServer gives the garbage collector the served resources, storage
// reads, and the server's delete path.
type gcServer struct {
	s   *Server
	reg *registry.Registry
}

var _ controllers.GCServer = (*gcServer)(nil)

func (g *gcServer) Resources() []controllers.GCResource {
	defs := g.reg.Current().Definitions()
	out := make([]controllers.GCResource, 0, len(defs))
	for _, d := range defs {
		if d.StoredAs != nil {
			continue // the storage's own definition covers its objects
		}
		st, ok := g.s.stores.Store(d.GroupResource())
		if !ok {
			continue
		}
		out = append(out, controllers.GCResource{Resource: d.GroupResource(), Kind: d.Kind, Namespaced: d.Namespaced(), Cache: st.Cache})
	}
	return out
}

func (g *gcServer) lookup(r schema.GroupResource) (*registry.Definition, *handler.Store, error) {
	def, ok := g.reg.Current().Lookup(r.Group, r.Resource)
	if !ok {
		return nil, nil, controllers.ErrGCNotFound
	}
	st, ok := g.s.stores.Store(r)
	if !ok {
		return nil, nil, controllers.ErrGCNotFound
	}
	return def, st, nil
}

func (g *gcServer) Get(ctx context.Context, r schema.GroupResource, namespace, name string) (*controllers.GCObject, error) {
	_, st, err := g.lookup(r)
	if err != nil {
		return nil, err
	}
	kv, err := st.Storage.Get(ctx, st.Key(namespace, name))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, controllers.ErrGCNotFound
	}
	if err != nil {
		return nil, err
	}
	obj, err := handler.DecodeStored(kv.Value)
	if err != nil {
		return nil, err
	}
	o := gcObject(obj)
	o.ResourceVersion = fmt.Sprint(kv.ModRevision)
	return o, nil
}

func gcObject(obj map[string]any) *controllers.GCObject {
	u := unstructured.Unstructured{Object: obj}
	return &controllers.GCObject{
		UID:             u.GetUID(),
		Deleting:        u.GetDeletionTimestamp() != nil,
		Finalizers:      u.GetFinalizers(),
		OwnerReferences: u.GetOwnerReferences(),
	}
}

func (g *gcServer) Delete(ctx context.Context, r schema.GroupResource, namespace, name string, obj *controllers.GCObject, policy metav1.DeletionPropagation) error {
	def, st, err := g.lookup(r)
	if err != nil {
		return err
	}
	rev, err := strconv.ParseInt(obj.ResourceVersion, 10, 64)
	if err != nil {
		return fmt.Errorf("%s %s/%s: resourceVersion %q: %w", r, namespace, name, obj.ResourceVersion, err)
	}
	_, hooked := def.Hooks.(registry.Finalizer)
	if policy == metav1.DeletePropagationBackground && len(obj.Finalizers) == 0 && !hooked {
		// What the handler's delete comes to, without its read: the
		// object as it was at rev has nothing to wait for, and a
		// compare-and-swap at rev deletes exactly that object (a
		// recreated one has another revision). Half the storage round
		// trips when thousands of dependents go at once.
		_, _, err = st.Storage.Delete(ctx, st.Key(namespace, name), rev)
		switch {
		case errors.Is(err, storage.ErrNotFound):
			return controllers.ErrGCNotFound
		case errors.Is(err, storage.ErrConflict):
			return fmt.Errorf("%s %s/%s: %w", r, namespace, name, controllers.ErrGCConflict)
		}
		return err
	}
	uid, rv := obj.UID, obj.ResourceVersion
	opts := &metav1.DeleteOptions{
		Preconditions:     &metav1.Preconditions{UID: &uid, ResourceVersion: &rv},
		PropagationPolicy: &policy,
	}
	_, _, err = g.s.handler.DeleteObject(ctx, def, st, namespace, name, opts)
	if apierrors.IsNotFound(err) {
		return controllers.ErrGCNotFound
	}
	if apierrors.IsConflict(err) {
		return fmt.Errorf("%s %s/%s: %w: %v", r, namespace, name, controllers.ErrGCConflict, err)
	}
	return err
}

// errUIDChanged stops an update of an object recreated under the same name.
var errUIDChanged = errors.New("uid changed")

func (g *gcServer) Update(ctx context.Context, r schema.GroupResource, namespace, name string, uid types.UID, change func(*controllers.GCObject) bool) error {
	def, st, err := g.lookup(r)
	if err != nil {
		return err
	}
	key := st.Key(namespace, name)
	var obj map[string]any
	kv, err := storage.GuaranteedUpdate(ctx, st.Storage, key, func(cur storage.KeyValue) ([]byte, error) {
		var err error
		if obj, err = handler.DecodeStored(cur.Value); err != nil {
			return nil, err
		}
		o := gcObject(obj)
		if o.UID != uid {
			return nil, errUIDChanged
		}
		if !change(o) {
			return cur.Value, nil
		}
		// Empty lists are left out, as typed objects leave them.
		u := unstructured.Unstructured{Object: obj}
		u.SetOwnerReferences(nilIfEmpty(o.OwnerReferences))
		u.SetFinalizers(nilIfEmpty(o.Finalizers))
		return handler.EncodeStored(obj)
	})
	if errors.Is(err, storage.ErrNotFound) || errors.Is(err, errUIDChanged) {
		return controllers.ErrGCNotFound
	}
	if err != nil {
		return err
	}
	// As an update through the API would: an object being deleted goes
	// with its last finalizer.
	u := unstructured.Unstructured{Object: obj}
	if u.GetDeletionTimestamp() == nil || len(u.GetFinalizers()) > 0 {
		return nil
	}
	if fz, ok := def.Hooks.(registry.Finalizer); ok && fz.Pending(obj) {
		return nil
	}
	_, _, err = st.Storage.Delete(ctx, key, kv.ModRevision)
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	return err
}

func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}
