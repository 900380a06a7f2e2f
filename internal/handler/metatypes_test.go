package handler_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Metadata of the wrong type is refused as upstream refuses it, in
// encoding/json's words for an ObjectMeta: a 400 for a body, a 422 on the
// patched object for a patch. Nothing is stored: a label that is not a
// string would break every client that reads the object.
func TestMetadataOfTheWrongType(t *testing.T) {
	e := newCronTabEnv(t)
	e.checkCases(t, []errCase{
		at(errCase{name: "create, label of another type", req: req{method: "POST", path: cronTabs, body: `{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"n1","labels":{"a":1}}}`},
			code: 400, reason: metav1.StatusReasonBadRequest,
			message: `CronTab in version "v1" cannot be handled as a CronTab: json: cannot unmarshal number into Go struct field ObjectMeta.labels of type string`}),
		at(errCase{name: "create, metadata a string", req: req{method: "POST", path: cronTabs, body: `{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":"x"}`},
			code: 400, reason: metav1.StatusReasonBadRequest,
			message: `CronTab in version "v1" cannot be handled as a CronTab: json: cannot unmarshal string into Go value of type v1.ObjectMeta`}),
		at(errCase{name: "update, finalizer of another type", req: req{method: "PUT", path: cronTabs + "/m1", body: `{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"m1","finalizers":[1]}}`},
			code: 400, reason: metav1.StatusReasonBadRequest,
			message: `cannot unmarshal number into Go struct field ObjectMeta.finalizers of type string`}),
		at(errCase{name: "merge patch", req: merge(cronTabs+"/m1", `{"metadata":{"labels":{"a":1}}}`),
			code: 422, reason: metav1.StatusReasonInvalid,
			message: `json: cannot unmarshal number into Go struct field ObjectMeta.labels of type string`}),
		at(errCase{name: "JSON patch", req: req{method: "PATCH", path: cronTabs + "/m1", contentType: "application/json-patch+json", body: `[{"op":"add","path":"/metadata/generation","value":"x"}]`},
			code: 422, reason: metav1.StatusReasonInvalid,
			message: `json: cannot unmarshal string into Go struct field ObjectMeta.generation of type int64`}),
	})
	if r := e.do(req{method: "GET", path: cronTabs + "/n1"}); r.code != 404 {
		t.Errorf("n1 stored: %d %s", r.code, r.body)
	}
	if r := e.do(req{method: "GET", path: cronTabs + "/m1"}); r.code != 200 || strings.Contains(string(r.body), `"labels"`) {
		t.Errorf("m1 after the refused writes: %d %s", r.code, r.body)
	}
}

// Metadata an ObjectMeta would not encode is dropped as upstream drops it,
// before managedFields are recorded: empty labels, annotations, finalizers
// and strings, whether a body sent them or a patch emptied them.
func TestEmptyMetadataDropped(t *testing.T) {
	e := newCronTabEnv(t)
	r := e.do(req{method: "POST", path: cronTabs, body: `{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"e1","namespace":"","labels":{},"annotations":{},"finalizers":[],"generation":0}}`})
	if r.code != 201 {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	for _, f := range []string{`"labels"`, `"annotations"`, `"finalizers"`} {
		if strings.Contains(string(r.body), f) {
			t.Errorf("created with %s: %s", f, r.body)
		}
	}
	if str(r.obj(t), "metadata", "namespace") != "default" || str(r.obj(t), "metadata", "generation") != "1" {
		t.Errorf("created: %s", r.body)
	}
	if r := e.do(merge(cronTabs+"/e1", `{"metadata":{"labels":{"a":"b"}}}`)); r.code != 200 {
		t.Fatalf("label: %d %s", r.code, r.body)
	}
	r = e.do(req{method: "PATCH", path: cronTabs + "/e1", contentType: "application/json-patch+json", body: `[{"op":"remove","path":"/metadata/labels/a"}]`})
	if r.code != 200 || strings.Contains(string(r.body), `"labels"`) || strings.Contains(string(r.body), `f:labels`) {
		t.Errorf("after removing the last label: %d %s", r.code, r.body)
	}
}
