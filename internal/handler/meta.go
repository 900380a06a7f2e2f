package handler

import (
	"reflect"
	"time"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/apply"
	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/metacheck"
	"github.com/crdserver/crdserver/internal/registry"
)

// metaFields are ObjectMeta's JSON fields with the check that keeps a value.
// Anything else under metadata is dropped, and so is a field of the wrong
// type: upstream drops malformed metadata of custom resources rather than
// failing the request.
var metaFields = map[string]func(any) bool{
	"name":                       isString,
	"generateName":               isString,
	"namespace":                  isString,
	"selfLink":                   isString,
	"uid":                        isString,
	"resourceVersion":            isString,
	"generation":                 isInt,
	"creationTimestamp":          isTimeOrNull,
	"deletionTimestamp":          isTimeOrNull,
	"deletionGracePeriodSeconds": isInt,
	"labels":                     isStringMap,
	"annotations":                isStringMap,
	"finalizers":                 isStringList,
	"ownerReferences":            typedAs[[]metav1.OwnerReference],
	"managedFields":              isManagedFields,
}

// isManagedFields is typedAs[[]metav1.ManagedFieldsEntry] without the
// reflective conversion: every write checks the entries it recorded.
func isManagedFields(v any) bool {
	if raw, ok := v.(codec.Raw); ok {
		return isEncodedManagedFields(raw)
	}
	list, ok := v.([]any)
	if !ok {
		return false
	}
	for _, x := range list {
		e, ok := x.(map[string]any)
		if !ok {
			return false
		}
		for k, f := range e {
			switch k {
			case "manager", "operation", "apiVersion", "fieldsType", "subresource":
				ok = isString(f)
			case "time":
				ok = isTimeOrNull(f)
			}
			if !ok && f != nil {
				return false
			}
		}
	}
	return true
}

// isEncodedManagedFields is isManagedFields on entries kept encoded.
func isEncodedManagedFields(raw codec.Raw) bool {
	valid := true
	codec.EachRawObjectMember(raw, func(k, f []byte) bool {
		if string(f) == "null" {
			return true
		}
		switch string(k) {
		case "manager", "operation", "apiVersion", "fieldsType", "subresource":
			valid = len(f) > 0 && f[0] == '"'
		case "time":
			s, ok := codec.RawString(f)
			valid = ok && isTimeOrNull(s)
		}
		return valid
	}, func(e []byte) bool {
		valid = len(e) > 0 && e[0] == '{'
		return valid
	})
	return valid
}

// normalizeMetadata drops unknown and malformed metadata fields in place.
// Entries w describes, which the object holds as recorded, are well-typed
// already (see apply.Written).
func normalizeMetadata(obj map[string]any, w *apply.Written) {
	md := metadata(obj)
	for k, v := range md {
		if k == "managedFields" && w.Holds(v) {
			continue
		}
		ok, known := metaFields[k]
		if !known || v == nil || !ok(v) {
			delete(md, k)
		}
	}
}

func isString(v any) bool { _, ok := v.(string); return ok }
func isInt(v any) bool    { _, ok := v.(int64); return ok }
func isTimeOrNull(v any) bool {
	s, ok := v.(string)
	if !ok {
		return false
	}
	_, err := time.Parse(time.RFC3339, s)
	return err == nil
}
func isStringMap(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	for _, x := range m {
		if _, ok := x.(string); !ok {
			return false
		}
	}
	return true
}
func isStringList(v any) bool {
	l, ok := v.([]any)
	if !ok {
		return false
	}
	for _, x := range l {
		if _, ok := x.(string); !ok {
			return false
		}
	}
	return true
}

