package handler

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/registry"
	"github.com/crdserver/crdserver/internal/storage"
	"github.com/crdserver/crdserver/internal/watchcache"
)

// Rewrite writes a stored object again at its definition's storage
// version, as a storage version migration asks: the object as listed from
// the resource's watch cache (pruned and defaulted as every read is),
// converted to the storage version, written back on the condition that it
// is still at the revision it was listed at. The content does not change,
// so neither generation nor managedFields move; validation is skipped, as
// nothing but the encoding changes.
//
// It reports whether it wrote. An object already stored at the storage
// version and written since the schema last changed needs no write. An
// object that changed or went since it was listed is not written either:
// whoever wrote it wrote at the current storage version, so a conflict is
// success here. Safe to run concurrently, on several replicas too: every
// write is a compare-and-swap and rewriting twice changes nothing.
func (h *Handler) Rewrite(ctx context.Context, def *registry.Definition, store *Store, it *watchcache.Item) (bool, error) {
	av := def.StorageAPIVersion()
	if av == "" {
		return false, nil
	}
	if hasAPIVersion(it.Head(), av) && it.Revision > def.SchemaRevision {
		return false, nil
	}
	obj, err := decodeStored(it.JSON())
	if err != nil {
		return false, apierrors.NewInternalError(err)
	}
	// Converted as a write in the version the object is stored at would
	// be: through toStorageVersion, whatever conversion it does.
	c, err := rewriteCall(ctx, def, store, obj)
	if err != nil {
		return false, err
	}
	if obj, err = c.conv().ToStorage(c.r.Context(), obj); err != nil {
		return false, err
	}
	data, err := encodeStored(obj)
	if err != nil {
		return false, apierrors.NewInternalError(err)
	}
	_, err = storage.UpdateWithTTL(ctx, store.Storage, it.Key, data, it.Revision, ttl(def))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, storage.ErrConflict), errors.Is(err, storage.ErrNotFound):
		return false, nil
	default:
		return false, storageError(err, def.GroupResource(), it.Name, "update")
	}
}

// rewriteCall is the call of a write in the version obj is stored at, as
// the conversion steps see it.
func rewriteCall(ctx context.Context, def *registry.Definition, store *Store, obj map[string]any) (*call, error) {
	av, _ := obj["apiVersion"].(string)
	gv, err := schema.ParseGroupVersion(av)
	if err != nil || gv.Group != def.Group {
		return nil, apierrors.NewInternalError(fmt.Errorf("stored object has apiVersion %q", av))
	}
	for i := range def.Versions {
		if def.Versions[i].Name == gv.Version {
			r, err := http.NewRequestWithContext(ctx, http.MethodPut, "/", nil)
			if err != nil {
				return nil, err
			}
			return &call{r: r, def: def, version: &def.Versions[i], store: store}, nil
		}
	}
	return nil, apierrors.NewInternalError(fmt.Errorf("stored object is at version %q, which %s no longer has", gv.Version, def.GroupResource()))
}

// hasAPIVersion reports whether an encoded object (keys sorted, so
// apiVersion first) has apiVersion av.
func hasAPIVersion(encoded []byte, av string) bool {
	const prefix = `{"apiVersion":"`
	return len(encoded) > len(prefix)+len(av) &&
		string(encoded[:len(prefix)]) == prefix &&
		string(encoded[len(prefix):len(prefix)+len(av)]) == av &&
		encoded[len(prefix)+len(av)] == '"'
}
