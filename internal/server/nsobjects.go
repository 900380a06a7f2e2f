package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/crdserver/crdserver/internal/builtin"
	"github.com/crdserver/crdserver/internal/controllers"
	"github.com/crdserver/crdserver/internal/handler"
	"github.com/crdserver/crdserver/internal/storage"
	"github.com/crdserver/crdserver/internal/watchcache"
)

// serviceAccountServer creates default ServiceAccounts for the service
// account controller, straight into storage: the object is the server's
// own, so no admission runs, as upstream's controller's writes are not
// refused by policies of users.
type serviceAccountServer struct{ s *Server }

var _ controllers.ServiceAccountServer = serviceAccountServer{}

func (a serviceAccountServer) EnsureServiceAccount(ctx context.Context, ns, name string) error {
	nsStore, _ := a.s.stores.Store(builtin.Namespaces().GroupResource())
	it, err := nsStore.Cache.Get(ctx, nsStore.Key("", ns), watchcache.GetOptions{ResourceVersion: "0"})
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	obj, err := handler.DecodeStored(it.JSON())
	if err != nil {
		return err
	}
	if md, _ := obj["metadata"].(map[string]any); md["deletionTimestamp"] != nil {
		return nil // the namespace controller is emptying it
	}
	st, _ := a.s.stores.Store(builtin.ServiceAccounts().GroupResource())
	key := st.Key(ns, name)
	if _, err := st.Cache.Get(ctx, key, watchcache.GetOptions{ResourceVersion: "0"}); err == nil {
		return nil
	}
	data, err := handler.EncodeStored(builtin.NewServiceAccount(ns, name, time.Now()))
	if err != nil {
		return err
	}
	if _, err := st.Storage.Create(ctx, key, data); err != nil && !errors.Is(err, storage.ErrExists) {
		return fmt.Errorf("creating service account %s/%s: %w", ns, name, err)
	}
	return nil
}
