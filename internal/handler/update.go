package handler

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/admission"
	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/conversion"
	"github.com/crdserver/crdserver/internal/registry"
	"github.com/crdserver/crdserver/internal/storage"
	"github.com/crdserver/crdserver/internal/watchcache"
)

// update replaces an object (PUT) on the main resource or a subresource.
func (h *Handler) update(c *call, sub string) {
	obj, rv, err := decodeReplacement(c)
	if err != nil {
		codec.WriteStatus(c.w, c.r, err)
		return
	}
	// The replacement ignores the current object: write need not copy it
	// for the mutation. obj is copied because a retry starts from it again.
	// Only now that the object is known to exist may a missing
	// resourceVersion be refused: upstream answers NotFound first.
	replace := func(cur map[string]any, _ []byte) (map[string]any, error) {
		if err := checkUIDPrecondition(c, obj, cur); err != nil {
			return nil, err
		}
		next := codec.DeepCopy(obj)
		curRV, _ := metadata(cur)["resourceVersion"].(string)
		if err := checkNewResourceVersion(c, next, curRV); err != nil {
			return nil, err
		}
		if err := keepSentManagedFields(next, cur); err != nil {
			return nil, err
		}
		return next, nil
	}
	if sub == "" && c.def.CreateOnUpdate {
		c.createMissing = func() error { return h.createOnUpdate(c, obj) }
	}
	// The write is conditional on a revision only when rv names one;
	// replace refuses any other.
	if n, err := parseResourceVersion(rv); err != nil || n == 0 {
		rv = ""
	}
	if err := h.doWrite(c, sub, rv, replace, false); err != nil {
		codec.WriteStatus(c.w, c.r, err)
	}
}

// createOnUpdate creates the object a PUT found missing, for a resource
// whose upstream strategy allows it: upstream asks the authorizer whether
// the user may create it, admits it as a create (with CreateOptions),
// and answers 201. Its store wipes the system fields the body carried
// (resourceVersion is ignored too), but a uid is a precondition no
// missing object meets.
func (h *Handler) createOnUpdate(c *call, obj map[string]any) error {
	// Upstream's store checks the precondition before its create asks
	// the authorizer.
	if err := checkUIDPrecondition(c, obj, nil); err != nil {
		return err
	}
	if err := h.authorizeCreate(c); err != nil {
		return err
	}
	dry, err := dryRun(c.r)
	if err != nil {
		return err
	}
	obj = codec.DeepCopy(obj)
	// The create records fields from decoded entries alone.
	if err := codec.MaterializeManagedFields(obj); err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	md := metadata(obj)
	for _, f := range []string{"resourceVersion", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"} {
		delete(md, f)
	}
	return h.createObject(c, obj, dry)
}

// decodeReplacement decodes a PUT body, checks it names the URL's object,
// and returns it with the resourceVersion it expects ("" for any).
func decodeReplacement(c *call) (map[string]any, string, error) {
	err := checkWriteOptions(c, "")
	var obj map[string]any
	if err == nil {
		obj, err = decodeBodyWith(c, codec.DecodeOptions{RawManagedFields: true})
	}
	if err == nil {
		err = checkTypeMeta(c, obj)
	}
	if err == nil {
		err = checkNameAndNamespace(c, obj)
	}
	if err != nil {
		return nil, "", err
	}
	rv, _ := metadata(obj)["resourceVersion"].(string)
	return obj, rv, nil
}

// keepSentManagedFields decides what becomes of the managedFields a
// replacement was decoded with, kept encoded: the stored ones sent back
// as they are (what clients that update what they read send) stay
// encoded, for the field manager's encoded path to compare by their
// bytes; anything else (decoding pruned it already) is decoded, so
// that only entries the server wrote travel encoded past this point.
func keepSentManagedFields(obj, cur map[string]any) error {
	sent, ok := metadata(obj)["managedFields"].(codec.Raw)
	if !ok {
		return nil
	}
	if stored, ok := metadata(cur)["managedFields"].(codec.Raw); ok && bytes.Equal(sent, stored) {
		return nil
	}
	if err := codec.MaterializeManagedFields(obj); err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	return nil
}

