package handler

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/mergepatch"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"

	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/registry"
)

// Patch media types.
const (
	jsonPatchType      = "application/json-patch+json"
	mergePatchType     = "application/merge-patch+json"
	strategicPatchType = "application/strategic-merge-patch+json"
)

// patch applies a JSON patch, merge patch or (for resources with a Go type)
// strategic merge patch to the current object, then takes the update path.
//
// Which failures are 400 and which 422 follows upstream's patcher: a body
// that cannot be read as its patch type is a 400 BadRequest; a patch that
// reads but does not apply (a JSON patch operation that fails) or whose
// result is not a valid object is a 422 Invalid. Upstream reads the body
// as its patch type once it has the current object, so that a missing
// object is a 404 first; only a body that is not JSON at all is refused
// before.
func (h *Handler) patch(c *call, sub string) {
	ct := patchMediaType(c.r.Header.Get("Content-Type"))
	if err := checkPatchType(c, ct); err != nil {
		codec.WriteStatus(c.w, c.r, err)
		return
	}
	sm, hasType := typedHooks(c).(registry.StrategicMerger)
	switch {
	case ct == applyPatchType:
		h.apply(c, sub)
		return
	case ct == strategicPatchType && !hasType:
		codec.WriteStatus(c.w, c.r, unsupportedPatch(c))
		return
	}
	body, mode, err := readPatchRequest(c, ct)
	if err != nil {
		codec.WriteStatus(c.w, c.r, err)
		return
	}
	p, readErr := readPatch(ct, body, mode)
	c.mergesOnly = readErr == nil && p.merge != nil
	h.write(c, sub, "", func(old map[string]any, oldJSON []byte) (map[string]any, error) {
		if readErr != nil {
			return nil, readErr
		}
		// doWrite hands over the current object in the request's version,
		// a copy of its own, which a merge patch changes in place: its
		// resourceVersion, which a patch's own must match, is read first.
		oldRV, _ := metadata(old)["resourceVersion"].(string)
		var obj map[string]any
		// value is what a 422 names as the invalid patch value.
		var value func() string
		switch {
		case ct == strategicPatchType:
			patched, err := strategicpatch.StrategicMergeMapPatch(old, codec.DeepCopy(p.smp), sm.PatchSchema())
			if err != nil {
				return nil, strategicPatchError(err)
			}
			obj = patched
			value = func() string { return fmt.Sprintf("%+v", p.smp) }
		case p.merge != nil:
			obj = mergePatch(old, p.merge)
			value = func() string { return p.mergedJSON(oldJSON) }
		default:
			// The patch applies to the object's own encoding, which
			// holds the values old holds: encoding old again was most
			// of a JSON patch's work.
			out, err := p.apply(oldJSON)
			if err != nil {
				return nil, err
			}
			value = func() string { return p.patchedJSON(oldJSON, out) }
			if obj, _, err = codec.Decode(out, codec.MediaJSON, codec.DecodeOptions{}); err != nil {
				return nil, invalidPatch(value(), err.Error())
			}
		}
		// Decoding the result into the resource's type: wrongly typed
		// fields make it invalid, unknown ones are strict decoding errors.
		if err := checkPatchedType(c, obj, value); err != nil {
			return nil, err
		}
		problems := p.strict
		if uf, ok := typedHooks(c).(registry.UnknownFielder); ok && mode != "Ignore" {
			problems = append(problems, uf.UnknownFields(obj)...)
		}
		if s := bodySchema(c, obj); s != nil {
			// Pruning here lets the fields it drops join this patch's
			// strict errors; the update path then skips it.
			for _, f := range s.Prune(obj) {
				if mode != "Ignore" {
					problems = append(problems, unknownField(f))
				}
			}
			c.bodyPruned = true
		}
		if err := patchFieldValidation(c, mode, value, problems); err != nil {
			return nil, err
		}
		if err := checkNameAndNamespace(c, obj); err != nil {
			return nil, err
		}
		// What upstream's store and validation check of the result, in
		// their order, before anything else validates it.
		if err := checkPatchedVersion(c, obj); err != nil {
			return nil, err
		}
		if err := checkNewResourceVersion(c, obj, oldRV); err != nil {
			return nil, err
		}
		if err := checkPatchedTypeMeta(c, obj); err != nil {
			return nil, err
		}
		return obj, nil
	})
}

