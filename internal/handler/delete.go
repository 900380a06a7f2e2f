package handler

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/registry"
	"github.com/crdserver/crdserver/internal/storage"
	"github.com/crdserver/crdserver/internal/watchcache"
)

// delete removes one object, or marks it deleted while finalizers remain.
func (h *Handler) delete(c *call) {
	opts, err := deleteOptions(c)
	if err != nil {
		codec.WriteStatus(c.w, c.r, err)
		return
	}
	warnOrphaning(c, opts)
	if dc, ok := c.def.Hooks.(registry.DeleteChecker); ok {
		if err := dc.CheckDelete(c.info.Name); err != nil {
			codec.WriteStatus(c.w, c.r, err)
			return
		}
	}
	if h.admissionIdle(c) {
		uid, done, err := deleteCached(c.r.Context(), c.def, c.store, c.info.Namespace, c.info.Name, opts)
		if err != nil {
			codec.WriteStatus(c.w, c.r, err)
			return
		}
		if done {
			writeObj(c, http.StatusOK, deletedStatus(c, c.info.Name, uid))
			return
		}
	}
	obj, deleted, err := h.deleteObject(c.r.Context(), c.def, c.store, c.info.Namespace, c.info.Name, opts, h.deleteAdmission(c, c.info.Namespace, c.info.Name, opts))
	if err != nil {
		codec.WriteStatus(c.w, c.r, err)
		return
	}
	if !deleted {
		h.writeObject(c, markedCode(opts), obj)
		return
	}
	if _, ok := c.def.Hooks.(registry.ReturnsDeletedObject); ok {
		h.writeObject(c, http.StatusOK, obj)
		return
	}
	writeObj(c, http.StatusOK, deleteStatus(c, obj))
}

// markedCode is the status code of a delete that only marked the object:
// 202 when the client asked, with the legacy orphanDependents=false, to
// delete the dependents, else 200, as upstream answers (it would answer
// 202 to every delete that waits, but for the clients that expect 200).
func markedCode(opts *metav1.DeleteOptions) int {
	if o := opts.OrphanDependents; o != nil && !*o { //nolint:staticcheck // the legacy option is still served
		return http.StatusAccepted
	}
	return http.StatusOK
}

// warnOrphaning warns a delete (or delete of a collection) that leaves
// the propagation policy to a resource whose default orphans the
// dependents, whatever its outcome, as upstream's Job storage warns.
func warnOrphaning(c *call, opts *metav1.DeleteOptions) {
	if o, ok := c.def.Hooks.(registry.OrphansByDefault); ok && opts.PropagationPolicy == nil && opts.OrphanDependents == nil {
		addWarning(c, o.OrphanDependentsByDefault())
	}
}

// deleteOptions reads DeleteOptions from the body or, when there is none,
// from the query, as upstream does: its parameter codec words a bad value
// (strconv's words for gracePeriodSeconds), reads a boolean as true unless
// it is "0" or "false", and takes uid and resourceVersion as
// preconditions.
func deleteOptions(c *call) (*metav1.DeleteOptions, error) {
	opts := &metav1.DeleteOptions{}
	body, err := readBody(c)
	if err != nil {
		return nil, err
	}
	if len(body) > 0 {
		err = decodeDeleteOptions(body, c.r.Header.Get("Content-Type"), opts)
	} else if err = metainternalversionscheme.ParameterCodec.DecodeParameters(c.r.URL.Query(), metav1.SchemeGroupVersion, opts); err != nil {
		err = apierrors.NewBadRequest(err.Error())
	}
	if err != nil {
		return nil, err
	}
	// Upstream's validation words the errors (a bad propagationPolicy or
	// dryRun is a 422 on DeleteOptions).
	if err := invalidOptions("DeleteOptions", validation.ValidateDeleteOptions(opts)); err != nil {
		return nil, err
	}
	return opts, nil
}

