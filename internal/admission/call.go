package admission

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/webhook"
)

// versioned is the request's objects in one version, with their JSON,
// encoded once, when the first webhook needs it: validating webhooks run
// in parallel over the same objects, and policies and match conditions
// never need it.
type versioned struct {
	object, old map[string]any
	// objectFunc is the Attributes' ObjectJSON, for the request's own
	// version.
	objectFunc func() []byte

	once                sync.Once
	objectJSON, oldJSON []byte // preset from the Attributes, or encoded by once
	err                 error
}

// encoded returns the JSON of the objects, "null" for one that is nil.
func (vo *versioned) encoded() (object, old []byte, err error) {
	vo.once.Do(func() {
		if vo.objectJSON == nil && vo.objectFunc != nil {
			vo.objectJSON = vo.objectFunc()
		}
		if vo.objectJSON == nil {
			vo.objectJSON, vo.err = encodeObject(vo.object)
		}
		if vo.oldJSON == nil && vo.err == nil {
			vo.oldJSON, vo.err = encodeObject(vo.old)
		}
	})
	return vo.objectJSON, vo.oldJSON, vo.err
}

func encodeObject(obj map[string]any) ([]byte, error) {
	if obj == nil {
		return []byte("null"), nil
	}
	return codec.Marshal(obj)
}

// versions converts the request's objects to the versions webhooks match
// in, and encodes them, once per version for as long as at.Object stays
// the same: the mutating webhooks of a request share it until one of
// them changes the object, the validating ones throughout.
type versions struct {
	at *Attributes
	mu sync.Mutex
	// self is the objects in the request's version, for the at.Object it
	// was made from: mutations replace at.Object.
	self *versioned
	// m holds the objects in other versions, converted from from.
	m    map[schema.GroupVersionKind]*versioned
	from map[string]any
}

func newVersions(at *Attributes) *versions {
	return &versions{at: at, m: map[schema.GroupVersionKind]*versioned{}}
}

func (v *versions) get(ctx context.Context, kind schema.GroupVersionKind) (*versioned, error) {
	at := v.at
	v.mu.Lock()
	defer v.mu.Unlock()
	if kind == at.Kind {
		if v.self == nil || !sameObject(v.self.object, at.Object) {
			v.self = &versioned{object: at.Object, old: at.OldObject, objectFunc: at.ObjectJSON, oldJSON: at.OldObjectJSON}
		}
		return v.self, nil
	}
	if !sameObject(v.from, at.Object) {
		clear(v.m)
		v.from = at.Object
	}
	if vo, ok := v.m[kind]; ok {
		return vo, nil
	}
	// A conversion reads the objects as values.
	if err := materialize(at); err != nil {
		return nil, err
	}
	av := kind.GroupVersion().String()
	vo := &versioned{}
	var err error
	if at.Object != nil {
		if vo.object, err = at.Convert(ctx, deepCopy(at.Object), av); err != nil {
			return nil, err
		}
	}
	if at.OldObject != nil {
		if vo.old, err = at.Convert(ctx, deepCopy(at.OldObject), av); err != nil {
			return nil, err
		}
	}
	v.m[kind] = vo
	return vo, nil
}

// callError is a failure to get an answer from a webhook (as opposed to
// the webhook refusing the request); failurePolicy decides what it does.
type callError struct {
	name   string
	reason error
}

func (e *callError) Error() string {
	return fmt.Sprintf("failed calling webhook %q: %v", e.name, e.reason)
}

// newRequest builds the AdmissionRequest a webhook receives, but for its
// object and oldObject, which reviewParts writes.
func newRequest(uid types.UID, inv *invocation, at *Attributes) *admissionv1.AdmissionRequest {
	dry := at.DryRun
	req := &admissionv1.AdmissionRequest{
		UID:                uid,
		Kind:               metav1.GroupVersionKind(inv.kind),
		Resource:           metav1.GroupVersionResource(inv.resource),
		SubResource:        at.Subresource,
		RequestKind:        (*metav1.GroupVersionKind)(&at.Kind),
		RequestResource:    (*metav1.GroupVersionResource)(&at.Resource),
		RequestSubResource: at.Subresource,
		Name:               at.Name,
		Namespace:          at.Namespace,
		Operation:          admissionv1.Operation(at.Operation),
		DryRun:             &dry,
	}
	if u := at.User; u != nil {
		req.UserInfo = authenticationv1.UserInfo{Username: u.Name, UID: u.UID, Groups: u.Groups}
		for k, v := range u.Extra {
			if req.UserInfo.Extra == nil {
				req.UserInfo.Extra = map[string]authenticationv1.ExtraValue{}
			}
			req.UserInfo.Extra[k] = v
		}
	}
	req.Options = rawObject(at.Options)
	return req
}