// checkUIDPrecondition: the uid a replacement carries is a precondition
// of upstream's store, checked against the current object (nil when
// missing) before anything else, and a conflict worded as its storage
// error when they differ.
func checkUIDPrecondition(c *call, obj, cur map[string]any) error {
	uid, _ := metadata(obj)["uid"].(string)
	if uid == "" {
		return nil
	}
	var have string
	if cur != nil {
		have, _ = metadata(cur)["uid"].(string)
	}
	if uid == have {
		return nil
	}
	return apierrors.NewConflict(c.gr(), c.info.Name, fmt.Errorf(
		"StorageError: invalid object, Code: 4, Key: %s, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: %s, UID in object meta: %s",
		upstreamKey(c), uid, have))
}

// upstreamKeyPrefixes are the built-ins kube-apiserver's storage keeps
// under another prefix than their resource's name (its storage factory's
// special prefixes).
var upstreamKeyPrefixes = map[schema.GroupResource]string{
	{Resource: "services"}:                              "services/specs",
	{Resource: "endpoints"}:                             "services/endpoints",
	{Group: "networking.k8s.io", Resource: "ingresses"}: "ingress",
}

// upstreamKey is the storage key of the URL's object in kube-apiserver,
// which its storage errors quote: a custom resource's, a CRD's and an
// APIService's are this server's, under their group; another built-in's
// is under its resource's name alone (or its special prefix).
func upstreamKey(c *call) string {
	if c.def.Custom() || c.def.Group == "apiextensions.k8s.io" || c.def.Group == "apiregistration.k8s.io" {
		return c.store.Key(c.info.Namespace, c.info.Name)
	}
	gr := schema.GroupResource{Group: c.def.Group, Resource: c.def.Resource}
	prefix, ok := upstreamKeyPrefixes[gr]
	if !ok {
		prefix = c.def.Resource
	}
	return (&Store{Prefix: "/registry/" + prefix + "/"}).Key(c.info.Namespace, c.info.Name)
}

// requireResourceVersion refuses a PUT without a resourceVersion, unless
// the resource allows unconditional updates. Upstream checks it once it
// read the current object, so a missing object is a 404 first; the 422
// names the resource as its kind (`crontabs.stable.example.com "m1" is
// invalid`), as upstream's does.
func requireResourceVersion(c *call) error {
	if u, ok := c.def.Hooks.(registry.UnconditionalUpdater); ok && u.AllowUnconditionalUpdate() {
		return nil
	}
	gr := c.gr()
	return apierrors.NewInvalid(schema.GroupKind{Group: gr.Group, Kind: gr.Resource}, c.info.Name, field.ErrorList{
		field.Invalid(field.NewPath("metadata", "resourceVersion"), uint64(0), "must be specified for an update"),
	})
}

// checkNewResourceVersion checks the resourceVersion an update's result
// carries against the current object's, curRV, as upstream's store does:
// one that is not a revision is its parser's error, a 500 without a
// reason; none (or "0") makes the update unconditional, which takes the
// current one when the resource allows it (see requireResourceVersion);
// any other must be the current one.
func checkNewResourceVersion(c *call, obj map[string]any, curRV string) error {
	md := metadata(obj)
	rv, _ := md["resourceVersion"].(string)
	n, err := parseResourceVersion(rv)
	switch {
	case err != nil:
		return statusError(http.StatusInternalServerError, metav1.StatusReasonUnknown, err.Error())
	case n == 0:
		if err := requireResourceVersion(c); err != nil {
			return err
		}
		md["resourceVersion"] = curRV
	case rv != curRV:
		return apierrors.NewConflict(c.gr(), c.info.Name, errors.New(optimisticLockMsg))
	}
	return nil
}

// parseResourceVersion reads an object's resourceVersion as upstream's
// store does: none is 0.
func parseResourceVersion(rv string) (uint64, error) {
	if rv == "" {
		return 0, nil
	}
	return strconv.ParseUint(rv, 10, 64)
}