// decodeDeleteOptions decodes a DeleteOptions body into opts with
// upstream's own decoder, the meta codecs': JSON (when contentType is
// empty too), YAML or protobuf, else a 415. The kind is DeleteOptions,
// under any apiVersion (it is registered unversioned: clients send
// per-group ones), or missing; another kind, a malformed body and a field
// of the wrong type are 400s in its words.
func decodeDeleteOptions(body []byte, contentType string, opts *metav1.DeleteOptions) error {
	if contentType == "" {
		contentType = runtime.ContentTypeJSON
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return codec.UnsupportedMediaType()
	}
	info, ok := runtime.SerializerInfoForMediaType(metainternalversionscheme.Codecs.SupportedMediaTypes(), mt)
	if !ok {
		return codec.UnsupportedMediaType()
	}
	kind := metav1.SchemeGroupVersion.WithKind("DeleteOptions")
	obj, _, err := metainternalversionscheme.Codecs.DecoderToVersion(info.Serializer, metav1.SchemeGroupVersion).Decode(body, &kind, opts)
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	if obj != runtime.Object(opts) {
		return apierrors.NewBadRequest("decoded object cannot be converted to DeleteOptions")
	}
	return nil
}

// DeleteObject deletes namespace/name, honouring preconditions and
// finalizers. It returns the object (its last state, or the state marked for
// deletion) and whether it is gone; the object is nil when it went without
// being read (see deleteCached). Controllers call it too, so that a
// namespace's contents are deleted exactly as a client's delete would.
func (h *Handler) DeleteObject(ctx context.Context, def *registry.Definition, store *Store, namespace, name string, opts *metav1.DeleteOptions) (map[string]any, bool, error) {
	if _, done, err := deleteCached(ctx, def, store, namespace, name, opts); done || err != nil {
		return nil, done, err
	}
	return h.deleteObject(ctx, def, store, namespace, name, opts, nil)
}

// deleteCached deletes namespace/name as the watch cache holds it, without
// reading storage or decoding the object, when the delete needs nothing
// from it but its uid: no dry run, no finalizers (the object's, the
// garbage collector's or the resource's own), nothing to release, and
// preconditions the cached copy meets. Its compare-and-swap at the cached
// revision deletes exactly that copy, as upstream's store starts a delete
// from its cached object. done is false when the ordinary delete must
// decide: no cached copy, one that is out of date (the swap failed), one
// with finalizers, or preconditions it does not meet (storage's copy may,
// and the ordinary delete words the conflict).
func deleteCached(ctx context.Context, def *registry.Definition, store *Store, namespace, name string, opts *metav1.DeleteOptions) (uid string, done bool, err error) {
	if store.Cache == nil || !mayDeleteCached(def, opts) {
		return "", false, nil
	}
	it, err := store.Cache.Get(ctx, store.Key(namespace, name), watchcache.GetOptions{ResourceVersion: "0"})
	if err != nil {
		return "", false, nil
	}
	return deleteItem(ctx, def, store, it, opts)
}

// mayDeleteCached reports whether a delete of def's objects with opts may
// go by deleteItem: no dry run, nothing for the resource to wait for or
// release, no garbage collector's finalizer to add.
func mayDeleteCached(def *registry.Definition, opts *metav1.DeleteOptions) bool {
	return len(opts.DryRun) == 0 && deletesAtOnce(def) && !addsGCFinalizer(def, opts)
}

// deleteItem is deleteCached for a cached copy at hand, which the caller
// has checked with mayDeleteCached.
func deleteItem(ctx context.Context, def *registry.Definition, store *Store, it *watchcache.Item, opts *metav1.DeleteOptions) (uid string, done bool, err error) {
	uid, finalizers, ok := deleteMetadata(it)
	if !ok || finalizers {
		return "", false, nil
	}
	if p := opts.Preconditions; p != nil {
		if p.UID != nil && string(*p.UID) != uid || p.ResourceVersion != nil && *p.ResourceVersion != rvString(it.Revision) {
			return "", false, nil
		}
	}
	if _, _, err := store.Storage.Delete(ctx, it.Key, it.Revision); err != nil {
		if staleCopy(err) {
			return "", false, nil
		}
		return "", false, storageError(err, def.GroupResource(), it.Name, "delete")
	}
	return uid, true, nil
}

// deletesAtOnce reports whether def's objects go when deleted, with
// nothing for the resource to wait for or release, and the delete answers
// with a Status.
func deletesAtOnce(def *registry.Definition) bool {
	_, waits := def.Hooks.(registry.Finalizer)
	_, releases := def.Hooks.(registry.Allocator)
	_, answers := def.Hooks.(registry.ReturnsDeletedObject)
	_, graceful := def.Hooks.(registry.GracefulDeleter)
	return !waits && !releases && !answers && !graceful
}

