package handler_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A CRD with status and scale subresources and a structural schema (so that
// unknown fields are pruned and reported).
const widgetCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
 "metadata":{"name":"widgets.patch.example.com"},
 "spec":{"group":"patch.example.com","scope":"Namespaced",
  "names":{"plural":"widgets","singular":"widget","kind":"Widget"},
  "versions":[{"name":"v1","served":true,"storage":true,
   "subresources":{"status":{},"scale":{"specReplicasPath":".spec.replicas","statusReplicasPath":".status.replicas"}},
   "schema":{"openAPIV3Schema":{"type":"object","properties":{
    "spec":{"type":"object","properties":{"replicas":{"type":"integer"},"size":{"type":"integer"}}},
    "status":{"type":"object","properties":{"replicas":{"type":"integer"}}}}}}}]}}`

const (
	widgetPath = "/apis/patch.example.com/v1/namespaces/default/widgets/w1"
	scalePath  = widgetPath + "/scale"
)

// newWidgetEnv starts a server serving widgets, with widget w1 at
// spec.replicas 1, spec.size 1.
func newWidgetEnv(t *testing.T) *env {
	t.Helper()
	e := newEnv(t)
	if r := e.do(req{method: "POST", path: "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", body: widgetCRD}); r.code != 201 {
		t.Fatalf("creating the CRD: %d %s", r.code, r.body)
	}
	w := `{"apiVersion":"patch.example.com/v1","kind":"Widget","metadata":{"name":"w1"},"spec":{"replicas":1,"size":1}}`
	for i := 0; ; i++ {
		r := e.do(req{method: "POST", path: "/apis/patch.example.com/v1/namespaces/default/widgets", body: w})
		if r.code == 201 {
			return e
		}
		if r.code != 404 || i == 300 {
			t.Fatalf("creating w1: %d %s", r.code, r.body)
		}
		sleep() // the CRD is served once the registry has seen it
	}
}

// errCase is one request expected to fail with a Status.

func merge(path, body string) req {
	return req{method: "PATCH", path: path, body: body, contentType: "application/merge-patch+json"}
}

func jsonPatch(path, body string) req {
	return req{method: "PATCH", path: path, body: body, contentType: "application/json-patch+json"}
}

// Patches that fail answer as upstream's patcher does: a body that cannot be
// read as its patch type is a 400; a patch that does not apply, or whose
// result is not a valid object, a 422.
func TestPatchErrors(t *testing.T) {
	e := newWidgetEnv(t)
	if r := e.do(req{method: "POST", path: "/api/v1/namespaces", body: ns("smp")}); r.code != 201 {
		t.Fatalf("create namespace: %d %s", r.code, r.body)
	}
	const nsPath = "/api/v1/namespaces/smp"
	missing := "/apis/patch.example.com/v1/namespaces/default/widgets/missing"
	ignore := widgetPath + "?fieldValidation=Ignore"
	strict := widgetPath + "?fieldValidation=Strict"
	// A JSON patch operation that fails is upstream's generic 422: the
	// library's error is not in the Status (no message, no cause).
	generic422 := "the server rejected our request due to an error in our request"
	smp := func(body string) req {
		return req{method: "PATCH", path: nsPath, body: body, contentType: "application/strategic-merge-patch+json"}
	}
	e.checkCases(t, []errCase{
		// Merge patches: decoded strictly into an object first (fieldValidation
		// Warn, the default, or Strict), then applied.
		at(errCase{name: "merge: malformed", req: merge(widgetPath, `{"spec":`), code: 400, reason: metav1.StatusReasonBadRequest, message: "invalid JSON patch"}),
		at(errCase{name: "merge: array", req: merge(widgetPath, `[1]`), code: 400, reason: metav1.StatusReasonBadRequest, message: "error decoding patch: json: cannot unmarshal array into Go value of type map[string]interface {}"}),
		at(errCase{name: "merge: string", req: merge(widgetPath, `"x"`), code: 400, reason: metav1.StatusReasonBadRequest, message: "error decoding patch: json: cannot unmarshal string into Go value of type map[string]interface {}"}),
		at(errCase{name: "merge: null", req: merge(widgetPath, `null`), code: 400, reason: metav1.StatusReasonBadRequest, message: "Invalid JSON Patch"}),
		at(errCase{name: "merge Ignore: malformed", req: merge(ignore, `{"spec":`), code: 400, reason: metav1.StatusReasonBadRequest, message: "invalid JSON patch"}),
		at(errCase{name: "merge Ignore: scalar", req: merge(ignore, `5`), code: 400, reason: metav1.StatusReasonBadRequest, message: "Invalid JSON Patch"}),
		at(errCase{name: "merge Ignore: array result", req: merge(ignore, `[1]`), code: 422, reason: metav1.StatusReasonInvalid, message: `patch: Invalid value: "[1]"`}),
		at(errCase{name: "merge Strict: duplicate field", req: merge(strict, `{"spec":{"size":2,"size":3}}`), code: 422, reason: metav1.StatusReasonInvalid, message: `strict decoding error: duplicate field "spec.size"`}),
		at(errCase{name: "merge Strict: unknown field", req: merge(strict, `{"spec":{"bogus":1}}`), code: 422, reason: metav1.StatusReasonInvalid, message: `strict decoding error: unknown field "spec.bogus"`}),
		at(errCase{name: "merge: schema invalid", req: merge(widgetPath, `{"spec":{"size":"big"}}`), code: 422, reason: metav1.StatusReasonInvalid, message: `spec.size: Invalid value: "string": spec.size in body must be of type integer`}),

		// JSON patches.
		at(errCase{name: "json: malformed", req: jsonPatch(widgetPath, `{bad`), code: 400, reason: metav1.StatusReasonBadRequest, message: "invalid JSON patch"}),
		at(errCase{name: "json Ignore: malformed", req: jsonPatch(ignore, `[{"op":`), code: 400, reason: metav1.StatusReasonBadRequest, message: "invalid JSON patch"}),
		at(errCase{name: "json: empty", req: req{method: "PATCH", path: widgetPath, contentType: "application/json-patch+json"}, code: 400, reason: metav1.StatusReasonBadRequest, message: "invalid JSON patch"}),
		at(errCase{name: "json: object", req: jsonPatch(widgetPath, `{}`), code: 400, reason: metav1.StatusReasonBadRequest, message: "error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp"}),
		at(errCase{name: "json Ignore: object", req: jsonPatch(ignore, `{}`), code: 400, reason: metav1.StatusReasonBadRequest, message: "json: cannot unmarshal object into Go value of type jsonpatch.Patch"}),
		at(errCase{name: "json: test fails", req: jsonPatch(widgetPath, `[{"op":"test","path":"/spec/size","value":99}]`), code: 422, reason: metav1.StatusReasonInvalid, message: generic422}),
		at(errCase{name: "json: unknown op", req: jsonPatch(widgetPath, `[{"op":"bogus","path":"/spec/size"}]`), code: 422, reason: metav1.StatusReasonInvalid, message: generic422}),
		at(errCase{name: "json: remove missing", req: jsonPatch(widgetPath, `[{"op":"remove","path":"/spec/nothing"}]`), code: 422, reason: metav1.StatusReasonInvalid, message: generic422}),
		at(errCase{name: "json: result not an object", req: jsonPatch(widgetPath, `[{"op":"replace","path":"","value":[1]}]`), code: 422, reason: metav1.StatusReasonInvalid, message: `patch: Invalid value: "[1]"`}),
		at(errCase{name: "json Strict: unknown field", req: jsonPatch(strict, `[{"op":"replace","path":"/spec/size","value":2,"extra":1}]`), code: 422, reason: metav1.StatusReasonInvalid, message: `strict decoding error: json patch unknown field "[0].extra"`}),

		// Strategic merge patches (resources with a Go type).
		at(errCase{name: "smp: malformed", req: smp(`{bad`), code: 400, reason: metav1.StatusReasonBadRequest, message: "invalid JSON patch"}),
		at(errCase{name: "smp: array", req: smp(`[1]`), code: 400, reason: metav1.StatusReasonBadRequest, message: "json: cannot unmarshal array into Go value of type map[string]interface {}"}),
		at(errCase{name: "smp: wrong type", req: smp(`{"spec":{"finalizers":"x"}}`), code: 422, reason: metav1.StatusReasonInvalid, message: `patch: Invalid value: "map[spec:map[finalizers:x]]"`}),
		at(errCase{name: "smp: unsupported on custom resources", req: req{method: "PATCH", path: widgetPath, body: `{}`, contentType: "application/strategic-merge-patch+json"}, code: 415, reason: metav1.StatusReasonUnsupportedMediaType}),
		at(errCase{name: "smp: unknown $patch", req: smp(`{"metadata":{"labels":{"$patch":"frob"}}}`), code: 500, reason: metav1.StatusReasonUnknown, message: "unknown patch type: frob in map: map[$patch:frob]"}),

		// A body is read as its patch type once the object is: a missing
		// object is a 404 first.
		at(errCase{name: "json: object, missing object", req: jsonPatch(missing, `{}`), code: 404, reason: metav1.StatusReasonNotFound}),
		at(errCase{name: "merge: array, missing object", req: merge(missing, `[1]`), code: 404, reason: metav1.StatusReasonNotFound}),
		at(errCase{name: "json: too many operations", req: jsonPatch(widgetPath, "["+strings.Repeat("{},", 10000)+"{}]"), code: 413, reason: metav1.StatusReasonRequestEntityTooLarge,
			message: "The allowed maximum operations in a JSON patch is 10000, got 10001"}),

		// The result is decoded, and checked by the store, as upstream's.
		at(errCase{name: "json: kind removed", req: jsonPatch(widgetPath, `[{"op":"remove","path":"/kind"}]`), code: 422, reason: metav1.StatusReasonInvalid, message: `: Object 'Kind' is missing in '{"apiVersion":"patch.example.com/v1",`}),
		at(errCase{name: "json: apiVersion removed", req: jsonPatch(widgetPath, `[{"op":"remove","path":"/apiVersion"}]`), code: 500, reason: metav1.StatusReasonInternalError,
			message: "Internal error occurred: Object 'apiVersion' is missing in 'object has no apiVersion field'"}),
		at(errCase{name: "json: apiVersion malformed", req: jsonPatch(widgetPath, `[{"op":"replace","path":"/apiVersion","value":"a/b/c"}]`), code: 422, reason: metav1.StatusReasonInvalid, message: `": unexpected GroupVersion string: a/b/c`}),
		at(errCase{name: "json: another version", req: jsonPatch(widgetPath, `[{"op":"replace","path":"/apiVersion","value":"patch.example.com/v2"}]`), code: 422, reason: metav1.StatusReasonInvalid,
			message: `Widget.patch.example.com "w1" is invalid: apiVersion: Invalid value: "patch.example.com/v2": must be patch.example.com/v1`}),
		at(errCase{name: "json: another group and kind", req: jsonPatch(widgetPath, `[{"op":"replace","path":"/apiVersion","value":"other.example.com/v1"},{"op":"replace","path":"/kind","value":"Gadget"}]`), code: 422, reason: metav1.StatusReasonInvalid,
			message: `Gadget.other.example.com "w1" is invalid: [kind: Invalid value: "Gadget": must be Widget, apiVersion: Invalid value: "other.example.com/v1": must be patch.example.com/v1]`}),
		at(errCase{name: "json: resourceVersion not a revision", req: jsonPatch(widgetPath, `[{"op":"replace","path":"/metadata/resourceVersion","value":"abc"}]`), code: 500, reason: metav1.StatusReasonUnknown,
			message: `strconv.ParseUint: parsing "abc": invalid syntax`}),
		at(errCase{name: "json: resourceVersion removed", req: jsonPatch(widgetPath, `[{"op":"remove","path":"/metadata/resourceVersion"}]`), code: 422, reason: metav1.StatusReasonInvalid,
			message: `widgets.patch.example.com "w1" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update`}),
		at(errCase{name: "json: resourceVersion 0", req: jsonPatch(widgetPath, `[{"op":"replace","path":"/metadata/resourceVersion","value":"0"}]`), code: 422, reason: metav1.StatusReasonInvalid,
			message: `metadata.resourceVersion: Invalid value: 0: must be specified for an update`}),
		at(errCase{name: "json: metadata removed", req: jsonPatch(widgetPath, `[{"op":"remove","path":"/metadata"}]`), code: 400, reason: metav1.StatusReasonBadRequest,
			message: "the name of the object (w1 based on URL) was undeterminable: name must be provided"}),
		at(errCase{name: "put: resourceVersion not a revision", req: req{method: "PUT", path: widgetPath, body: `{"apiVersion":"patch.example.com/v1","kind":"Widget","metadata":{"name":"w1","resourceVersion":"x1"}}`},
			code: 500, reason: metav1.StatusReasonUnknown, message: `strconv.ParseUint: parsing "x1": invalid syntax`}),

		// Patch types, as upstream's handlers read Content-Type: a custom
		// resource's exactly, up to the first ";"; a built-in's routes
		// first, which answer in their own words.
		at(errCase{name: "custom: type in capitals", req: req{method: "PATCH", path: widgetPath, body: `{}`, contentType: "APPLICATION/MERGE-PATCH+JSON"}, code: 415, reason: metav1.StatusReasonUnsupportedMediaType,
			message: "accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"}),
		at(errCase{name: "built-in: unknown type", req: req{method: "PATCH", path: nsPath, body: `{}`, contentType: "text/plain"}, code: 415, reason: metav1.StatusReasonUnsupportedMediaType, message: "415: Unsupported Media Type"}),
		at(errCase{name: "built-in: a list of types", req: req{method: "PATCH", path: nsPath, body: `{}`, contentType: "application/merge-patch+json, text/plain"}, code: 415, reason: metav1.StatusReasonUnsupportedMediaType,
			message: "accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml"}),
	})

	// A patch of unknown fields with the default fieldValidation warns and
	// drops them.
	r := e.do(merge(widgetPath, `{"spec":{"bogus":1,"size":2}}`))
	if r.code != 200 || !strings.Contains(r.header.Get("Warning"), `unknown field \"spec.bogus\"`) || str(r.obj(t), "spec", "bogus") != "" {
		t.Errorf("merge patch with an unknown field: %d, Warning %q: %s", r.code, r.header.Get("Warning"), r.body)
	}
	// A JSON patch replacing a missing key adds it, as upstream's library does.
	r = e.do(jsonPatch(widgetPath, `[{"op":"replace","path":"/spec/size","value":3}]`))
	if r.code != 200 || str(r.obj(t), "spec", "size") != "3" {
		t.Errorf("json patch: %d %s", r.code, r.body)
	}
}

// The scale subresource decodes Scales as autoscaling/v1 does: replicas is
// an int32. A custom resource's Scale that does not decode is refused in
// the words of upstream's handler, which then fails to type the body.
func TestScaleErrors(t *testing.T) {
	e := newWidgetEnv(t)
	put := func(path, body string) req { return req{method: "PUT", path: path, body: body} }
	const tooMany = "json: cannot unmarshal number 2147483648 into Go struct field ScaleSpec.spec.replicas of type int32"
	const untyped = `no kind is registered for the type v1.Scale in scheme "pkg/runtime/scheme.go:111"`
	e.checkCases(t, []errCase{
		at(errCase{name: "put: replicas over int32", req: put(scalePath, `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"w1"},"spec":{"replicas":2147483648}}`), code: 400, reason: metav1.StatusReasonBadRequest,
			message: untyped}),
		at(errCase{name: "put: replicas a string", req: put(scalePath, `{"metadata":{"name":"w1"},"spec":{"replicas":"3"}}`), code: 400, reason: metav1.StatusReasonBadRequest,
			message: untyped}),
		at(errCase{name: "put Strict: unknown field", req: put(scalePath+"?fieldValidation=Strict", `{"metadata":{"name":"w1"},"spec":{"replicas":3,"x":1}}`), code: 400, reason: metav1.StatusReasonBadRequest,
			message: untyped}),
		at(errCase{name: "put: malformed", req: put(scalePath, `{"metadata":`), code: 400, reason: metav1.StatusReasonBadRequest, message: untyped}),
		at(errCase{name: "put: another kind", req: put(scalePath, `{"apiVersion":"autoscaling/v1","kind":"Other","metadata":{"name":"w1"},"spec":{"replicas":3}}`), code: 400, reason: metav1.StatusReasonBadRequest,
			message: untyped}),
		at(errCase{name: "put: another version", req: put(scalePath, `{"apiVersion":"autoscaling/v2","kind":"Scale","metadata":{"name":"w1"},"spec":{"replicas":3}}`), code: 400, reason: metav1.StatusReasonBadRequest,
			message: untyped}),
		at(errCase{name: "put: negative", req: put(scalePath, `{"metadata":{"name":"w1"},"spec":{"replicas":-1}}`), code: 422, reason: metav1.StatusReasonInvalid, message: "spec.replicas"}),
		at(errCase{name: "merge: replicas over int32", req: merge(scalePath, `{"spec":{"replicas":2147483648}}`), code: 422, reason: metav1.StatusReasonInvalid, message: tooMany}),
		at(errCase{name: "json: replicas over int32", req: jsonPatch(scalePath, `[{"op":"replace","path":"/spec/replicas","value":2147483648}]`), code: 422, reason: metav1.StatusReasonInvalid, message: tooMany}),
		at(errCase{name: "json: test fails", req: jsonPatch(scalePath, `[{"op":"test","path":"/spec/replicas","value":7}]`), code: 422, reason: metav1.StatusReasonInvalid,
			message: "the server rejected our request due to an error in our request"}),
		at(errCase{name: "json: remove missing", req: jsonPatch(scalePath, `[{"op":"remove","path":"/spec/nothing"}]`), code: 422, reason: metav1.StatusReasonInvalid, message: "the server rejected our request due to an error in our request"}),
		at(errCase{name: "json: malformed", req: jsonPatch(scalePath, `[`), code: 400, reason: metav1.StatusReasonBadRequest, message: "invalid JSON patch"}),
		at(errCase{name: "merge: malformed", req: merge(scalePath, `{`), code: 400, reason: metav1.StatusReasonBadRequest, message: "invalid JSON patch"}),
		at(errCase{name: "merge Strict: unknown field", req: merge(scalePath+"?fieldValidation=Strict", `{"spec":{"x":1}}`), code: 422, reason: metav1.StatusReasonInvalid, message: `strict decoding error: unknown field "spec.x"`}),
		at(errCase{name: "strategic", req: req{method: "PATCH", path: scalePath, body: `{}`, contentType: "application/strategic-merge-patch+json"}, code: 415, reason: metav1.StatusReasonUnsupportedMediaType}),
	})
	// Nothing a rejected request sent was stored; a valid one is.
	if got := str(e.do(req{method: "GET", path: widgetPath}).obj(t), "spec", "replicas"); got != "1" {
		t.Errorf("spec.replicas after rejected scale writes = %s, want 1", got)
	}
	r := e.do(merge(scalePath, `{"spec":{"replicas":2147483647}}`))
	if r.code != 200 || nestedNumber(r.obj(t), "spec", "replicas") != 2147483647 {
		t.Errorf("merge patch of the largest int32: %d %s", r.code, r.body)
	}
	r = e.do(put(scalePath, `{"metadata":{"name":"w1"},"spec":{"replicas":4}}`))
	if r.code != 200 || str(r.obj(t), "spec", "replicas") != "4" || str(r.obj(t), "kind") != "Scale" {
		t.Errorf("put: %d %s", r.code, r.body)
	}
}

// nestedNumber reads a JSON number from a decoded response.
func nestedNumber(obj map[string]any, path ...string) float64 {
	var v any = obj
	for _, p := range path {
		m, _ := v.(map[string]any)
		v = m[p]
	}
	f, _ := v.(float64)
	return f
}

// An object without spec replicas has no Scale to read (upstream's 500),
// and a Scale patch that does not set them is refused; one that does, or
// a PUT, sets them.
func TestScaleWithoutReplicas(t *testing.T) {
	e := newWidgetEnv(t)
	const w2 = "/apis/patch.example.com/v1/namespaces/default/widgets/w2"
	if r := e.do(req{method: "POST", path: "/apis/patch.example.com/v1/namespaces/default/widgets", body: `{"apiVersion":"patch.example.com/v1","kind":"Widget","metadata":{"name":"w2"},"spec":{"size":1}}`}); r.code != 201 {
		t.Fatalf("creating w2: %d %s", r.code, r.body)
	}
	e.checkCases(t, []errCase{
		at(errCase{name: "get", req: req{method: "GET", path: w2 + "/scale"}, code: 500, reason: metav1.StatusReasonInternalError,
			message: `Internal error occurred: the spec replicas field ".spec.replicas" does not exist`}),
		at(errCase{name: "merge without replicas", req: merge(w2+"/scale", `{"metadata":{"labels":{"a":"b"}}}`), code: 400, reason: metav1.StatusReasonBadRequest,
			message: `the spec replicas field ".spec.replicas" cannot be empty`}),
	})
	if r := e.do(merge(w2+"/scale", `{"spec":{"replicas":3}}`)); r.code != 200 || str(r.obj(t), "spec", "replicas") != "3" {
		t.Errorf("merge setting replicas: %d %s", r.code, r.body)
	}
	if r := e.do(req{method: "GET", path: w2 + "/scale"}); r.code != 200 {
		t.Errorf("get after replicas were set: %d %s", r.code, r.body)
	}
}

// A custom resource list carries continue even when empty, as upstream's
// unstructured lists do; a built-in's typed list omits it.
func TestListContinue(t *testing.T) {
	e := newWidgetEnv(t)
	r := e.do(req{method: "GET", path: "/apis/patch.example.com/v1/namespaces/default/widgets"})
	if md, _ := r.obj(t)["metadata"].(map[string]any); r.code != 200 || md["continue"] != "" {
		t.Errorf("custom resource list metadata: %d %s", r.code, r.body)
	}
	r = e.do(req{method: "GET", path: "/api/v1/namespaces"})
	if md, _ := r.obj(t)["metadata"].(map[string]any); r.code != 200 || md["continue"] != nil {
		t.Errorf("namespace list metadata: %d %s", r.code, r.body)
	}
}

// A patch's result is checked as upstream's patcher and store check it:
// a cluster-scoped object's namespace is dropped, a resource that allows
// unconditional updates takes a result without resourceVersion, and a
// custom resource's metadata update errors are listed twice, as
// upstream's custom resource validation checks them once more.
func TestPatchResultChecks(t *testing.T) {
	e := newWidgetEnv(t)
	if r := e.do(req{method: "POST", path: "/api/v1/namespaces", body: ns("res")}); r.code != 201 {
		t.Fatalf("create namespace: %d %s", r.code, r.body)
	}
	r := e.do(jsonPatch("/api/v1/namespaces/res", `[{"op":"add","path":"/metadata/namespace","value":"default"}]`))
	if r.code != 200 || str(r.obj(t), "metadata", "namespace") != "" {
		t.Errorf("namespace given a namespace: %d %s", r.code, r.body)
	}

	cm := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c1"},"data":{"a":"1"}}`
	if r := e.do(req{method: "POST", path: "/api/v1/namespaces/default/configmaps", body: cm}); r.code != 201 {
		t.Fatalf("create configmap: %d %s", r.code, r.body)
	}
	for _, tc := range []struct {
		line  int
		patch string
	}{
		{line(), `[{"op":"remove","path":"/metadata/resourceVersion"},{"op":"replace","path":"/data/a","value":"2"}]`},
		{line(), `[{"op":"replace","path":"/metadata/resourceVersion","value":"0"},{"op":"replace","path":"/data/a","value":"3"}]`},
	} {
		if r := e.do(jsonPatch("/api/v1/namespaces/default/configmaps/c1", tc.patch)); r.code != 200 || str(r.obj(t), "metadata", "resourceVersion") == "" {
			t.Errorf("line %d: unconditional patch: %d %s", tc.line, r.code, r.body)
		}
	}

	r = e.do(jsonPatch(widgetPath, `[{"op":"replace","path":"/metadata/uid","value":"00000000-0000-0000-0000-000000000001"}]`))
	st := r.status(t)
	const uidErr = `metadata.uid: Invalid value: "00000000-0000-0000-0000-000000000001": field is immutable`
	if r.code != 422 || !strings.HasSuffix(st.Message, `"w1" is invalid: `+uidErr) || st.Details == nil || len(st.Details.Causes) != 2 ||
		st.Details.Causes[0] != st.Details.Causes[1] || st.Details.Causes[0].Field != "metadata.uid" {
		t.Errorf("custom resource's uid changed: %d %s", r.code, r.body)
	}
}
