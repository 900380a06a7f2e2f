package handler

import (
	"errors"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/codec"
)

// create stores a new object: decode, fill system fields, convert to the
// storage version, admit, validate, check the namespace, store, answer.
func (h *Handler) create(c *call) {
	if err := h.doCreate(c); err != nil {
		codec.WriteStatus(c.w, c.r, err)
	}
}

func (h *Handler) doCreate(c *call) error {
	if c.info.Name != "" {
		return methodNotSupported(c)
	}
	dry, err := dryRun(c.r)
	if err != nil {
		return err
	}
	obj, err := decodeBody(c)
	if err != nil {
		return err
	}
	if err := checkTypeMeta(c, obj); err != nil {
		return err
	}
	if c.def.Namespaced() {
		if ns, _ := metadata(obj)["namespace"].(string); ns != "" && ns != c.info.Namespace {
			return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
		}
	}
	if rv, _ := metadata(obj)["resourceVersion"].(string); rv != "" {
		return apierrors.NewBadRequest("resourceVersion should not be set on objects to be created")
	}
	if err := pruneAndDefault(c, obj); err != nil {
		return err
	}
	h.prepareCreate(c, obj)
	obj = toStorageVersion(c, obj)
	// Mutating admission plugs in here (and prunes and defaults again).
	name, _ := metadata(obj)["name"].(string)
	if c.def.Terminating {
		return apierrors.NewForbidden(c.gr(), name, errors.New("create not allowed while custom resource definition is terminating"))
	}
	if errs := append(validateCreate(c, obj), validateSchema(c, obj, nil)...); len(errs) > 0 {
		return apierrors.NewInvalid(schema.GroupKind{Group: c.def.Group, Kind: c.def.Kind}, name, errs)
	}
	// Validating admission plugs in here.
	if c.def.Namespaced() {
		if err := h.checkNamespace(c, name); err != nil {
			return err
		}
	}
	if dry {
		h.writeObject(c, http.StatusCreated, obj)
		return nil
	}
	data, err := encodeStored(obj)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	rev, err := c.store.Storage.Create(c.r.Context(), c.store.Key(c.info.Namespace, name), data)
	if err != nil {
		return storageError(err, c.gr(), name, "create")
	}
	h.writeStored(c, http.StatusCreated, obj, data, rev)
	return nil
}