// addsGCFinalizer reports whether a delete of def's objects with opts may
// give the object a garbage collector's finalizer (orphan or
// foregroundDeletion): when it asks for either policy, or leaves it to the
// object's finalizers or def's default.
func addsGCFinalizer(def *registry.Definition, opts *metav1.DeleteOptions) bool {
	if o := opts.OrphanDependents; o != nil { //nolint:staticcheck // the legacy option is still served
		return *o
	}
	if opts.PropagationPolicy == nil {
		_, orphans := def.Hooks.(registry.OrphansByDefault)
		return orphans
	}
	return *opts.PropagationPolicy != metav1.DeletePropagationBackground
}

// deleteMetadata reads a cached object's uid, and whether it has
// finalizers (any value but an empty list), from its encoded metadata.
func deleteMetadata(it *watchcache.Item) (uid string, finalizers, ok bool) {
	var md []byte
	if it.MetaEnd > 0 {
		md = it.AppendRange(nil, int(it.MetaStart), int(it.MetaEnd))
	} else if md, _, ok = codec.FindPath(it.JSON(), []string{"metadata"}); !ok {
		return "", false, false
	}
	uidOK := false
	ok = codec.EachMember(md, func(name string, value []byte) bool {
		switch name {
		case "uid":
			uid, uidOK = codec.StringValue(value)
			return uidOK
		case "finalizers":
			finalizers = string(value) != "[]"
		}
		return true
	})
	return uid, finalizers, ok && uidOK
}

// deleteObject is DeleteObject with admission: admit, when not nil, is
// called with the object about to be deleted (or marked deleted) once its
// preconditions held; its error stops the delete.
func (h *Handler) deleteObject(ctx context.Context, def *registry.Definition, store *Store, namespace, name string, opts *metav1.DeleteOptions, admit func(context.Context, map[string]any) error) (map[string]any, bool, error) {
	gr := def.GroupResource()
	key := store.Key(namespace, name)
	dry := len(opts.DryRun) > 0
	own, _ := def.Hooks.(registry.Finalizer)
	gd, _ := def.Hooks.(registry.GracefulDeleter)
	for attempt := 0; ; attempt++ {
		kv, err := store.Storage.Get(ctx, key)
		if err != nil {
			return nil, false, storageError(err, gr, name, "delete")
		}
		obj, err := decodeStored(kv.Value)
		if err != nil {
			return nil, false, apierrors.NewInternalError(err)
		}
		setRV(obj, kv.ModRevision)
		md := metadata(obj)
		if err := checkPreconditions(def, name, md, opts.Preconditions); err != nil {
			return nil, false, err
		}
		_, deleting := md["deletionTimestamp"]
		if own != nil && deleting && own.Pending(obj) {
			return obj, false, nil // as upstream: nothing to do until it is finalized
		}
		var period int64
		graceful := gd != nil && (!deleting || gracePeriodOf(md) > 0)
		if graceful {
			var pending bool
			if period, pending = h.gracePeriod(gd, obj, opts); pending {
				return obj, false, nil // as upstream: the grace period it has runs on
			}
		}
		if admit != nil {
			if err := admit(ctx, obj); err != nil {
				return nil, false, err
			}
		}
		var stays, changed bool
		switch {
		case own != nil && !deleting:
			md["deletionTimestamp"] = h.now().UTC().Format(time.RFC3339)
			own.MarkDeleting(obj, opts)
			stays, changed = true, true
		case graceful:
			stays = h.markGraceful(def, md, opts, period)
			changed = true
		default:
			stays, changed = h.markDeleting(def, md, opts)
		}
		// writeMark stores obj as now marked, compare-and-swap on what was
		// read; retry says a conflict wants the loop run again.
		writeMark := func() (rev int64, retry bool, err error) {
			data, err := encodeStored(obj)
			if err != nil {
				return 0, false, apierrors.NewInternalError(err)
			}
			rev, err = storage.UpdateWithTTL(ctx, store.Storage, key, data, kv.ModRevision, ttl(def))
			if errors.Is(err, storage.ErrConflict) {
				if err := backoff(ctx, attempt); err != nil {
					return 0, false, storageError(err, gr, name, "delete")
				}
				return 0, true, nil
			}
			if err != nil {
				return 0, false, storageError(err, gr, name, "delete")
			}
			return rev, false, nil
		}
		if graceful && !stays && !dry {
			// Upstream writes the mark, then deletes what it wrote: a
			// watcher sees the pod modified, then deleted.
			rev, retry, err := writeMark()
			if err != nil {
				return nil, false, err
			}
			if retry {
				continue
			}
			kv.ModRevision = rev
		}
		if stays {
			if dry || !changed {
				return obj, false, nil
			}
			rev, retry, err := writeMark()
			if err != nil {
				return nil, false, err
			}
			if retry {
				continue
			}
			setRV(obj, rev)
			return obj, false, nil
		}
		if dry {
			return obj, true, nil
		}
		_, rev, err := store.Storage.Delete(ctx, key, kv.ModRevision)
		if errors.Is(err, storage.ErrConflict) {
			if err := backoff(ctx, attempt); err != nil {
				return nil, false, storageError(err, gr, name, "delete")
			}
			continue
		}
		if err != nil {
			return nil, false, storageError(err, gr, name, "delete")
		}
		if a, ok := def.Hooks.(registry.Allocator); ok {
			a.Release(ctx, obj)
		}
		setRV(obj, rev)
		return obj, true, nil
	}
}