// checkPatchedType reads a patch's result as upstream decodes it into the
// resource's type, refusing it with upstream's 422 on the patch, which
// quotes the decoder's own error. A built-in's Go type fills the
// apiVersion and kind the result lacks, decodes one naming another as
// that (typedDecodeCause), and refuses wrongly typed fields. A custom
// resource decodes as an unstructured object, which must name its kind
// and a well-formed apiVersion (none is refused later: see
// checkPatchedVersion), with metadata of ObjectMeta's types.
func checkPatchedType(c *call, obj map[string]any, value func() string) error {
	av, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	if !goTyped(c.def) {
		if kind == "" {
			return invalidPatch(value(), runtime.NewMissingKindErr(value()).Error())
		}
		if _, err := schema.ParseGroupVersion(av); err != nil {
			return invalidPatch(value(), err.Error())
		}
		if err := metaTypeError(obj); err != nil {
			return invalidPatch(value(), err.Error())
		}
		dropEmptyMetadata(obj)
		return nil
	}
	if av != "" && kind != "" && (av != c.apiVersion() || kind != c.def.Kind) {
		gv, err := schema.ParseGroupVersion(av)
		if err == nil {
			err = typedDecodeCause(c, gv.WithKind(kind), obj)
		}
		return invalidPatch(value(), err.Error())
	}
	if av == "" {
		obj["apiVersion"] = c.apiVersion()
	}
	if kind == "" {
		obj["kind"] = c.def.Kind
	}
	if tc, ok := typedHooks(c).(registry.TypeChecker); ok {
		if err := tc.CheckType(obj); err != nil {
			return invalidPatch(value(), decoderError(err).Error())
		}
	}
	return nil
}

// checkPatchedVersion refuses a custom resource patched into an object
// whose apiVersion names no version: upstream decodes it, and fails to
// tell its version once admission needs it, an internal error.
func checkPatchedVersion(c *call, obj map[string]any) error {
	if goTyped(c.def) {
		return nil
	}
	av, _ := obj["apiVersion"].(string)
	if gv, _ := schema.ParseGroupVersion(av); gv.Version == "" {
		return apierrors.NewInternalError(runtime.NewMissingVersionErr("object has no apiVersion field"))
	}
	return nil
}

// checkPatchedTypeMeta refuses a custom resource patched into another
// apiVersion or kind as upstream's validation does: both are invalid
// fields of the kind the object names. (Upstream lists the metadata's
// errors before them.)
func checkPatchedTypeMeta(c *call, obj map[string]any) error {
	if goTyped(c.def) {
		return nil
	}
	av, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	var errs field.ErrorList
	if kind != c.def.Kind {
		errs = append(errs, field.Invalid(field.NewPath("kind"), kind, "must be "+c.def.Kind))
	}
	if av != c.apiVersion() {
		errs = append(errs, field.Invalid(field.NewPath("apiVersion"), av, "must be "+c.apiVersion()))
	}
	if len(errs) == 0 {
		return nil
	}
	gv, _ := schema.ParseGroupVersion(av)
	return apierrors.NewInvalid(schema.GroupKind{Group: gv.Group, Kind: kind}, c.info.Name, errs)
}

// patchBody is a patch read as its media type says, before it is applied.
type patchBody struct {
	ct   string
	body []byte
	// ops is a JSON patch's operations.
	ops jsonpatch.Patch
	// smp is a strategic merge patch's map (never modified).
	smp map[string]any
	// merge is a merge patch that is a JSON object, decoded (never
	// modified): it is merged into the decoded object (see mergePatch).
	merge map[string]any
	// strict are the strict decoding errors found in the body (duplicate
	// or unknown fields), reported per fieldValidation once it applied.
	strict []string
}

// readPatchRequest reads a patch request's options, its fieldValidation
// mode and its body. As upstream's, a body that is not JSON at all is
// refused before anything reads it as a patch, with the same words for
// every patch type.
func readPatchRequest(c *call, ct string) ([]byte, string, error) {
	body, err := readBody(c)
	if err != nil {
		return nil, "", err
	}
	if err := checkWriteOptions(c, ct); err != nil {
		return nil, "", err
	}
	mode, err := fieldValidation(c)
	if err != nil {
		return nil, "", err
	}
	if !json.Valid(body) {
		return nil, "", apierrors.NewBadRequest("invalid JSON patch")
	}
	return body, mode, nil
}