// mutation computes the new object from the current one (a decoded copy the
// function may keep) and its JSON with resourceVersion.
type mutation func(old map[string]any, oldJSON []byte) (map[string]any, error)

// write is the update path shared by PUT and PATCH: read the current
// object, compute the new one, fill system fields, validate, and
// compare-and-swap; retried on conflict unless the client named a
// resourceVersion. An update that removes the last finalizer of an object
// being deleted deletes it.
func (h *Handler) write(c *call, sub, wantRV string, mutate mutation) {
	if err := h.doWrite(c, sub, wantRV, mutate, true); err != nil {
		codec.WriteStatus(c.w, c.r, err)
	}
}

// doWrite is write; copyOld false hands mutate the current object itself
// (only for mutations that neither modify nor keep it).
//
// The first attempt starts from the watch cache's copy of the object, as
// upstream's does: it saves a storage read per update, and the
// compare-and-swap still guarantees nothing is lost. The copy may be
// stale, so anything that copy decides is not trusted: a conflict, a
// mismatched resourceVersion precondition, a failed mutation or
// validation, or finding nothing to change sends the write back to read
// storage and try again.
func (h *Handler) doWrite(c *call, sub, wantRV string, mutate mutation, copyOld bool) error {
	dry, err := dryRun(c.r)
	if err != nil {
		return err
	}
	ctx := c.r.Context()
	key := c.store.Key(c.info.Namespace, c.info.Name)
	gk := invalidKind(c.def)
	// A dry run reads storage, as upstream's does: it writes nothing that
	// would catch a stale copy.
	useCache := c.store.Cache != nil && !dry
	// A replacement, merge patch or server-side apply of an object (or of
	// its status) at its storage version, answered in JSON, reads the
	// current object's managedFields only to record its own: they stay
	// encoded (see decodeStoredFieldsRaw), and the recorded ones are
	// encoded too unless they must be worked out anew. Built-ins' hooks
	// see them so as well: a Typed decode encodes the Raw as it is.
	// Everything after reads a codec.Raw as the entries it holds, and so
	// do webhooks, which receive it encoded as it is; a write through any
	// other path decodes them, and so does one that admission policies
	// may see, which would decode them anyway.
	rawFields := false
	if (!copyOld || c.mergesOnly || c.applies) && (sub == "" || sub == "status") && !dry && c.media.As == "" && c.present == nil &&
		c.def.StorageAPIVersion() == c.apiVersion() && h.admissionKeepsEncoded(c) {
		rawFields = true
	}
	// What an attempt reserved (registry.UpdateAllocator) is freed unless
	// that attempt's object is stored.
	var alloc updateAllocation
	defer func() { alloc.undo() }()
	for attempt := 0; ; attempt++ {
		alloc.undo()
		cur, err := h.current(ctx, c, key, useCache)
		if err != nil {
			if c.createMissing != nil && apierrors.IsNotFound(err) {
				return c.createMissing()
			}
			return err
		}
		// retry reports whether a failure may come from a stale cached
		// copy, and arranges a fresh read for the next attempt.
		retry := func() bool {
			if !cur.cached {
				return false
			}
			useCache = false
			return true
		}
		// The write happens in the request's version: the current
		// object is converted to it (it may be stored at any version).
		curJSON, rawAt := cur.json, cur.rawFields
		if !inVersion(c, curJSON) {
			conv, err := c.conv().FromStored(c.r.Context(), []conversion.Object{{JSON: curJSON, Key: key, Revision: cur.rev}})
			if err != nil {
				return err
			}
			// Where the cache found the managedFields holds for its
			// bytes only.
			curJSON, rawAt = conv[0], [2]int{}
		}
		var old map[string]any
		if rawFields {
			old, err = decodeStoredFieldsRawAt(curJSON, rawAt)
		} else {
			old, err = decodeStored(curJSON)
		}
		if err != nil {
			return apierrors.NewInternalError(err)
		}
		// Admission webhooks receive old's encoding as it is, rather than
		// one of their own: nothing below changes old.
		oldJSON := curJSON
		curRV, _ := metadata(old)["resourceVersion"].(string)
		if wantRV != "" && wantRV != curRV {
			if retry() {
				continue
			}
			return apierrors.NewConflict(c.gr(), c.info.Name, errors.New(optimisticLockMsg))
		}
		mutOld := old
		if copyOld {
			mutOld = codec.DeepCopy(old)
		}
		obj, err := mutate(mutOld, curJSON)
		if err == nil {
			err = pruneAndDefault(c, obj)
		}
		if err != nil {
			if retry() {
				continue
			}
			return err
		}
		if !c.applied {
			recordFields(c, old, obj, sub)
		}
		if a, ok := c.def.Hooks.(registry.UpdateAdmitter); ok {
			if err := a.AdmitUpdate(ctx, sub, obj, old); err != nil {
				return admissionRefusal(c, c.info.Name, err)
			}
		}
		if obj, err = h.mutate(c, admission.Update, obj, old, oldJSON, sub); err != nil {
			return err
		}
		if obj, err = c.conv().ToHooks(c.r.Context(), obj); err != nil {
			return err
		}
		if c.conv().TypedVersions() && !inVersion(c, cur.json) {
			// The hooks compare with the stored object as stored.
			if old, err = decodeStored(cur.json); err != nil {
				return apierrors.NewInternalError(err)
			}
			oldJSON = cur.json
		}
		if err := checkWrite(c, obj, old); err != nil {
			return err
		}
		obj = h.prepareUpdate(c, obj, old, sub)
		// Allocated before validation, as on a create.
		if ua, ok := c.def.Hooks.(registry.UpdateAllocator); ok && sub == "" && !shouldDeleteOnUpdate(c, obj) {
			if alloc.commit, alloc.release, err = ua.AllocateUpdate(ctx, obj, old, dry); err != nil {
				return err
			}
			if dry {
				alloc = updateAllocation{}
			}
		}
		errs := append(validateUpdate(c, obj, old, sub), validateSchema(c, obj, old, sub)...)
		errs = append(errs, validateScale(c, obj, sub)...)
		if errs = validateRules(c, obj, old, errs); len(errs) > 0 {
			if retry() {
				continue
			}
			return apierrors.NewInvalid(gk, c.info.Name, errs)
		}
		warnValid(c, obj, old, sub)
		// An object already in the storage version is encoded before
		// validating admission, which changes nothing, so that its
		// webhooks receive that encoding (with the request's
		// resourceVersion) rather than one of their own.
		var enc codec.Stored
		var objJSON func() []byte
		if c.conv().StoredAsIs(obj) {
			if enc, objJSON, err = encodeStoredAndAdmitted(obj); err != nil {
				return apierrors.NewInternalError(err)
			}
		}
		if a, ok := c.def.Hooks.(registry.UpdateAdmissionChecker); ok {
			if err := a.CheckUpdateAdmission(ctx, sub, obj, old); err != nil {
				return admissionRefusal(c, c.info.Name, err)
			}
		}
		if err := h.validateAdmission(c, admission.Update, obj, old, objJSON, oldJSON, sub); err != nil {
			return err
		}
		if h.quota != nil && c.def.Namespaced() {
			if err := h.chargeQuota(c, c.info.Name, sub, obj, old, dry); err != nil {
				return err
			}
		}
		if obj, err = c.conv().ToStorage(c.r.Context(), obj); err != nil {
			return err
		}
		if shouldDeleteOnUpdate(c, obj) {
			if dry {
				h.writeObject(c, http.StatusOK, obj)
				return nil
			}
			if _, _, err := c.store.Storage.Delete(ctx, key, cur.rev); err != nil {
				if (staleCopy(err) && retry()) || (errors.Is(err, storage.ErrConflict) && wantRV == "") {
					continue
				}
				return storageError(err, c.gr(), c.info.Name, "update")
			}
			h.writeObject(c, http.StatusOK, obj)
			return nil
		}
		if enc.JSON == nil {
			if enc, err = encodeForStorage(obj); err != nil {
				return apierrors.NewInternalError(err)
			}
		}
		if cur.onlyTimesDiffer(enc) {
			// Upstream stores nothing when all a write changes is its
			// managedFields' times (fieldmanager's
			// IgnoreManagedFieldsTimestampsTransformer): recording saw a
			// change that defaulting, normalization or admission undid
			// (an apply of a Secret's stringData). The object keeps the
			// times it had, and is then found unchanged below.
			metadata(obj)["managedFields"] = metadata(old)["managedFields"]
			if enc, err = encodeForStorage(obj); err != nil {
				return apierrors.NewInternalError(err)
			}
		}
		data := enc.JSON
		if dry {
			h.writeObject(c, http.StatusOK, obj)
			return nil
		}
		if cur.stored != nil && bytes.Equal(data, cur.stored) {
			// Nothing changed: upstream writes nothing and answers with the
			// current object.
			alloc.done()
			h.writeStored(c, http.StatusOK, key, obj, enc, cur.rev)
			return nil
		}
		if cur.cached {
			if !enc.HasRV {
				useCache = false
				continue
			}
			if enc.RV.Equal(rvString(cur.rev), cur.json) {
				// A cached copy does not hold storage's exact bytes: when
				// the object seems unchanged, only storage's copy can tell.
				// While storage still holds the cached revision, obj was
				// worked out from what it holds, and its bytes decide;
				// otherwise the next attempt starts from storage's copy.
				unchanged, current, err := storedAs(ctx, c.store.Storage, key, cur.rev, data)
				if err != nil {
					return storageError(err, c.gr(), c.info.Name, "update")
				}
				if !current {
					useCache = false
					continue
				}
				if unchanged {
					alloc.done()
					h.writeStored(c, http.StatusOK, key, obj, enc, cur.rev)
					return nil
				}
			}
		}
		rev, err := storage.UpdateWithTTL(ctx, c.store.Storage, key, data, cur.rev, ttl(c.def))
		switch {
		case err == nil:
		case staleCopy(err) && retry():
			continue
		case errors.Is(err, storage.ErrConflict) && wantRV == "":
			if err := backoff(ctx, attempt); err != nil {
				return storageError(err, c.gr(), c.info.Name, "update")
			}
			continue
		default:
			return storageError(err, c.gr(), c.info.Name, "update")
		}
		alloc.done()
		h.writeStored(c, http.StatusOK, key, obj, enc, rev)
		return nil
	}
}

