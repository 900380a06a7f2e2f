package handler

import (
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/storage"
)

var namespacesGR = schema.GroupResource{Resource: "namespaces"}

// checkNamespace refuses creates in a namespace that does not exist (404)
// or is terminating (403), as upstream's NamespaceLifecycle admission does.
func (h *Handler) checkNamespace(c *call, name string) error {
	ns := c.info.Namespace
	st, ok := h.stores.Store(namespacesGR)
	if !ok {
		return nil
	}
	kv, err := st.Storage.Get(c.r.Context(), st.Key("", ns))
	if errors.Is(err, storage.ErrNotFound) {
		return apierrors.NewNotFound(namespacesGR, ns)
	}
	if err != nil {
		return storageError(err, namespacesGR, ns, "get")
	}
	obj, err := decodeStored(kv.Value)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	phase, _ := nested(obj, "status", "phase").(string)
	_, deleting := metadata(obj)["deletionTimestamp"]
	if phase == "Terminating" || deleting {
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