// readPatch reads a patch body as upstream does before applying it: with
// fieldValidation Strict or Warn the body is first decoded strictly, so a
// body of the wrong JSON shape is a 400 "error decoding patch" there.
func readPatch(ct string, body []byte, mode string) (*patchBody, error) {
	strict := mode != "Ignore"
	p := &patchBody{ct: ct, body: body}
	switch ct {
	case jsonPatchType:
		if strict {
			var ops []jsonPatchOp
			errs, err := kjson.UnmarshalStrict(body, &ops)
			if err != nil {
				return nil, apierrors.NewBadRequest("error decoding patch: " + upstreamTypeNames(err.Error()))
			}
			for _, e := range errs {
				p.strict = append(p.strict, "json patch "+e.Error())
			}
		}
		ops, err := jsonpatch.DecodePatch(body)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		if len(ops) > maxJSONPatchOperations {
			return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf(
				"The allowed maximum operations in a JSON patch is %d, got %d", maxJSONPatchOperations, len(ops)))
		}
		p.ops = ops
	case mergePatchType:
		if strict {
			errs, err := kjson.UnmarshalStrict(body, &map[string]any{})
			if err != nil {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
			}
			p.strict = errorTexts(errs)
		}
		if m, _, err := codec.Decode(body, codec.MediaJSON, codec.DecodeOptions{}); err == nil && m != nil {
			p.merge = m
		}
	case strategicPatchType:
		var m map[string]any
		if strict {
			errs, err := kjson.UnmarshalStrict(body, &m)
			if err != nil {
				return nil, apierrors.NewBadRequest(err.Error())
			}
			p.strict = errorTexts(errs)
		} else if err := kjson.UnmarshalCaseSensitivePreserveInts(body, &m); err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		p.smp = m
	}
	return p, nil
}

// apply applies a JSON or merge patch to a JSON document.
func (p *patchBody) apply(doc []byte) ([]byte, error) {
	if p.ct == jsonPatchType {
		out, err := p.ops.Apply(doc)
		if err != nil {
			// Upstream's wording: a generic 422 whose cause is the failure.
			return nil, apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false)
		}
		return out, nil
	}
	out, err := jsonpatch.MergePatch(doc, p.body)
	switch {
	case err == jsonpatch.ErrBadJSONPatch:
		// null, a scalar or malformed JSON: not a merge patch at all.
		return nil, apierrors.NewBadRequest(err.Error())
	case err != nil:
		return nil, fmt.Errorf("applying merge patch: %w", err)
	}
	return out, nil
}

// mergePatch merges the merge patch patch into doc, which it changes and
// returns, as jsonpatch.MergePatch merges their JSON (RFC 7386, with that
// library's handling of nulls): a null deletes the member; an object
// merges into an object member; anything else replaces the member, an
// object or array without the null members of the objects in it, except
// an array replacing an object, which is taken as it is. Merging the
// decoded objects saves encoding the object and decoding the result, each
// time (two thirds of a patch's work). patch is copied, never kept.
func mergePatch(doc, patch map[string]any) map[string]any {
	for k, pv := range patch {
		if pv == nil {
			delete(doc, k)
			continue
		}
		cur, ok := doc[k]
		curObj, curIsObj := cur.(map[string]any)
		switch pObj, pIsObj := pv.(map[string]any); {
		case !ok || cur == nil || !curIsObj:
			doc[k] = withoutNulls(pv)
		case !pIsObj:
			doc[k] = runtime.DeepCopyJSONValue(pv)
		default:
			doc[k] = mergePatch(curObj, pObj)
		}
	}
	return doc
}

// withoutNulls copies v without the null members of the objects in it, at
// any depth; nulls in arrays stay (as the merge patch library prunes).
func withoutNulls(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, y := range x {
			if y != nil {
				out[k] = withoutNulls(y)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, y := range x {
			out[i] = withoutNulls(y)
		}
		return out
	}
	return v
}

// mergedJSON is the patched document as jsonpatch.MergePatch writes it,
// which upstream quotes when the result is invalid (see patchedJSON).
func (p *patchBody) mergedJSON(curJSON []byte) string { return p.patchedJSON(curJSON, nil) }

// patchedJSON is the patched document upstream quotes when the result is
// invalid: the patch applied to the current object as upstream's patcher
// encodes it (with encoding/json, which the patch libraries keep the
// untouched parts of as they are). out, when set, is the patch applied to
// curJSON, returned when the two encodings agree.
func (p *patchBody) patchedJSON(curJSON, out []byte) string {
	cur, err := decodeStored(curJSON)
	if err != nil {
		return string(out)
	}
	doc, err := json.Marshal(cur)
	if err != nil {
		return string(out)
	}
	if out != nil && bytes.Equal(doc, curJSON) {
		return string(out)
	}
	if out, err = p.apply(doc); err != nil {
		return ""
	}
	return string(out)
}

// strategicPatchError gives a strategic merge patch failure upstream's
// code: malformed directives are 400, patches that cannot apply to this
// object 422.
func strategicPatchError(err error) error {
	switch err {
	case mergepatch.ErrBadJSONDoc, mergepatch.ErrBadPatchFormatForPrimitiveList, mergepatch.ErrBadPatchFormatForRetainKeys,
		mergepatch.ErrBadPatchFormatForSetElementOrderList, mergepatch.ErrUnsupportedStrategicMergePatchFormat:
		return apierrors.NewBadRequest(err.Error())
	case mergepatch.ErrNoListOfLists, mergepatch.ErrPatchContentNotMatchRetainKeys:
		return apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false)
	}
	// Upstream answers any other failure (an unknown $patch, a list item
	// without its merge key, a directive where no list is) as it is: a
	// 500 without a reason whose message is the library's.
	return statusError(http.StatusInternalServerError, metav1.StatusReasonUnknown, err.Error())
}

