package server

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	svmv1 "k8s.io/api/storagemigration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/builtin"
	"github.com/crdserver/crdserver/internal/controllers"
	"github.com/crdserver/crdserver/internal/crd"
	"github.com/crdserver/crdserver/internal/handler"
	"github.com/crdserver/crdserver/internal/registry"
	"github.com/crdserver/crdserver/internal/storage"
	"github.com/crdserver/crdserver/internal/watchcache"
)

// migrationServer serves the storage version migration controller.
type migrationServer struct {
	s   *Server
	reg *registry.Registry
}

var _ controllers.MigrationServer = (*migrationServer)(nil)

var svmGR = schema.GroupResource{Group: builtin.MigrationGroup, Resource: builtin.MigrationResource}

// errStorageVersionMoved: the registry or the CRD changed storage version
// under a migration; it runs again.
var errStorageVersionMoved = errors.New("the storage version changed during the migration")

// lookup returns the served definition of gr and its store.
func (m *migrationServer) lookup(gr schema.GroupResource) (*registry.Definition, *handler.Store, error) {
	def, ok := m.reg.Current().Lookup(gr.Group, gr.Resource)
	if !ok {
		return nil, nil, fmt.Errorf("%w: %q", controllers.ErrNotServed, gr.String())
	}
	if def.StoredAs != nil {
		// Migrating events.k8s.io events migrates the core events they
		// are: the storage's own definition rewrites its objects.
		sgr := def.StorageGroupResource()
		if def, ok = m.reg.Current().Lookup(sgr.Group, sgr.Resource); !ok {
			return nil, nil, fmt.Errorf("%w: %q", controllers.ErrNotServed, sgr.String())
		}
	}
	st, ok := m.s.stores.Store(def.GroupResource())
	if !ok {
		return nil, nil, fmt.Errorf("no store for %s yet", gr)
	}
	return def, st, nil
}

func (m *migrationServer) ListForMigration(ctx context.Context, gr schema.GroupResource) (string, []*watchcache.Item, int64, error) {
	def, st, err := m.lookup(gr)
	if err != nil {
		return "", nil, 0, err
	}
	sv := def.StorageVersion()
	if sv == nil {
		return "", nil, 0, fmt.Errorf("%s has no storage version", gr)
	}
	if def.Hooks == nil {
		// A CRD's resource: this replica must serve the CRD as stored
		// now, or it would rewrite at an outdated storage version.
		want, err := m.crdStorageVersion(ctx, gr)
		if err != nil {
			return "", nil, 0, err
		}
		if want != sv.Name {
			return "", nil, 0, fmt.Errorf("%w: the CRD stores %s, this server still %s", errStorageVersionMoved, want, sv.Name)
		}
	}
	// A consistent list: every object written before the migration
	// started is in it.
	res, err := st.Cache.List(ctx, watchcache.ListOptions{})
	if err != nil {
		return "", nil, 0, fmt.Errorf("listing %s: %w", gr, err)
	}
	return sv.Name, res.Items, res.ResourceVersion, nil
}

func (m *migrationServer) Rewrite(ctx context.Context, gr schema.GroupResource, it *watchcache.Item) (bool, error) {
	def, st, err := m.lookup(gr)
	if err != nil {
		return false, err
	}
	return m.s.handler.Rewrite(ctx, def, st, it)
}

func (m *migrationServer) FinishMigration(ctx context.Context, gr schema.GroupResource, version string) error {
	def, _, err := m.lookup(gr)
	if err != nil {
		return err
	}
	if def.Hooks != nil {
		return nil // a built-in: one version, no storedVersions
	}
	st, _ := m.s.stores.Store(crdGR)
	_, err = storage.GuaranteedUpdate(ctx, st.Storage, st.Key("", crdName(gr)), func(cur storage.KeyValue) ([]byte, error) {
		obj, err := handler.DecodeStored(cur.Value)
		if err != nil {
			return nil, err
		}
		c, err := crd.Decode(obj)
		if err != nil {
			return nil, err
		}
		if sv := crdStorageVersion(c.Spec.Versions); sv != version {
			return nil, fmt.Errorf("%w: the CRD stores %s now", errStorageVersionMoved, sv)
		}
		if !crd.SetStoredVersions(obj, []string{version}) {
			return cur.Value, nil
		}
		return handler.EncodeStored(obj)
	})
	return err
}

// crdStorageVersion reads the storage version of gr's CRD from storage.
func (m *migrationServer) crdStorageVersion(ctx context.Context, gr schema.GroupResource) (string, error) {
	st, _ := m.s.stores.Store(crdGR)
	kv, err := st.Storage.Get(ctx, st.Key("", crdName(gr)))
	if err != nil {
		return "", fmt.Errorf("reading the CRD of %s: %w", gr, err)
	}
	obj, err := handler.DecodeStored(kv.Value)
	if err != nil {
		return "", err
	}
	c, err := crd.Decode(obj)
	if err != nil {
		return "", err
	}
	return crdStorageVersion(c.Spec.Versions), nil
}

// crdName is the name of the CRD serving gr (its plural is always the
// accepted one: a CRD whose plural conflicts serves nothing).
func crdName(gr schema.GroupResource) string { return gr.Resource + "." + gr.Group }

func (m *migrationServer) UpdateMigration(ctx context.Context, name string, update func(*svmv1.StorageVersionMigration) bool) (*svmv1.StorageVersionMigration, error) {
	st, ok := m.s.stores.Store(svmGR)
	if !ok {
		return nil, errors.New("no store for storage version migrations")
	}
	var out *svmv1.StorageVersionMigration
	kv, err := storage.GuaranteedUpdate(ctx, st.Storage, st.Key("", name), func(cur storage.KeyValue) ([]byte, error) {
		svm, err := builtin.DecodeMigration(cur.Value)
		if err != nil {
			return nil, err
		}
		out = svm
		if !update(svm) {
			return cur.Value, nil
		}
		obj, err := handler.DecodeStored(cur.Value)
		if err != nil {
			return nil, err
		}
		status, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&svm.Status)
		if err != nil {
			return nil, err
		}
		obj["status"] = status
		return handler.EncodeStored(obj)
	})
	if errors.Is(err, storage.ErrNotFound) {
		return nil, fmt.Errorf("%w: %s", controllers.ErrMigrationGone, name)
	}
	if err != nil {
		return nil, err
	}
	out.ResourceVersion = strconv.FormatInt(kv.ModRevision, 10)
	return out, nil
}

// crdStorageVersion is the name of the storage version among versions.
func crdStorageVersion(versions []apiextensionsv1.CustomResourceDefinitionVersion) string {
	for _, v := range versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}