// updateAllocation is what an update attempt reserved: commit frees what
// the stored object no longer holds, release what the attempt reserved.
type updateAllocation struct {
	commit, release func()
}

// undo frees what the attempt reserved; its object was not stored.
func (a *updateAllocation) undo() {
	if a.release != nil {
		a.release()
	}
	*a = updateAllocation{}
}

// done frees what the stored object no longer holds.
func (a *updateAllocation) done() {
	if a.commit != nil {
		a.commit()
	}
	*a = updateAllocation{}
}

// staleCopy reports whether a write's failure may mean only that it
// started from an outdated copy: the object changed or went meanwhile.
// Any other failure (a timeout, an unavailable etcd) may hide a write that
// did happen, so it is never retried.
func staleCopy(err error) bool {
	return errors.Is(err, storage.ErrConflict) || errors.Is(err, storage.ErrNotFound)
}

// currentObject is the object a write starts from.
type currentObject struct {
	json   []byte // with metadata.resourceVersion
	rev    int64
	stored []byte // storage's exact bytes; nil for a cached copy
	cached bool
	// rawFields is where in json the cache found the managedFields in
	// Marshal's form (watchcache.Item.RawManagedFields); [0, 0] when it
	// did not, or the object was read from storage.
	rawFields [2]int
}