// reviewParts encodes the AdmissionReview of req with the objects of vo,
// whose JSON it splices in as it is: encoding/json would encode them
// apart and then compact and check them again, and they are often at
// hand already (the stored object's, or one shared by the webhooks of a
// request). The review comes in parts, sent one after another
// (webhook.Client.PostParts), so that the objects are not copied into
// one body first; the objects' parts must not change.
func reviewParts(version string, req *admissionv1.AdmissionRequest, vo *versioned) ([][]byte, error) {
	object, old, err := vo.encoded()
	if err != nil {
		return nil, err
	}
	head := make([]byte, 0, 1024)
	head = append(head, `{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/`...)
	head = append(head, version...)
	head = append(head, `","request":`...)
	head = appendRequest(head, req)
	head = append(head, `,"object":`...)
	return [][]byte{head, object, oldObjectMember, old, reviewEnd}, nil
}

var (
	oldObjectMember = []byte(`,"oldObject":`)
	reviewEnd       = []byte("}}")
)

// appendRequest appends req's JSON as encoding/json writes it, but for
// its objects and the closing brace, which reviewParts writes: without
// reflection, which was a tenth of a call's own CPU. Its test holds it to
// encoding/json's output.
func appendRequest(b []byte, req *admissionv1.AdmissionRequest) []byte {
	str := func(b []byte, name, value string, omitEmpty bool) []byte {
		if omitEmpty && value == "" {
			return b
		}
		b = append(b, ',', '"')
		b = append(b, name...)
		b = append(b, '"', ':')
		return codec.AppendString(b, value)
	}
	// gv writes a GroupVersionKind or GroupVersionResource: group,
	// version, and the kind or resource as last.
	gv := func(b []byte, name, group, version, last, value string) []byte {
		b = append(b, ",\""+name+"\":{\"group\":"...)
		b = codec.AppendString(b, group)
		b = append(b, `,"version":`...)
		b = codec.AppendString(b, version)
		b = append(b, ",\""+last+"\":"...)
		b = codec.AppendString(b, value)
		return append(b, '}')
	}
	strs := func(b []byte, list []string) []byte {
		if list == nil {
			return append(b, "null"...)
		}
		b = append(b, '[')
		for i, s := range list {
			if i > 0 {
				b = append(b, ',')
			}
			b = codec.AppendString(b, s)
		}
		return append(b, ']')
	}
	b = append(b, `{"uid":`...)
	b = codec.AppendString(b, string(req.UID))
	b = gv(b, "kind", req.Kind.Group, req.Kind.Version, "kind", req.Kind.Kind)
	b = gv(b, "resource", req.Resource.Group, req.Resource.Version, "resource", req.Resource.Resource)
	b = str(b, "subResource", req.SubResource, true)
	if k := req.RequestKind; k != nil {
		b = gv(b, "requestKind", k.Group, k.Version, "kind", k.Kind)
	}
	if r := req.RequestResource; r != nil {
		b = gv(b, "requestResource", r.Group, r.Version, "resource", r.Resource)
	}
	b = str(b, "requestSubResource", req.RequestSubResource, true)
	b = str(b, "name", req.Name, true)
	b = str(b, "namespace", req.Namespace, true)
	b = str(b, "operation", string(req.Operation), false)
	u := req.UserInfo
	b = append(b, `,"userInfo":{`...)
	mark := len(b)
	b = str(b, "username", u.Username, true)
	b = str(b, "uid", u.UID, true)
	if len(u.Groups) > 0 {
		b = append(b, `,"groups":`...)
		b = strs(b, u.Groups)
	}
	if len(u.Extra) > 0 {
		b = append(b, `,"extra":{`...)
		for i, k := range slices.Sorted(maps.Keys(u.Extra)) {
			if i > 0 {
				b = append(b, ',')
			}
			b = codec.AppendString(b, k)
			b = append(b, ':')
			b = strs(b, u.Extra[k])
		}
		b = append(b, '}')
	}
	if len(b) > mark {
		b = slices.Delete(b, mark, mark+1) // the first member's comma
	}
	b = append(b, '}')
	if req.DryRun != nil {
		b = strconv.AppendBool(append(b, `,"dryRun":`...), *req.DryRun)
	}
	b = append(b, `,"options":`...)
	if req.Options.Raw == nil {
		return append(b, "null"...)
	}
	return append(b, req.Options.Raw...)
}

