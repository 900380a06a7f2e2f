package handler

import (
	"errors"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/crdserver/crdserver/internal/admission"
	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/registry"
	"github.com/crdserver/crdserver/internal/storage"
)

// create stores a new object: decode, fill system fields, admit,
// validate, check the namespace, convert to the storage version, store,
// convert back, answer.
func (h *Handler) create(c *call) {
	if err := h.doCreate(c); err != nil {
		codec.WriteStatus(c.w, c.r, err)
	}
}

func (h *Handler) doCreate(c *call) error {
	if c.info.Name != "" {
		return methodNotSupported(c)
	}
	if err := checkWriteOptions(c, ""); err != nil {
		return err
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
		// Upstream's storage refuses it with an error that is not a
		// Status, which its handler answers as a 500 with reason Unknown.
		return unknownError(errors.New("resourceVersion should not be set on objects to be created"))
	}
	return h.createObject(c, obj, dry)
}

// createObject is the create path from a decoded object on: default,
// record its managed fields, admit, validate, store, answer. A
// server-side apply to an object that does not exist joins it here.
func (h *Handler) createObject(c *call, obj map[string]any, dry bool) (err error) {
	if err = pruneAndDefault(c, obj); err != nil {
		return err
	}
	fillNamespace(c, obj)
	if !c.applied {
		recordFields(c, nil, obj, "")
	}
	// Upstream's NamespaceLifecycle is the first admission plugin: a
	// create in a namespace that is missing or terminating is refused
	// before anything else looks at the object.
	if _, unstored := c.def.Hooks.(registry.Creator); c.def.Namespaced() && !unstored {
		name, _ := metadata(obj)["name"].(string)
		if err := h.checkNamespace(c, name); err != nil {
			return err
		}
	}
	if a, ok := c.def.Hooks.(registry.CreateAdmitter); ok {
		if err := a.AdmitCreate(c.r.Context(), obj); err != nil {
			name, _ := metadata(obj)["name"].(string)
			return apierrors.NewForbidden(c.gr(), name, err)
		}
	}
	if obj, err = h.mutate(c, admission.Create, obj, nil, nil, ""); err != nil {
		return err
	}
	if obj, err = c.conv().ToHooks(c.r.Context(), obj); err != nil {
		return err
	}
	if cr, ok := c.def.Hooks.(registry.Creator); ok {
		return h.createUnstored(c, cr, obj)
	}
	if err := checkWrite(c, obj, nil); err != nil {
		return err
	}
	if w, ok := c.def.Hooks.(registry.PrepareWarner); ok {
		for _, text := range w.PrepareWarnings(obj) {
			addWarning(c, text)
		}
	}
	h.prepareCreate(c, obj)
	name, _ := metadata(obj)["name"].(string)
	if c.def.Terminating {
		return apierrors.NewForbidden(c.gr(), name, errors.New("create not allowed while custom resource definition is terminating"))
	}
	// As upstream's store, what the object is given from shared ranges
	// (a Service's cluster IP and node ports) is allocated before it is
	// validated: validation sees the allocation, and an allocation that
	// fails is the answer.
	if dry {
		if a, ok := c.def.Hooks.(registry.DryRunAllocator); ok {
			if err := a.AllocateDryRun(c.r.Context(), obj); err != nil {
				return err
			}
		}
	} else if a, ok := c.def.Hooks.(registry.Allocator); ok {
		undo, aerr := a.Allocate(c.r.Context(), obj)
		if aerr != nil {
			return aerr
		}
		// Freed again unless the object is stored (err is the result).
		defer func() {
			if err != nil {
				undo()
			}
		}()
	}
	errs := append(validateCreate(c, obj), validateSchema(c, obj, nil, "")...)
	errs = append(errs, validateScale(c, obj, "")...)
	if errs = validateRules(c, obj, nil, errs); len(errs) > 0 {
		return apierrors.NewInvalid(invalidKind(c.def), name, errs)
	}
	warnValid(c, obj, nil, "")
	if a, ok := c.def.Hooks.(registry.CreateAdmissionChecker); ok {
		if err := a.CheckCreateAdmission(c.r.Context(), obj); err != nil {
			return apierrors.NewForbidden(c.gr(), name, err)
		}
	}
	if err := h.validateAdmission(c, admission.Create, obj, nil, nil, nil, ""); err != nil {
		return err
	}
	if c.def.Namespaced() {
		if h.quota != nil {
			if err := h.chargeQuota(c, name, "", obj, nil, dry); err != nil {
				return err
			}
		}
	}
	if obj, err = c.conv().ToStorage(c.r.Context(), obj); err != nil {
		return err
	}
	key := c.store.Key(c.info.Namespace, name)
	if dry {
		// A dry run writes nothing but still fails where the write
		// would: on a name that is taken.
		if _, err := c.store.Storage.Get(c.r.Context(), key); err == nil {
			return h.alreadyExists(c, key, name)
		} else if !errors.Is(err, storage.ErrNotFound) {
			return storageError(err, c.gr(), name, "create")
		}
		h.writeObject(c, http.StatusCreated, obj)
		return nil
	}
	enc, err := encodeForStorage(obj)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	rev, err := storage.CreateWithTTL(c.r.Context(), c.store.Storage, key, enc.JSON, ttl(c.def))
	if errors.Is(err, storage.ErrExists) {
		return h.alreadyExists(c, key, name)
	}
	if err != nil {
		return storageError(err, c.gr(), name, "create")
	}
	h.writeStored(c, http.StatusCreated, key, obj, enc, rev)
	return nil
}