// onlyTimesDiffer reports whether enc is cur but for its managedFields'
// times (and not cur exactly).
func (cur currentObject) onlyTimesDiffer(enc codec.Stored) bool {
	from, to := enc.ManagedFrom, enc.ManagedTo
	switch {
	case from == to:
		return false
	case cur.stored != nil:
		return !bytes.Equal(enc.JSON, cur.stored) && codec.SameButTimes(enc.JSON, cur.stored, from, to)
	}
	rv := rvString(cur.rev)
	return enc.HasRV && !enc.RV.Equal(rv, cur.json) && enc.RV.EqualButTimes(rv, cur.json, from, to)
}

// current reads the object a write starts from: the watch cache's copy
// when fromCache and the cache has one, else storage's.
func (h *Handler) current(ctx context.Context, c *call, key string, fromCache bool) (currentObject, error) {
	if fromCache {
		it, err := c.store.Cache.Get(ctx, key, watchcache.GetOptions{ResourceVersion: "0"})
		if err == nil {
			return currentObject{json: it.JSON(), rev: it.Revision, cached: true, rawFields: it.RawManagedFields()}, nil
		}
		// Not in the cache (or the cache failed): storage decides.
	}
	kv, err := c.store.Storage.Get(ctx, key)
	if err != nil {
		return currentObject{}, storageError(err, c.gr(), c.info.Name, "update")
	}
	// As the cache's copy would be: pruned and defaulted with the storage
	// version's schema when stored before the schema last changed, as
	// upstream does on every read.
	var oldJSON []byte
	if sch := readSchema(c.def, kv.ModRevision); sch != nil {
		if _, oldJSON, err = normalized(kv.Value, kv.ModRevision, sch); err != nil {
			return currentObject{}, apierrors.NewInternalError(err)
		}
	} else if oldJSON, err = withRV(kv.Value, kv.ModRevision); err != nil {
		return currentObject{}, apierrors.NewInternalError(err)
	}
	stored := kv.Value
	if kv.Stale {
		// Stored under an old encryption key: rewrite even when
		// unchanged, so that replacing objects rotates keys.
		stored = nil
	}
	return currentObject{json: oldJSON, rev: kv.ModRevision, stored: stored}, nil
}

