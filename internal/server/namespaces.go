package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/builtin"
	"github.com/crdserver/crdserver/internal/controllers"
	"github.com/crdserver/crdserver/internal/handler"
	"github.com/crdserver/crdserver/internal/registry"
	"github.com/crdserver/crdserver/internal/storage"
	"github.com/crdserver/crdserver/internal/watchcache"
)

// namespaceContent gives the namespace controller the server's delete path.
type namespaceContent struct {
	s   *Server
	reg *registry.Registry
}

var _ controllers.NamespaceContent = (*namespaceContent)(nil)

// DeleteContents deletes the namespace's pods first and, as upstream's
// OrderedNamespaceDeletion (on by default since 1.33), the rest only once
// no pod remains: a pod kept by a finalizer or its grace period keeps the
// Secrets, ConfigMaps and policies it runs with.
func (n *namespaceContent) DeleteContents(ctx context.Context, ns string) (int, error) {
	left := builtin.NamespaceDeletion{Remaining: map[string]int{}, Finalizers: map[string]int{}, Undiscovered: map[string]string{}}
	if pods, ok := n.reg.Current().Lookup("", "pods"); ok {
		if st, ok := n.s.stores.Store(podsGR); ok {
			if err := n.deleteAll(ctx, pods, st, ns, &left); err != nil {
				left.Failures = append(left.Failures, err.Error())
			}
			if count := left.Remaining["pods."]; count > 0 {
				// Upstream says nothing of the pods in the conditions
				// while it waits for them: only what failed.
				clear(left.Remaining)
				clear(left.Finalizers)
				if err := n.setConditions(ctx, ns, left); err != nil {
					return 0, err
				}
				return count, nil
			}
		}
	}
	for _, def := range n.reg.Current().Definitions() {
		if !def.Namespaced() || def.StoredAs != nil { // the storage's own definition deletes its objects
			continue
		}
		if def.GroupResource() == podsGR {
			continue // deleted above
		}
		st, ok := n.s.stores.Store(def.GroupResource())
		if !ok {
			// Served, but its objects can't be listed yet: like an API
			// upstream's discovery could not reach, it holds the namespace.
			gv := schema.GroupVersion{Group: def.Group}
			if v := def.StorageVersion(); v != nil {
				gv.Version = v.Name
			}
			left.Undiscovered[gv.String()] = "the server has no storage for " + def.Resource + " yet"
			continue
		}
		if err := n.deleteAll(ctx, def, st, ns, &left); err != nil {
			left.Failures = append(left.Failures, err.Error())
		}
	}
	// Like upstream's controller, say in the namespace's conditions what
	// holds it in Terminating.
	if err := n.setConditions(ctx, ns, left); err != nil {
		return 0, err
	}
	if len(left.Failures) > 0 {
		return 0, errors.New(strings.Join(left.Failures, "; "))
	}
	if len(left.Undiscovered) > 0 {
		return 0, fmt.Errorf("resources not listed: %v", left.Undiscovered)
	}
	remaining := 0
	for _, count := range left.Remaining {
		remaining += count
	}
	return remaining, nil
}

// deleteAll deletes ns's objects of one resource and counts, in left, those
// that remain and their finalizers.
func (n *namespaceContent) deleteAll(ctx context.Context, def *registry.Definition, st *handler.Store, ns string, left *builtin.NamespaceDeletion) error {
	gr := def.GroupResource()
	res, err := st.Cache.List(ctx, watchcache.ListOptions{Namespace: ns})
	if err != nil {
		return fmt.Errorf("listing %s in %s: %w", gr, ns, err)
	}
	for _, it := range res.Items {
		// Background, as upstream's namespace controller asks: dependents
		// go after their owners, and a foreground or orphaning deletion
		// started earlier does not hold the namespace.
		background := metav1.DeletePropagationBackground
		obj, deleted, err := n.s.handler.DeleteObject(ctx, def, st, ns, it.Name, &metav1.DeleteOptions{PropagationPolicy: &background})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("deleting %s %s/%s: %w", gr, ns, it.Name, err)
		}
		if deleted {
			continue
		}
		left.Remaining[gr.Resource+"."+gr.Group]++
		md, _ := obj["metadata"].(map[string]any)
		fins, _ := md["finalizers"].([]any)
		for _, f := range fins {
			if f, ok := f.(string); ok {
				left.Finalizers[f]++
			}
		}
	}
	return nil
}

// setConditions writes a deletion pass's outcome into the namespace's
// status conditions, if they changed.
func (n *namespaceContent) setConditions(ctx context.Context, ns string, left builtin.NamespaceDeletion) error {
	st, _ := n.s.stores.Store(builtin.Namespaces().GroupResource())
	_, err := storage.GuaranteedUpdate(ctx, st.Storage, st.Key("", ns), func(cur storage.KeyValue) ([]byte, error) {
		obj, err := handler.DecodeStored(cur.Value)
		if err != nil {
			return nil, err
		}
		if !builtin.SetDeletionConditions(obj, left, time.Now()) {
			return cur.Value, nil
		}
		return handler.EncodeStored(obj)
	})
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("namespace %s conditions: %w", ns, err)
	}
	return nil
}

func (n *namespaceContent) Finalize(ctx context.Context, ns string) error {
	st, _ := n.s.stores.Store(builtin.Namespaces().GroupResource())
	key := st.Key("", ns)
	kv, err := storage.GuaranteedUpdate(ctx, st.Storage, key, func(cur storage.KeyValue) ([]byte, error) {
		obj, err := handler.DecodeStored(cur.Value)
		if err != nil {
			return nil, err
		}
		spec, _ := obj["spec"].(map[string]any)
		if spec != nil {
			fin, _ := spec["finalizers"].([]any)
			fin = slices.DeleteFunc(slices.Clone(fin), func(f any) bool { return f == builtin.FinalizerKubernetes })
			if len(fin) == 0 {
				delete(spec, "finalizers")
			} else {
				spec["finalizers"] = fin
			}
		}
		return handler.EncodeStored(obj)
	})
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	obj, err := handler.DecodeStored(kv.Value)
	if err != nil {
		return err
	}
	md, _ := obj["metadata"].(map[string]any)
	if f, _ := md["finalizers"].([]any); len(f) > 0 {
		return nil // other finalizers remain; their owners remove them
	}
	if spec, _ := obj["spec"].(map[string]any); spec != nil {
		if f, _ := spec["finalizers"].([]any); len(f) > 0 {
			return nil
		}
	}
	_, _, err = st.Storage.Delete(ctx, key, kv.ModRevision)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return nil
	case errors.Is(err, storage.ErrConflict):
		return fmt.Errorf("namespace %s changed while finalizing; will retry", ns)
	}
	return err
}