func rawObject(obj map[string]any) runtime.RawExtension {
	if obj == nil {
		return runtime.RawExtension{}
	}
	b, err := codec.AppendMarshal(nil, obj) // options: small, unlike Marshal's 4 KiB start
	if err != nil {
		return runtime.RawExtension{}
	}
	return runtime.RawExtension{Raw: b}
}

// celRequest is the request as CEL expressions (match conditions and
// policies) see it: the AdmissionRequest's JSON fields, built without a
// round trip through JSON, and without object and oldObject, which
// upstream leaves out of it (expressions read them as object and
// oldObject).
func celRequest(inv *invocation, at *Attributes) map[string]any {
	gvk := func(k schema.GroupVersionKind) map[string]any {
		return map[string]any{"group": k.Group, "version": k.Version, "kind": k.Kind}
	}
	gvr := func(r schema.GroupVersionResource) map[string]any {
		return map[string]any{"group": r.Group, "version": r.Version, "resource": r.Resource}
	}
	req := map[string]any{
		"uid":             "",
		"kind":            gvk(inv.kind),
		"resource":        gvr(inv.resource),
		"requestKind":     gvk(at.Kind),
		"requestResource": gvr(at.Resource),
		"operation":       string(at.Operation),
		"userInfo":        map[string]any{},
		"dryRun":          at.DryRun,
	}
	optional := map[string]string{"subResource": at.Subresource, "requestSubResource": at.Subresource, "name": at.Name, "namespace": at.Namespace}
	for k, v := range optional {
		if v != "" {
			req[k] = v
		}
	}
	if u := at.User; u != nil {
		u.SetFields(req["userInfo"].(map[string]any))
	}
	if at.Options != nil {
		req["options"] = at.Options
	}
	return req
}

// response is what a webhook answered, checked.
type response struct {
	allowed   bool
	result    *metav1.Status
	patch     []byte
	patchType admissionv1.PatchType
	warnings  []string
	// auditAnnotations are recorded as "<webhook name>/<key>".
	auditAnnotations map[string]string
}

// call sends one webhook its AdmissionReview and checks the answer. A
// dry-run request reaches only webhooks without side effects; others
// refuse it, whatever their failurePolicy.
func (a *Admission) call(ctx context.Context, inv *invocation, at *Attributes, vo *versioned, mutating bool) (resp *response, err error) {
	h := inv.hook
	if a.metrics != nil {
		defer func(start time.Time) {
			typ := "validating"
			if mutating {
				typ = "admit"
			}
			a.metrics.AdmissionWebhook(h.Name, typ, string(at.Operation), err != nil || !resp.allowed, time.Since(start))
		}(time.Now())
	}
	if at.DryRun {
		if h.SideEffects == nil {
			return nil, &callError{name: h.Name, reason: fmt.Errorf("Webhook SideEffects is nil")}
		}
		if se := *h.SideEffects; se != admissionregistrationv1.SideEffectClassNone && se != admissionregistrationv1.SideEffectClassNoneOnDryRun {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("admission webhook %q does not support dry run", h.Name))
		}
	}
	reviewVersion := ""
	for _, v := range h.AdmissionReviewVersions {
		if v == "v1" || v == "v1beta1" {
			reviewVersion = v
			break
		}
	}
	if reviewVersion == "" {
		return nil, &callError{name: h.Name, reason: fmt.Errorf("could not create admission objects: %w",
			fmt.Errorf("webhook does not accept known AdmissionReview versions (v1, v1beta1)"))}
	}
	uid := types.UID(uuid.NewUUID())
	body, err := reviewParts(reviewVersion, newRequest(uid, inv, at), vo)
	if err != nil {
		return nil, &callError{name: h.Name, reason: fmt.Errorf("could not create admission objects: %w", err)}
	}
	client, err := a.webhookClient(h)
	if err != nil {
		return nil, &callError{name: h.Name, reason: fmt.Errorf("could not get REST client: %w", err)}
	}
	answer, err := client.PostParts(ctx, body, h.timeout)
	if err != nil {
		return nil, &callError{name: h.Name, reason: fmt.Errorf("failed to call webhook: %w", err)}
	}
	resp, err = verifyResponse(answer, uid, reviewVersion, mutating)
	if err != nil {
		return nil, &callError{name: h.Name, reason: fmt.Errorf("received invalid webhook response: %w", err)}
	}
	return resp, nil
}