// storedAs reads key from storage: current says whether it is still at
// rev, and unchanged, then, whether it holds exactly data (and in the
// current form: a value under an old encryption key is rewritten even
// when unchanged, so that replacing objects rotates keys).
func storedAs(ctx context.Context, st storage.Interface, key string, rev int64, data []byte) (unchanged, current bool, err error) {
	kv, err := st.Get(ctx, key)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return false, false, nil
	case err != nil:
		return false, false, err
	case kv.ModRevision != rev:
		return false, false, nil
	}
	return !kv.Stale && bytes.Equal(kv.Value, data), true, nil
}

// shouldDeleteOnUpdate: an object being deleted whose last finalizer is gone.
func shouldDeleteOnUpdate(c *call, obj map[string]any) bool {
	md := metadata(obj)
	if _, ok := md["deletionTimestamp"]; !ok {
		return false
	}
	if f, _ := md["finalizers"].([]any); len(f) > 0 {
		return false
	}
	if fz, ok := c.def.Hooks.(registry.Finalizer); ok && fz.Pending(obj) {
		return false
	}
	return true
}

// backoff waits a little before retrying a conflicted write, more after
// repeated conflicts.
func backoff(ctx context.Context, attempt int) error {
	if attempt < 2 {
		return ctx.Err()
	}
	d := time.Duration(attempt) * time.Millisecond
	if d > 50*time.Millisecond {
		d = 50 * time.Millisecond
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// invalidKind is the kind a 422 about def's objects names: the resource's
// own, unless its hooks say otherwise (registry.InvalidKinder).
func invalidKind(def *registry.Definition) schema.GroupKind {
	if k, ok := def.Hooks.(registry.InvalidKinder); ok {
		return k.InvalidKind()
	}
	return schema.GroupKind{Group: def.Group, Kind: def.Kind}
}