// checkPreconditions refuses a delete whose preconditions md does not
// meet, in the words of the resource's own delete (registry.Finalizer),
// else in upstream's generic ones, which name the kind where other
// conflicts name the resource (its delete checks them by kind).
func checkPreconditions(def *registry.Definition, name string, md map[string]any, p *metav1.Preconditions) error {
	if p == nil {
		return nil
	}
	uid, _ := md["uid"].(string)
	rv, _ := md["resourceVersion"].(string)
	if own, ok := def.Hooks.(registry.Finalizer); ok {
		if p.UID != nil && string(*p.UID) != uid {
			return own.PreconditionFailed(name, "UID", string(*p.UID), uid)
		}
		if p.ResourceVersion != nil && *p.ResourceVersion != rv {
			return own.PreconditionFailed(name, "ResourceVersion", *p.ResourceVersion, rv)
		}
		return nil
	}
	byKind := schema.GroupResource{Group: def.Group, Resource: def.Kind}
	if p.UID != nil && string(*p.UID) != uid {
		return apierrors.NewConflict(byKind, name, fmt.Errorf("the UID in the precondition (%s) does not match the UID in record (%s). The object might have been deleted and then recreated", *p.UID, uid))
	}
	if p.ResourceVersion != nil && *p.ResourceVersion != rv {
		return apierrors.NewConflict(byKind, name, fmt.Errorf("the ResourceVersion in the precondition (%s) does not match the ResourceVersion in record (%s). The object might have been modified", *p.ResourceVersion, rv))
	}
	return nil
}

// gracePeriodOf is the deletionGracePeriodSeconds of md, 0 when it has
// none.
func gracePeriodOf(md map[string]any) int64 {
	g, _ := md["deletionGracePeriodSeconds"].(int64)
	return g
}

// gracePeriod is the grace period a delete with opts gives obj, as
// upstream's graceful delete decides it: for an object not yet marked,
// the resource's (a negative period asked for is 1); for one marked with
// a period, a shorter one asked for, else pending: the delete changes
// nothing.
func (h *Handler) gracePeriod(gd registry.GracefulDeleter, obj map[string]any, opts *metav1.DeleteOptions) (period int64, pending bool) {
	asked := opts.GracePeriodSeconds
	if asked != nil && *asked < 0 {
		asked = ptr.To[int64](1)
	}
	md := metadata(obj)
	if _, marked := md["deletionTimestamp"]; !marked {
		o := *opts
		o.GracePeriodSeconds = asked
		return gd.GracePeriod(obj, &o), false
	}
	if asked == nil || *asked >= gracePeriodOf(md) {
		return 0, true
	}
	return *asked, false
}