// webhookClient is h's client, looked up once per compiled hook.
func (a *Admission) webhookClient(h *hook) (*webhook.Client, error) {
	if c := h.cached.Load(); c != nil {
		return c, nil
	}
	c, err := a.clients.Client(h.client)
	if err == nil {
		h.cached.Store(c)
	}
	return c, err
}

// recordAnnotations records a webhook's audit annotations as
// "<webhook name>/<key>", as upstream does.
func recordAnnotations(webhook string, resp *response, at *Attributes) {
	for k, v := range resp.auditAnnotations {
		at.annotate(webhook+"/"+k, v)
	}
}

// verifyResponse checks an answer as upstream does: a v1 review must say
// what it is and answer the request's uid, and only mutating webhooks
// may patch; v1beta1 answers were never checked, and their patches are
// JSON patches.
func verifyResponse(answer []byte, uid types.UID, version string, mutating bool) (*response, error) {
	r, err := decodeAnswer(answer)
	if err != nil {
		return nil, err
	}
	if r.Response == nil {
		return nil, fmt.Errorf("webhook response was absent")
	}
	out := &response{allowed: r.Response.Allowed, result: r.Response.Result, warnings: r.Response.Warnings, auditAnnotations: r.Response.AuditAnnotations}
	if version == "v1beta1" {
		if mutating && len(r.Response.Patch) > 0 {
			out.patch, out.patchType = r.Response.Patch, admissionv1.PatchTypeJSONPatch
		}
		return out, nil
	}
	if r.Response.UID != uid {
		return nil, fmt.Errorf("expected response.uid=%q, got %q", uid, r.Response.UID)
	}
	want := admissionv1.SchemeGroupVersion.WithKind("AdmissionReview")
	if got := r.GroupVersionKind(); got != want {
		return nil, fmt.Errorf("expected webhook response of %v, got %v", want.String(), got.String())
	}
	if mutating {
		switch {
		case len(r.Response.Patch) > 0 && r.Response.PatchType == nil:
			return nil, fmt.Errorf("webhook returned response.patch but not response.patchType")
		case len(r.Response.Patch) == 0 && r.Response.PatchType != nil:
			return nil, fmt.Errorf("webhook returned response.patchType but not response.patch")
		case r.Response.PatchType != nil && *r.Response.PatchType == "":
			return nil, fmt.Errorf("webhook returned invalid response.patchType of %q", "")
		}
		out.patch = r.Response.Patch
		if r.Response.PatchType != nil {
			out.patchType = *r.Response.PatchType
		}
	} else {
		if len(r.Response.Patch) > 0 {
			return nil, fmt.Errorf("validating webhook may not return response.patch")
		}
		if r.Response.PatchType != nil {
			return nil, fmt.Errorf("validating webhook may not return response.patchType")
		}
	}
	return out, nil
}

// denied is upstream's error for a webhook that refused the request: the
// webhook's status with its code (at least 400) and message, prefixed with
// who denied it.
func denied(name string, result *metav1.Status) error {
	st := metav1.Status{Status: metav1.StatusFailure}
	if result != nil {
		st = *result
	}
	if st.Code < http.StatusBadRequest {
		st.Code = http.StatusBadRequest
	}
	if st.Status == "" || st.Status == metav1.StatusSuccess {
		st.Status = metav1.StatusFailure
	}
	by := fmt.Sprintf("admission webhook %q denied the request", name)
	switch {
	case st.Message != "":
		st.Message = by + ": " + st.Message
	case st.Reason != "":
		st.Message = by + ": " + string(st.Reason)
	default:
		st.Message = by + " without explanation"
	}
	st.TypeMeta = metav1.TypeMeta{}
	return &apierrors.StatusError{ErrStatus: st}
}

// failed turns a webhook's failure into the request's error, or nil when
// its failurePolicy ignores failures to call it.
func (a *Admission) failed(h *hook, err error) error {
	if ce, ok := err.(*callError); ok {
		if h.failOpen() {
			a.log.Warn("admission: failed calling webhook, failing open", "webhook", h.Name, "err", ce)
			return nil
		}
		a.log.Warn("admission: failed calling webhook, failing closed", "webhook", h.Name, "err", ce)
		return apierrors.NewInternalError(ce)
	}
	return err
}

func deepCopy(obj map[string]any) map[string]any {
	return runtime.DeepCopyJSON(obj)
}
