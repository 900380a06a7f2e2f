package server

import (
	"context"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

func (n *namespaceContent) DeleteContents(ctx context.Context, ns string) (int, error) {
	remaining := 0
	for _, def := range n.reg.Current().Definitions() {
		if !def.Namespaced() {
			continue
		}
		st, ok := n.s.stores.Store(def.GroupResource())
		if !ok {
			continue
		}
		res, err := st.Cache.List(ctx, watchcache.ListOptions{Namespace: ns})
		if err != nil {
			return 0, fmt.Errorf("listing %s in %s: %w", def.GroupResource(), ns, err)
		}
		for _, it := range res.Items {
			_, deleted, err := n.s.handler.DeleteObject(ctx, def, st, ns, it.Name, &metav1.DeleteOptions{})
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return 0, fmt.Errorf("deleting %s %s/%s: %w", def.GroupResource(), ns, it.Name, err)
			}
			if !deleted {
				remaining++
			}
		}
	}
	return remaining, nil
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
