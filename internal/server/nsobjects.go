package server

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/apply"
	"github.com/crdserver/crdserver/internal/builtin"
	"github.com/crdserver/crdserver/internal/handler"
	"github.com/crdserver/crdserver/internal/registry"
	"github.com/crdserver/crdserver/internal/storage"
	"github.com/crdserver/crdserver/internal/watchcache"
)

// The objects the server keeps in every namespace, for its
// controllers.NamespaceObjects: the default ServiceAccount and the
// kube-root-ca.crt ConfigMap. They are written straight into storage:
// the objects are the server's own, so no admission runs, as upstream's
// controllers' writes are not refused by policies of users.

// ensureServiceAccount creates the named ServiceAccount in namespace ns
// unless it exists, or the namespace is gone or terminating. The create is
// create-if-absent in storage, so replicas that race agree.
func (s *Server) ensureServiceAccount(ctx context.Context, ns, name string) error {
	if ok, err := s.activeNamespace(ctx, ns); !ok || err != nil {
		return err
	}
	st, _ := s.stores.Store(builtin.ServiceAccounts().GroupResource())
	key := st.Key(ns, name)
	if _, err := st.Cache.Get(ctx, key, watchcache.GetOptions{ResourceVersion: "0"}); err == nil {
		return nil
	}
	return s.createIfAbsent(ctx, st, ns, key, builtin.NewServiceAccount(ns, name, time.Now()))
}

// ensureRootCA makes namespace ns's kube-root-ca.crt ConfigMap hold the
// server's CA, as upstream's root CA publisher does: created when absent,
// put back when a client changed it (a compare-and-swap, so replicas that
// race agree), nothing when the namespace is gone or terminating.
func (s *Server) ensureRootCA(ctx context.Context, ns string) error {
	if ok, err := s.activeNamespace(ctx, ns); !ok || err != nil {
		return err
	}
	ca := string(s.PKI.CAPEM)
	st, _ := s.stores.Store(builtin.ConfigMaps().GroupResource())
	key := st.Key(ns, builtin.RootCAConfigMap)
	it, err := st.Cache.Get(ctx, key, watchcache.GetOptions{ResourceVersion: "0"})
	if errors.Is(err, storage.ErrNotFound) {
		return s.createIfAbsent(ctx, st, ns, key, builtin.NewRootCAConfigMap(ns, ca, time.Now()))
	}
	if err != nil {
		return err
	}
	if obj, err := handler.DecodeStored(it.JSON()); err == nil && !builtin.KeepRootCA(obj, ca) {
		return nil
	}
	return updateConfigMap(ctx, st, key, builtin.ControllerManager, func(obj map[string]any) bool { return builtin.KeepRootCA(obj, ca) })
}

// updateConfigMap writes the ConfigMap at key as change leaves it, as
// manager's update (recorded in its managedFields), unless change reports
// it left it alone. A ConfigMap deleted meanwhile is left deleted: the
// controllers that keep one make it again on its deletion.
func updateConfigMap(ctx context.Context, st *handler.Store, key, manager string, change func(obj map[string]any) bool) error {
	_, err := storage.GuaranteedUpdate(ctx, st.Storage, key, func(cur storage.KeyValue) ([]byte, error) {
		obj, err := handler.DecodeStored(cur.Value)
		if err != nil {
			return nil, err
		}
		old := runtime.DeepCopyJSON(obj)
		if !change(obj) {
			return cur.Value, nil
		}
		configMapFields().Update(old, obj, manager)
		return handler.EncodeStored(obj)
	})
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	return err
}

// configMapFields records the root CA publisher's updates, when it puts a
// kube-root-ca.crt a client changed back, in the ConfigMap's
// managedFields, as upstream's field manager records an update of a
// ConfigMap. Built at the first such update: an idle server has none.
var configMapFields = sync.OnceValue(func() *apply.Manager {
	def := builtin.ConfigMaps()
	m := &apply.Manager{Types: apply.NewTypes(def), GroupVersion: schema.GroupVersion{Version: "v1"}, Kind: def.Kind}
	if z, ok := def.Hooks.(registry.Zeroer); ok {
		m.Zero = z.ZeroObject()
	}
	return m
})

// activeNamespace reports whether namespace ns exists and is not being
// deleted.
func (s *Server) activeNamespace(ctx context.Context, ns string) (bool, error) {
	nsStore, _ := s.stores.Store(builtin.Namespaces().GroupResource())
	it, err := nsStore.Cache.Get(ctx, nsStore.Key("", ns), watchcache.GetOptions{ResourceVersion: "0"})
	if errors.Is(err, storage.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	obj, err := handler.DecodeStored(it.JSON())
	if err != nil {
		return false, err
	}
	md, _ := obj["metadata"].(map[string]any)
	return md["deletionTimestamp"] == nil, nil // else the namespace controller is emptying it
}

// createIfAbsent stores obj at key, in namespace ns, unless something is
// there. The namespace's quotas are counted again after: past admission,
// the create was charged to none.
func (s *Server) createIfAbsent(ctx context.Context, st *handler.Store, ns, key string, obj map[string]any) error {
	data, err := handler.EncodeStored(obj)
	if err != nil {
		return err
	}
	_, err = st.Storage.Create(ctx, key, data)
	switch {
	case errors.Is(err, storage.ErrExists):
		return nil
	case err != nil:
		return fmt.Errorf("creating %s: %w", key, err)
	}
	if s.recountQuotas != nil {
		s.recountQuotas(ns)
	}
	return nil
}