// typedAs reports whether v converts to T (ownerReferences, managedFields).
func typedAs[T any](v any) bool {
	var holder struct {
		V T `json:"v"`
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(map[string]any{"v": v}, &holder) == nil
}

// nameValidator returns the name rule of a resource.
func nameValidator(def *registry.Definition) apivalidation.ValidateNameFunc {
	if nv, ok := def.Hooks.(registry.NameValidator); ok {
		return nv.ValidateName
	}
	return nameIsDNSSubdomain
}

// nameIsDNSSubdomain is apivalidation.NameIsDNSSubdomain, which it asks
// only about names metacheck finds invalid, for its messages.
func nameIsDNSSubdomain(name string, prefix bool) []string {
	if !prefix && metacheck.DNS1123Subdomain(name) {
		return nil
	}
	return apivalidation.NameIsDNSSubdomain(name, prefix)
}

// prepareCreate fills the system fields of a new object: name from
// generateName, namespace, uid, creationTimestamp, generation.
func (h *Handler) prepareCreate(c *call, obj map[string]any) {
	normalizeMetadata(obj, nil)
	md := metadata(obj)
	if c.def.Namespaced() {
		if _, ok := md["namespace"]; !ok {
			md["namespace"] = c.info.Namespace
		}
	} else {
		delete(md, "namespace")
	}
	if name, _ := md["name"].(string); name == "" {
		if gn, _ := md["generateName"].(string); gn != "" {
			md["name"] = generateName(gn)
		}
	}
	if _, keeps := c.def.Hooks.(registry.StatusOnCreateKeeper); c.version.Subresources.Status && !keeps {
		// Status is written through /status only.
		delete(obj, "status")
	}
	md["uid"] = string(uuid.NewUUID())
	md["creationTimestamp"] = h.now().UTC().Format(time.RFC3339)
	delete(md, "deletionTimestamp")
	delete(md, "deletionGracePeriodSeconds")
	delete(md, "selfLink")
	_, none := c.def.Hooks.(registry.NoGeneration)
	if _, later := c.def.Hooks.(registry.GenerationOnChange); none || later {
		delete(md, "generation")
	} else {
		md["generation"] = int64(1)
	}
	if p, ok := c.def.Hooks.(registry.CreatePreparer); ok {
		p.PrepareForCreate(obj)
	}
	if p, ok := c.def.Hooks.(registry.RequestPreparer); ok {
		p.PrepareForCreateIn(c.r.Context(), obj)
	}
}

// generateName appends upstream's five random characters.
func generateName(base string) string {
	const maxNameLength, randomLength = 63, 5
	if len(base) > maxNameLength-randomLength {
		base = base[:maxNameLength-randomLength]
	}
	return base + rand.String(randomLength)
}

// validateCreate checks metadata and the resource's own rules.
func validateCreate(c *call, obj map[string]any) field.ErrorList {
	nameFn := nameValidator(c.def)
	if nv, ok := c.def.Hooks.(registry.CreateNameValidator); ok {
		nameFn = nv.CreateNameValidator(obj)
	}
	errs := apivalidation.ValidateObjectMetaAccessor(metaToValidate(obj, nil), c.def.Namespaced(), nameFn, field.NewPath("metadata"))
	if v, ok := c.def.Hooks.(registry.VersionValidator); ok {
		errs = append(errs, v.ValidateIn(c.version.Name, obj)...)
	} else if v, ok := c.def.Hooks.(registry.Validator); ok {
		errs = append(errs, v.Validate(obj)...)
	}
	return listedOnce(c.def, errs)
}

// prepareUpdate carries the system fields from old to obj and moves
// generation when anything it tracks changed. sub is "" for the main
// resource, "status", or a built-in's own subresource, which keeps here
// what it may change of obj (registry.SubresourceUpdater).
func (h *Handler) prepareUpdate(c *call, obj, old map[string]any, sub string) map[string]any {
	if su := ownUpdater(c, sub); su != nil {
		obj = su.UpdateSubresource(sub, obj, old)
	}
	if sub == "status" {
		// A status write changes status, and the metadata the
		// resource's status strategy keeps, and nothing else.
		next := codec.DeepCopy(old)
		if st, ok := obj["status"]; ok {
			next["status"] = st
		} else {
			delete(next, "status")
		}
		md, nmd := metadata(next), metadata(obj)
		if mf, ok := nmd["managedFields"]; ok {
			md["managedFields"] = mf
		}
		for _, k := range c.version.Subresources.StatusMetadata {
			copyOrDelete(md, nmd, k)
		}
		if p, ok := c.def.Hooks.(registry.StatusUpdatePreparer); ok {
			p.PrepareForStatusUpdate(next, old)
		}
		return next
	}
	normalizeMetadata(obj, c.written)
	md, omd := metadata(obj), metadata(old)
	if sub == "" {
		if c.version.Subresources.Status {
			if st, ok := old["status"]; ok {
				obj["status"] = st
			} else {
				delete(obj, "status")
			}
		}
		if p, ok := c.def.Hooks.(registry.UpdatePreparer); ok {
			p.PrepareForUpdate(obj, old)
		}
	}
	if uid, _ := md["uid"].(string); uid == "" {
		md["uid"] = omd["uid"]
	}
	copyOrDelete(md, omd, "creationTimestamp")
	// As upstream: an update never moves or removes a deletionTimestamp,
	// nor removes a grace period; one that sets either where there was
	// none, or another grace period, is refused (validateUpdate).
	if omd["deletionTimestamp"] != nil {
		md["deletionTimestamp"] = omd["deletionTimestamp"]
	}
	if omd["deletionGracePeriodSeconds"] != nil && md["deletionGracePeriodSeconds"] == nil {
		md["deletionGracePeriodSeconds"] = omd["deletionGracePeriodSeconds"]
	}
	delete(md, "selfLink")
	if _, ok := c.def.Hooks.(registry.NoGeneration); ok {
		delete(md, "generation")
	} else {
		gen, _ := omd["generation"].(int64)
		if specChanged(obj, old, c.version.Subresources.Status) {
			gen++
		}
		md["generation"] = gen
		if _, later := c.def.Hooks.(registry.GenerationOnChange); later && gen == 0 {
			delete(md, "generation")
		}
	}
	return obj
}

// ownUpdater is the hooks writing sub when it is a subresource a
// built-in defines (pods/resize, certificatesigningrequests/approval),
// else nil.
func ownUpdater(c *call, sub string) registry.SubresourceUpdater {
	if sub == "" || sub == "status" || sub == "scale" {
		return nil
	}
	if su, ok := c.def.Hooks.(registry.SubresourceUpdater); ok && su.Updates(sub) {
		return su
	}
	return nil
}

func copyOrDelete(dst, src map[string]any, key string) {
	if v, ok := src[key]; ok && v != nil {
		dst[key] = v
	} else {
		delete(dst, key)
	}
}

// specChanged compares everything but metadata (and status when it is a
// subresource).
func specChanged(obj, old map[string]any, statusSub bool) bool {
	skip := func(k string) bool { return k == "metadata" || (statusSub && k == "status") }
	n := 0
	for k, v := range obj {
		if skip(k) {
			continue
		}
		n++
		ov, ok := old[k]
		if !ok || !jsonEqual(v, ov) {
			return true
		}
	}
	for k := range old {
		if !skip(k) {
			n--
		}
	}
	return n != 0
}

// jsonEqual compares two decoded JSON values. It is reflect.DeepEqual for
// the types decoding yields (maps, lists, strings, int64, float64, bool,
// nil) without reflection, which showed in update profiles; anything else
// falls back to reflect.DeepEqual.
func jsonEqual(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) || (a == nil) != (b == nil) {
			return false
		}
		for k, av := range a {
			bv, ok := b[k]
			if !ok || !jsonEqual(av, bv) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) || (a == nil) != (b == nil) {
			return false
		}
		for i := range a {
			if !jsonEqual(a[i], b[i]) {
				return false
			}
		}
		return true
	case string:
		b, ok := b.(string)
		return ok && a == b
	case int64:
		b, ok := b.(int64)
		return ok && a == b
	case float64:
		b, ok := b.(float64)
		return ok && a == b
	case bool:
		b, ok := b.(bool)
		return ok && a == b
	case nil:
		return b == nil
	}
	return reflect.DeepEqual(a, b)
}

