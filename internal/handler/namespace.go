package handler

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/storage"
	"github.com/crdserver/crdserver/internal/watchcache"
)

var namespacesGR = schema.GroupResource{Resource: "namespaces"}

// checkNamespace refuses creates in a namespace that does not exist (404)
// or is terminating (403), as upstream's NamespaceLifecycle admission does.
// Like upstream's informer-backed plugin it reads the namespace from the
// namespaces watch cache, and reads storage only when the cache does not
// hold it (a namespace created a moment ago the cache has not seen yet).
func (h *Handler) checkNamespace(c *call, name string) error {
	ns := c.info.Namespace
	st, ok := h.stores.Store(namespacesGR)
	if !ok {
		return nil
	}
	encoded, err := h.namespaceJSON(c.r.Context(), st, ns)
	if errors.Is(err, storage.ErrNotFound) {
		return apierrors.NewNotFound(namespacesGR, ns)
	}
	if err != nil {
		return storageError(err, namespacesGR, ns, "get")
	}
	terminating, err := namespaceTerminating(encoded)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if terminating {
		e := apierrors.NewForbidden(c.gr(), name, fmt.Errorf("unable to create new content in namespace %s because it is being terminated", ns))
		e.ErrStatus.Details.Causes = append(e.ErrStatus.Details.Causes, metav1.StatusCause{
			Type:    "NamespaceTerminating",
			Message: fmt.Sprintf("namespace %s is being terminated", ns),
			Field:   "metadata.namespace",
		})
		return e
	}
	return nil
}

// namespaceJSON returns the encoded namespace ns: from the watch cache
// (whatever it holds, as an informer would), else from storage.
func (h *Handler) namespaceJSON(ctx context.Context, st *Store, ns string) ([]byte, error) {
	key := st.Key("", ns)
	if st.Cache != nil {
		it, err := st.Cache.Get(ctx, key, watchcache.GetOptions{ResourceVersion: "0"})
		if err == nil {
			return it.JSON(), nil
		}
		if !errors.Is(err, storage.ErrNotFound) {
			return nil, err
		}
	}
	kv, err := st.Storage.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	return kv.Value, nil
}

// namespaceTerminating reports whether an encoded namespace is being
// deleted: phase Terminating or a deletionTimestamp key. Nearly every
// namespace is neither, and then its JSON names neither (stored values are
// json.Marshal output, which escapes no letters): such a value is answered
// from the bytes alone. Anything else is decoded and read as before.
func namespaceTerminating(encoded []byte) (bool, error) {
	if !bytes.Contains(encoded, []byte(`"deletionTimestamp"`)) &&
		!bytes.Contains(encoded, []byte(`"Terminating"`)) &&
		bytes.IndexByte(encoded, '\\') < 0 {
		return false, nil
	}
	obj, err := decodeStored(encoded)
	if err != nil {
		return false, fmt.Errorf("decoding namespace: %w", err)
	}
	phase, _ := nested(obj, "status", "phase").(string)
	_, deleting := metadata(obj)["deletionTimestamp"]
	return phase == "Terminating" || deleting, nil
}

// nested returns obj[path[0]][path[1]]..., or nil.
func nested(obj map[string]any, path ...string) any {
	var cur any = obj
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[p]
	}
	return cur
}