// invalidPatch is upstream's 422 for a patch whose result is not a valid
// object: one cause on the field "patch" whose value is the patched
// document.
func invalidPatch(value, detail string) error {
	return apierrors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{field.Invalid(field.NewPath("patch"), value, detail)})
}

// patchFieldValidation applies fieldValidation to a patch's strict
// decoding errors: warnings for Warn, a 422 on the patch for Strict (a PUT
// body's are a 400; upstream words a patch's as the patch being invalid).
func patchFieldValidation(c *call, mode string, value func() string, problems []string) error {
	if len(problems) == 0 || mode == "Ignore" {
		return nil
	}
	if mode == "Strict" {
		return invalidPatch(value(), "strict decoding error: "+strings.Join(problems, ", "))
	}
	return applyFieldValidation(c, mode, problems)
}

func errorTexts(errs []error) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

// jsonPatchOp is one JSON patch operation, for the strict decoding that
// finds unknown and duplicate fields in it.
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	From  string `json:"from"`
	Value any    `json:"value"`
}

// upstreamTypeNames renames jsonPatchOp in a decoding error as upstream's
// message names it (its type lives in package handlers).
func upstreamTypeNames(msg string) string {
	return strings.ReplaceAll(msg, "handler.jsonPatchOp", "handlers.jsonPatchOp")
}

// The patch types upstream's handlers take: a custom resource's, and a
// built-in's, which take strategic merge patches too.
var (
	customPatchTypes  = []string{jsonPatchType, mergePatchType, applyPatchType}
	builtinPatchTypes = []string{jsonPatchType, mergePatchType, strategicPatchType, applyPatchType}
)

func patchTypes(c *call) []string {
	if goTyped(c.def) {
		return builtinPatchTypes
	}
	return customPatchTypes
}

// patchMediaType is the patch type a Content-Type names as upstream's
// patch handler reads it: what comes before the first ";" (a charset),
// compared as it is, case and spaces included.
func patchMediaType(contentType string) string {
	if i := strings.Index(contentType, ";"); i > 0 {
		return contentType[:i]
	}
	return contentType
}

// checkPatchType refuses a patch type the resource does not take, in the
// words of what refuses it upstream: a built-in's routes first (see
// restfulConsumes), then the patch handler, which names the types it
// takes.
func checkPatchType(c *call, ct string) error {
	if goTyped(c.def) && !restfulConsumes(c.r.Header.Get("Content-Type"), builtinPatchTypes) {
		return apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "", schema.GroupResource{}, "", "415: Unsupported Media Type", 0, false)
	}
	if !slices.Contains(patchTypes(c), ct) {
		return unsupportedPatch(c)
	}
	return nil
}

// restfulConsumes reports whether upstream's REST router, which serves
// the built-ins, routes a request with this Content-Type to a route
// taking types: one of its comma-separated media types, without
// parameters and the spaces around, must be one of them exactly. A request
// without a Content-Type is taken as application/octet-stream.
func restfulConsumes(contentType string, types []string) bool {
	if contentType == "" {
		contentType = "application/octet-stream"
	}
	for _, mt := range strings.Split(contentType, ",") {
		mt, _, _ = strings.Cut(mt, ";")
		if slices.Contains(types, strings.Trim(mt, " ")) {
			return true
		}
	}
	return false
}

// unsupportedPatch is the patch handler's 415 for a patch type the
// resource does not take here.
func unsupportedPatch(c *call) error {
	return statusError(http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType,
		"the body of the request was in an unknown format - accepted media types include: "+strings.Join(patchTypes(c), ", "))
}

// Limits on JSON patches, as upstream's: a patch of a few hundred bytes
// could otherwise copy a document into gigabytes.
const (
	maxJSONPatchOperations = 10000
	maxJSONPatchCopyBytes  = 3 * 1024 * 1024
)

// The JSON patch library upstream applies patches with (json-patch v4, whose
// results and errors clients see) bounds copies by a package variable.
// Upstream's server lowers it the same way when it starts; a lower limit
// set by someone else in this process is kept.
func init() {
	if cur := atomic.LoadInt64(&jsonpatch.AccumulatedCopySizeLimit); cur == 0 || cur > maxJSONPatchCopyBytes {
		atomic.StoreInt64(&jsonpatch.AccumulatedCopySizeLimit, maxJSONPatchCopyBytes)
	}
}