// validateUpdate checks metadata transitions and the resource's own rules.
func validateUpdate(c *call, obj, old map[string]any, sub string) field.ErrorList {
	// Both validations read obj's managedFields: one metaOf reads them
	// once.
	objMeta := metaToValidate(obj, c.written)
	errs := apivalidation.ValidateObjectMetaAccessor(objMeta, c.def.Namespaced(), nameValidator(c.def), field.NewPath("metadata"))
	metaErrs := apivalidation.ValidateObjectMetaAccessorUpdate(objMeta, metaOf(old), field.NewPath("metadata"))
	errs = append(errs, metaErrs...)
	if c.def.Custom() {
		// Upstream's custom resource validation checks the metadata's
		// update once more, its errors listed twice (the message says
		// each once).
		errs = append(errs, metaErrs...)
	}
	sv, status := c.def.Hooks.(registry.StatusValidator)
	ov, other := c.def.Hooks.(registry.SubresourceValidator)
	if status && sub == "status" {
		errs = append(errs, sv.ValidateStatusUpdate(obj, old)...)
	} else if other && sub != "" && sub != "status" && sub != "scale" {
		errs = append(errs, ov.ValidateSubresourceUpdate(sub, obj, old)...)
	} else if v, ok := c.def.Hooks.(registry.VersionValidator); ok {
		errs = append(errs, v.ValidateUpdateIn(c.version.Name, obj, old)...)
	} else if v, ok := c.def.Hooks.(registry.Validator); ok {
		errs = append(errs, v.ValidateUpdate(obj, old)...)
	}
	return listedOnce(c.def, errs)
}

// listedOnce returns errs as a built-in's upstream validation lists them:
// its declarative validation step keeps the first of errors that read
// alike (field, type, value and detail), so that metadata checked by the
// generic update checks and again by the resource's own is listed once.
// Custom resources, and the built-ins that keep duplicates (CRDs,
// APIServices), list errs as they are.
func listedOnce(def *registry.Definition, errs field.ErrorList) field.ErrorList {
	if len(errs) < 2 || def.Custom() {
		return errs
	}
	if _, ok := def.Hooks.(registry.DuplicateErrorKeeper); ok {
		return errs
	}
	seen := make(map[string]bool, len(errs))
	out := errs[:0:0]
	for _, e := range errs {
		if s := e.Error(); !seen[s] {
			seen[s] = true
			out = append(out, e)
		}
	}
	return out
}