// createUnstored answers a create of a resource that stores nothing (a
// review): validate, admit, and answer with what the hooks compute.
func (h *Handler) createUnstored(c *call, cr registry.Creator, obj map[string]any) error {
	if v, ok := c.def.Hooks.(registry.Validator); ok {
		if errs := v.Validate(obj); len(errs) > 0 {
			name, _ := metadata(obj)["name"].(string)
			return apierrors.NewInvalid(invalidKind(c.def), name, errs)
		}
	}
	if err := h.validateAdmission(c, admission.Create, obj, nil, nil, nil, ""); err != nil {
		return err
	}
	out, err := cr.Create(c.r.Context(), obj)
	if err != nil {
		return err
	}
	h.writeObject(c, http.StatusCreated, out)
	return nil
}

// alreadyExists is upstream's 409 for a create whose name is taken; when
// the object there is being deleted the message says so, as the name
// frees once its finalizers are done.
func (h *Handler) alreadyExists(c *call, key, name string) error {
	err := apierrors.NewAlreadyExists(c.gr(), name)
	if kv, gerr := c.store.Storage.Get(c.r.Context(), key); gerr == nil {
		if cur, derr := decodeStored(kv.Value); derr == nil {
			if _, deleting := metadata(cur)["deletionTimestamp"]; deleting {
				err.ErrStatus.Message = "object is being deleted: " + err.ErrStatus.Message
			}
		}
	}
	return err
}

// fillNamespace sets a namespaced object's namespace from the request
// when the body names none, as upstream does before admission.
func fillNamespace(c *call, obj map[string]any) {
	if !c.def.Namespaced() {
		return
	}
	if md := metadata(obj); md["namespace"] == nil || md["namespace"] == "" {
		md["namespace"] = c.info.Namespace
	}
}

// chargeQuota charges a write of obj (old nil for a create) to the
// namespace's ResourceQuotas, as upstream's last admission plugin does.
func (h *Handler) chargeQuota(c *call, name, sub string, obj, old map[string]any, dry bool) error {
	return admissionRefusal(c, name, h.quota.Charge(c.r.Context(), c.gr(), c.info.Namespace, sub, obj, old, dry))
}

// admissionRefusal is how upstream's admission answers an admission
// plugin's error about the object name: a Status as it is, any other
// error as a 403.
func admissionRefusal(c *call, name string, err error) error {
	if _, ok := err.(apierrors.APIStatus); ok || err == nil {
		return err
	}
	return apierrors.NewForbidden(c.gr(), name, err)
}