// markGraceful marks md deleted with period: a first delete sets the
// deletionTimestamp period seconds from now and a new generation; a
// later, shorter one moves the timestamp back by the difference (not
// before now: a period left that is not 0 is then 1). It gives md the
// garbage collector's finalizers opts ask for, and reports whether the
// object stays: while finalizers remain or the period is not 0.
func (h *Handler) markGraceful(def *registry.Definition, md map[string]any, opts *metav1.DeleteOptions, period int64) bool {
	now := h.now().UTC()
	if ts, ok := md["deletionTimestamp"].(string); ok {
		t, err := time.Parse(time.RFC3339, ts)
		if err != nil {
			t = now
		}
		next := t.Add(time.Duration(period-gracePeriodOf(md)) * time.Second)
		if next.Before(now) {
			next = now
			if period != 0 {
				period = 1
			}
		}
		md["deletionTimestamp"] = next.Format(time.RFC3339)
	} else {
		md["deletionTimestamp"] = now.Add(time.Duration(period) * time.Second).Format(time.RFC3339)
		if gen, ok := md["generation"].(int64); ok && gen > 0 {
			md["generation"] = gen + 1
		}
	}
	md["deletionGracePeriodSeconds"] = period
	_, orphans := def.Hooks.(registry.OrphansByDefault)
	fins, changed := gcFinalizers(md, opts, orphans)
	if changed {
		setFinalizers(md, fins)
	}
	return len(fins) > 0 || period > 0
}

// markDeleting gives md the garbage collector's finalizers opts ask for
// and, when any finalizer remains, marks it deleted as upstream's generic
// delete does: a deletionTimestamp and a new generation the first time, a
// grace period of 0 (also on a namespace or CRD its own delete marked
// without one). It reports whether the object stays, and whether md
// changed: a delete that changes nothing writes nothing. The finalizers
// change even on an object already being deleted (a foreground delete may
// turn into an orphaning one).
func (h *Handler) markDeleting(def *registry.Definition, md map[string]any, opts *metav1.DeleteOptions) (stays, changed bool) {
	_, orphans := def.Hooks.(registry.OrphansByDefault)
	fins, changed := gcFinalizers(md, opts, orphans)
	if len(fins) == 0 {
		return false, changed
	}
	if changed {
		setFinalizers(md, fins)
	}
	if _, ok := md["deletionTimestamp"]; !ok {
		md["deletionTimestamp"] = h.now().UTC().Format(time.RFC3339)
		// Upstream counts marking for deletion as a change of intent.
		if gen, ok := md["generation"].(int64); ok && gen > 0 {
			md["generation"] = gen + 1
		}
		changed = true
	}
	if g, ok := md["deletionGracePeriodSeconds"].(int64); !ok || g != 0 {
		md["deletionGracePeriodSeconds"] = int64(0)
		changed = true
	}
	return true, changed
}

// gcFinalizers returns md's finalizers with the garbage collector's
// (orphan, foregroundDeletion) set as a delete with opts asks, and whether
// they changed. The options decide first (the legacy orphanDependents
// before propagationPolicy), then a GC finalizer the object already has,
// then the resource's default: orphaning when orphanByDefault (batch/v1
// Jobs), else deleting dependents in the background (every other resource
// crdserver serves).
func gcFinalizers(md map[string]any, opts *metav1.DeleteOptions, orphanByDefault bool) ([]any, bool) {
	cur, _ := md["finalizers"].([]any)
	// Object validation refuses both at once.
	orphan := slices.Contains(cur, any(metav1.FinalizerOrphanDependents))
	foreground := slices.Contains(cur, any(metav1.FinalizerDeleteDependents))
	switch {
	case opts.OrphanDependents != nil: //nolint:staticcheck // the legacy option is still served
		orphan, foreground = *opts.OrphanDependents, false //nolint:staticcheck
	case opts.PropagationPolicy != nil:
		orphan = *opts.PropagationPolicy == metav1.DeletePropagationOrphan
		foreground = *opts.PropagationPolicy == metav1.DeletePropagationForeground
	case !orphan && !foreground:
		orphan = orphanByDefault
	}
	next := make([]any, 0, len(cur)+1)
	for _, f := range cur {
		if f != metav1.FinalizerOrphanDependents && f != metav1.FinalizerDeleteDependents {
			next = append(next, f)
		}
	}
	if orphan {
		next = append(next, metav1.FinalizerOrphanDependents)
	}
	if foreground {
		next = append(next, metav1.FinalizerDeleteDependents)
	}
	return next, !sameSet(cur, next)
}

func sameSet(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

func setFinalizers(md map[string]any, fins []any) {
	if len(fins) == 0 {
		delete(md, "finalizers")
		return
	}
	md["finalizers"] = fins
}
