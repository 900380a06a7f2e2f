package handler_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A CRD shaped like the upstream CronTab example: a structural schema,
// status and scale subresources, printer columns with and without a
// description.
const cronTabCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
 "metadata":{"name":"crontabs.stable.example.com"},
 "spec":{"group":"stable.example.com","scope":"Namespaced",
  "names":{"plural":"crontabs","singular":"crontab","kind":"CronTab"},
  "versions":[{"name":"v1","served":true,"storage":true,
   "subresources":{"status":{},"scale":{"specReplicasPath":".spec.replicas","statusReplicasPath":".status.replicas"}},
   "additionalPrinterColumns":[
    {"name":"Spec","type":"string","jsonPath":".spec.cronSpec"},
    {"name":"Replicas","type":"integer","jsonPath":".spec.replicas","description":"The number of replicas"}],
   "schema":{"openAPIV3Schema":{"type":"object","properties":{
    "spec":{"type":"object","properties":{"cronSpec":{"type":"string"},"replicas":{"type":"integer"}}},
    "status":{"type":"object","properties":{"replicas":{"type":"integer"}}}}}}}]}}`

const (
	cronTabs = "/apis/stable.example.com/v1/namespaces/default/crontabs"
	cronTab  = `{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":%q},"spec":{"cronSpec":"* * * * */5","replicas":1}}`
)

func cronTabBody(name string) string { return strings.Replace(cronTab, "%q", `"`+name+`"`, 1) }

// newCronTabEnv starts a server serving crontabs, with crontab m1.
func newCronTabEnv(t *testing.T) *env {
	t.Helper()
	e := newEnv(t)
	if r := e.do(req{method: "POST", path: "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", body: cronTabCRD}); r.code != 201 {
		t.Fatalf("creating the CRD: %d %s", r.code, r.body)
	}
	for i := 0; ; i++ {
		r := e.do(req{method: "POST", path: cronTabs, body: cronTabBody("m1")})
		if r.code == 201 {
			return e
		}
		if r.code != 404 || i == 300 {
			t.Fatalf("creating m1: %d %s", r.code, r.body)
		}
		sleep() // the CRD is served once the registry has seen it
	}
}

// Dry runs fail where the real request would: a create of a name that is
// taken, a write or delete of an object that does not exist.
func TestDryRunChecksExistence(t *testing.T) {
	e := newCronTabEnv(t)
	// m5 is being deleted: it waits for its finalizer.
	if r := e.do(req{method: "POST", path: cronTabs, body: `{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"m5","finalizers":["example.com/hold"]}}`}); r.code != 201 {
		t.Fatalf("create m5: %d %s", r.code, r.body)
	}
	if r := e.do(req{method: "DELETE", path: cronTabs + "/m5"}); r.code != 200 {
		t.Fatalf("delete m5: %d %s", r.code, r.body)
	}
	put := func(path, body string) req { return req{method: "PUT", path: path, body: body} }
	e.checkCases(t, []errCase{
		at(errCase{name: "create exists", req: req{method: "POST", path: cronTabs + "?dryRun=All", body: cronTabBody("m1")}, code: 409, reason: metav1.StatusReasonAlreadyExists,
			message: `crontabs.stable.example.com "m1" already exists`}),
		at(errCase{name: "create exists, being deleted", req: req{method: "POST", path: cronTabs + "?dryRun=All", body: cronTabBody("m5")}, code: 409, reason: metav1.StatusReasonAlreadyExists,
			message: `object is being deleted: crontabs.stable.example.com "m5" already exists`}),
		at(errCase{name: "real create exists, being deleted", req: req{method: "POST", path: cronTabs, body: cronTabBody("m5")}, code: 409, reason: metav1.StatusReasonAlreadyExists,
			message: `object is being deleted: crontabs.stable.example.com "m5" already exists`}),
		at(errCase{name: "update missing", req: put(cronTabs+"/zz?dryRun=All", cronTabBody("zz")), code: 404, reason: metav1.StatusReasonNotFound,
			message: `crontabs.stable.example.com "zz" not found`}),
		at(errCase{name: "patch missing", req: merge(cronTabs+"/zz?dryRun=All", `{"spec":{"replicas":2}}`), code: 404, reason: metav1.StatusReasonNotFound,
			message: `crontabs.stable.example.com "zz" not found`}),
		at(errCase{name: "delete missing", req: req{method: "DELETE", path: cronTabs + "/zz?dryRun=All"}, code: 404, reason: metav1.StatusReasonNotFound,
			message: `crontabs.stable.example.com "zz" not found`}),
	})
	if r := e.do(req{method: "POST", path: cronTabs + "?dryRun=All", body: cronTabBody("m2")}); r.code != 201 {
		t.Errorf("dry run create of a free name: %d %s", r.code, r.body)
	}
	if r := e.do(req{method: "GET", path: cronTabs + "/m2"}); r.code != 404 {
		t.Errorf("dry run create stored the object: %d", r.code)
	}
}

// A PUT without resourceVersion of a custom resource: a missing object is
// not found before the resourceVersion is missed; the 422 names the
// resource, as upstream's store does.
func TestUpdateWithoutResourceVersion(t *testing.T) {
	e := newCronTabEnv(t)
	e.checkCases(t, []errCase{
		at(errCase{name: "missing object", req: req{method: "PUT", path: cronTabs + "/zz", body: cronTabBody("zz")}, code: 404, reason: metav1.StatusReasonNotFound,
			message: `crontabs.stable.example.com "zz" not found`}),
		at(errCase{name: "existing object", req: req{method: "PUT", path: cronTabs + "/m1", body: cronTabBody("m1")}, code: 422, reason: metav1.StatusReasonInvalid,
			message: `crontabs.stable.example.com "m1" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update`}),
	})
	st := e.do(req{method: "PUT", path: cronTabs + "/m1", body: cronTabBody("m1")}).status(t)
	if st.Details == nil || st.Details.Kind != "crontabs" || st.Details.Group != "stable.example.com" || st.Details.Name != "m1" {
		t.Errorf("details = %+v, want kind crontabs, group stable.example.com, name m1", st.Details)
	}
}

// Bodies that do not decode as the resource's kind are refused with
// upstream's decoder messages.
func TestDecodeErrors(t *testing.T) {
	e := newCronTabEnv(t)
	get := e.do(req{method: "GET", path: cronTabs + "/m1"}).obj(t)
	rv := str(get, "metadata", "resourceVersion")
	const noKind = `{"metadata":{"name":"x"}}`
	const noKindM1 = `{"metadata":{"name":"m1","resourceVersion":"RV"}}`
	m1NoKind := strings.Replace(noKindM1, "RV", rv, 1)
	withUnknown := `{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"m1","resourceVersion":"` + rv + `"},"spec":{"unknownField":1}}`
	const strictMsg = `CronTab in version "v1" cannot be handled as a CronTab: strict decoding error: unknown field "spec.unknownField"`
	e.checkCases(t, []errCase{
		at(errCase{name: "create: no kind", req: req{method: "POST", path: cronTabs, body: noKind}, code: 400, reason: metav1.StatusReasonBadRequest,
			message: `the object provided is unrecognized (must be of type CronTab): Object 'Kind' is missing in '` + noKind + `' (` + noKind + `)`}),
		at(errCase{name: "create Ignore: no kind", req: req{method: "POST", path: cronTabs + "?fieldValidation=Ignore", body: noKind}, code: 400, reason: metav1.StatusReasonBadRequest,
			message: `CronTab in version "v1" cannot be handled as a CronTab: Object 'Kind' is missing in '` + noKind + `'`}),
		at(errCase{name: "update: no kind", req: req{method: "PUT", path: cronTabs + "/m1", body: m1NoKind}, code: 400, reason: metav1.StatusReasonBadRequest,
			message: `the object provided is unrecognized (must be of type CronTab): Object 'Kind' is missing in '` + m1NoKind + `' ({"metadata":{"name":"m1","reso ...)`}),
		at(errCase{name: "create: no apiVersion", req: req{method: "POST", path: cronTabs, body: `{"kind":"CronTab","metadata":{"name":"x"}}`}, code: 400, reason: metav1.StatusReasonBadRequest,
			message: `the API version in the data () does not match the expected API version (stable.example.com/v1)`}),
		at(errCase{name: "create: not JSON", req: req{method: "POST", path: cronTabs, body: `not json`}, code: 400, reason: metav1.StatusReasonBadRequest,
			message: `the object provided is unrecognized (must be of type CronTab): couldn't get version/kind; json parse error: invalid character 'o' in literal null (expecting 'u') (6e6f74206a736f6e)`}),
		at(errCase{name: "namespace: not JSON", req: req{method: "POST", path: "/api/v1/namespaces", body: `not json`}, code: 400, reason: metav1.StatusReasonBadRequest,
			message: `the object provided is unrecognized (must be of type Namespace): couldn't get version/kind; json parse error: invalid character 'o' in literal null (expecting 'u') (6e6f74206a736f6e)`}),
		at(errCase{name: "scale: not JSON", req: req{method: "PUT", path: cronTabs + "/m1/scale", body: `not json`}, code: 400, reason: metav1.StatusReasonBadRequest,
			// Upstream's handler fails to type a custom resource's Scale.
			message: `no kind is registered for the type v1.Scale in scheme "pkg/runtime/scheme.go:111"`}),
		at(errCase{name: "create Strict: unknown field", req: req{method: "POST", path: cronTabs + "?fieldValidation=Strict", body: `{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"m9"},"spec":{"unknownField":1}}`}, code: 400, reason: metav1.StatusReasonBadRequest,
			message: strictMsg}),
		at(errCase{name: "update Strict: unknown field", req: req{method: "PUT", path: cronTabs + "/m1?fieldValidation=Strict", body: withUnknown}, code: 400, reason: metav1.StatusReasonBadRequest,
			message: strictMsg}),
		at(errCase{name: "update Strict of a missing object: decoding first", req: req{method: "PUT", path: cronTabs + "/zz?fieldValidation=Strict", body: strings.ReplaceAll(withUnknown, `"m1"`, `"zz"`)}, code: 400, reason: metav1.StatusReasonBadRequest,
			message: strictMsg}),
		at(errCase{name: "namespace Strict: unknown field", req: req{method: "POST", path: "/api/v1/namespaces?fieldValidation=Strict", body: `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"unk"},"spec":{"foo":1}}`}, code: 400, reason: metav1.StatusReasonBadRequest,
			message: `Namespace in version "v1" cannot be handled as a Namespace: strict decoding error: unknown field "spec.foo"`}),
	})
	// A namespace, having a Go type, takes its kind and apiVersion from
	// the URL.
	if r := e.do(req{method: "POST", path: "/api/v1/namespaces", body: `{"metadata":{"name":"nokind"}}`}); r.code != 201 {
		t.Errorf("namespace without kind: %d %s", r.code, r.body)
	}
}

// Subresources a resource does not have: a custom resource's object is not
// found; a built-in's path is not a route.
func TestUnknownSubresources(t *testing.T) {
	e := newCronTabEnv(t)
	e.checkCases(t, []errCase{
		at(errCase{name: "custom resource", req: req{method: "GET", path: cronTabs + "/m2/bogus"}, code: 404, reason: metav1.StatusReasonNotFound,
			message: `crontabs.stable.example.com "m2" not found`}),
		at(errCase{name: "custom resource, existing object", req: merge(cronTabs+"/m1/bogus", `{}`), code: 404, reason: metav1.StatusReasonNotFound,
			message: `crontabs.stable.example.com "m1" not found`}),
		at(errCase{name: "built-in", req: merge("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/x/scale", `{}`), code: 404, reason: metav1.StatusReasonNotFound,
			message: "the server could not find the requested resource"}),
		at(errCase{name: "built-in subresource, other verb", req: req{method: "GET", path: "/api/v1/namespaces/default/finalize"}, code: 405, reason: metav1.StatusReasonMethodNotAllowed,
			message: "the server does not allow this method on the requested resource"}),
	})
}

// The Accept headers of one object and of a list reduced to metadata.
const (
	metadataAccept     = "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io"
	metadataListAccept = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"
)

// Query parameters are validated as upstream's options objects are.
func TestBadQueryParameters(t *testing.T) {
	e := newCronTabEnv(t)
	rv := str(e.do(req{method: "GET", path: cronTabs + "/m1"}).obj(t), "metadata", "resourceVersion")
	m1 := strings.Replace(cronTabBody("m1"), `"name":"m1"`, `"name":"m1","resourceVersion":"`+rv+`"`, 1)
	const unsupported = `fieldValidation: Unsupported value: "Bogus": supported values: "", "Ignore", "Strict", "Warn"`
	const badRV = `resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax`
	e.checkCases(t, []errCase{
		at(errCase{name: "create", req: req{method: "POST", path: cronTabs + "?fieldValidation=Bogus", body: cronTabBody("m3")}, code: 422, reason: metav1.StatusReasonInvalid,
			message: `CreateOptions.meta.k8s.io "" is invalid: ` + unsupported}),
		at(errCase{name: "update", req: req{method: "PUT", path: cronTabs + "/m1?fieldValidation=Bogus", body: m1}, code: 422, reason: metav1.StatusReasonInvalid,
			message: `UpdateOptions.meta.k8s.io "" is invalid: ` + unsupported}),
		at(errCase{name: "patch", req: merge(cronTabs+"/m1?fieldValidation=Bogus", `{}`), code: 422, reason: metav1.StatusReasonInvalid,
			message: `PatchOptions.meta.k8s.io "" is invalid: ` + unsupported}),
		at(errCase{name: "scale update", req: req{method: "PUT", path: cronTabs + "/m1/scale?dryRun=Some", body: `{"metadata":{"name":"m1"},"spec":{"replicas":2}}`}, code: 422, reason: metav1.StatusReasonInvalid,
			message: `UpdateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["Some"]: supported values: "All"`}),
		at(errCase{name: "delete dryRun", req: req{method: "DELETE", path: cronTabs + "/m1?dryRun=Some"}, code: 422, reason: metav1.StatusReasonInvalid,
			message: `DeleteOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["Some"]: supported values: "All"`}),
		at(errCase{name: "delete propagationPolicy", req: req{method: "DELETE", path: cronTabs + "/m1?propagationPolicy=Bogus"}, code: 422, reason: metav1.StatusReasonInvalid,
			message: `DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "Bogus": supported values: "Foreground", "Background", "Orphan", "nil"`}),
		at(errCase{name: "delete gracePeriodSeconds", req: req{method: "DELETE", path: cronTabs + "/m1?gracePeriodSeconds=abc"}, code: 400, reason: metav1.StatusReasonBadRequest,
			message: `strconv.ParseInt: parsing "abc": invalid syntax`}),
		// With a body, the query's options are not read.
		at(errCase{name: "delete options in the body", req: req{method: "DELETE", path: cronTabs + "/zz?propagationPolicy=Bogus", body: `{}`}, code: 404, reason: metav1.StatusReasonNotFound,
			message: `crontabs.stable.example.com "zz" not found`}),
		// The token is read before the resourceVersion beside it.
		at(errCase{name: "list continue", req: req{method: "GET", path: cronTabs + "?continue=garbage&resourceVersion=5"}, code: 400, reason: metav1.StatusReasonBadRequest,
			message: `invalid continue token: `}),
		at(errCase{name: "one object as a list", req: req{method: "GET", path: cronTabs + "/m1", accept: metadataListAccept}, code: 500, reason: metav1.StatusReasonUnknown,
			message: `content is not a list`}),
		at(errCase{name: "one built-in as a list", req: req{method: "GET", path: "/api/v1/namespaces/default", accept: metadataListAccept}, code: 406, reason: metav1.StatusReasonNotAcceptable,
			message: `you requested PartialObjectMetadataList, but the requested object is not a list (*core.Namespace)`}),
		at(errCase{name: "a list as one object", req: req{method: "GET", path: cronTabs, accept: metadataAccept}, code: 406, reason: metav1.StatusReasonNotAcceptable,
			message: `you requested PartialObjectMetadata, but the requested object is a list (*unstructured.UnstructuredList)`}),
		at(errCase{name: "a built-in list as one object", req: req{method: "GET", path: "/apis/events.k8s.io/v1/events", accept: metadataAccept}, code: 406, reason: metav1.StatusReasonNotAcceptable,
			message: `you requested PartialObjectMetadata, but the requested object is a list (*core.EventList)`}),
		at(errCase{name: "list resourceVersion", req: req{method: "GET", path: cronTabs + "?resourceVersion=abc"}, code: 400, reason: metav1.StatusReasonBadRequest,
			message: `invalid resource version: ` + badRV}),
		at(errCase{name: "watch resourceVersion", req: req{method: "GET", path: cronTabs + "?watch=true&resourceVersion=abc"}, code: 500, reason: metav1.StatusReasonUnknown,
			message: badRV}),
	})
	if r := e.do(req{method: "GET", path: cronTabs + "/m1"}); r.code != 200 {
		t.Errorf("m1 after rejected requests: %d %s", r.code, r.body)
	}
}

// Printer columns without a description are described by their JSONPath.
func TestPrinterColumnDescriptions(t *testing.T) {
	e := newCronTabEnv(t)
	r := e.do(req{method: "GET", path: cronTabs, accept: "application/json;as=Table;g=meta.k8s.io;v=v1"})
	if r.code != http.StatusOK {
		t.Fatalf("table: %d %s", r.code, r.body)
	}
	var tbl metav1.Table
	if err := json.Unmarshal(r.body, &tbl); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"Spec":     "Custom resource definition column (in JSONPath format): .spec.cronSpec",
		"Replicas": "The number of replicas",
	}
	for _, col := range tbl.ColumnDefinitions {
		if d, ok := want[col.Name]; ok && col.Description != d {
			t.Errorf("column %s: description %q, want %q", col.Name, col.Description, d)
		}
		delete(want, col.Name)
	}
	if len(want) > 0 {
		t.Errorf("columns missing: %v", want)
	}
}

// kubectl get --subresource=scale asks for a Table of the Scale: upstream
// prints the replicas the version maps and the age.
func TestScaleTable(t *testing.T) {
	e := newCronTabEnv(t)
	r := e.do(req{method: "GET", path: cronTabs + "/m1/scale", accept: "application/json;as=Table;g=meta.k8s.io;v=v1"})
	if r.code != http.StatusOK {
		t.Fatalf("scale table: %d %s", r.code, r.body)
	}
	var tbl metav1.Table
	if err := json.Unmarshal(r.body, &tbl); err != nil || tbl.Kind != "Table" {
		t.Fatalf("not a Table (%v): %s", err, r.body)
	}
	var names []string
	for _, col := range tbl.ColumnDefinitions {
		names = append(names, col.Name)
	}
	if got := strings.Join(names, ","); got != "Name,Desired,Available,Age" {
		t.Errorf("columns = %s, want Name,Desired,Available,Age", got)
	}
	if len(tbl.ColumnDefinitions) == 4 && tbl.ColumnDefinitions[1].Description != "Number of desired replicas" {
		t.Errorf("Desired description = %q", tbl.ColumnDefinitions[1].Description)
	}
	if len(tbl.Rows) != 1 || len(tbl.Rows[0].Cells) != 4 || tbl.Rows[0].Cells[0] != "m1" || tbl.Rows[0].Cells[1] != float64(1) || tbl.Rows[0].Cells[2] != float64(0) {
		t.Errorf("rows = %+v", tbl.Rows)
	}
	// Without the Table form it is the Scale itself.
	if r := e.do(req{method: "GET", path: cronTabs + "/m1/scale"}); r.code != 200 || str(r.obj(t), "kind") != "Scale" {
		t.Errorf("scale: %d %s", r.code, r.body)
	}
}

// A replica count of the wrong type fails the schema and, as upstream's
// scale validation reads it, the scale path too.
func TestScaleReplicasValidation(t *testing.T) {
	e := newCronTabEnv(t)
	const accessor = `.spec.replicas: Invalid value: 0: .spec.replicas accessor error: abc is of the type string, expected int64`
	e.checkCases(t, []errCase{
		at(errCase{name: "patch", req: merge(cronTabs+"/m1", `{"spec":{"replicas":"abc"}}`), code: 422, reason: metav1.StatusReasonInvalid, message: accessor}),
		at(errCase{name: "create", req: req{method: "POST", path: cronTabs, body: `{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"m7"},"spec":{"replicas":"abc"}}`}, code: 422, reason: metav1.StatusReasonInvalid, message: accessor}),
		// A negative count through /scale is the custom resource's
		// validator's error, not the Scale's.
		at(errCase{name: "scale put", req: req{method: "PUT", path: cronTabs + "/m1/scale", body: `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"m1"},"spec":{"replicas":-1}}`},
			code: 422, reason: metav1.StatusReasonInvalid, message: `CronTab.stable.example.com "m1" is invalid: .spec.replicas: Invalid value: -1: should be a non-negative integer`}),
		at(errCase{name: "scale patch", req: merge(cronTabs+"/m1/scale", `{"spec":{"replicas":-1}}`),
			code: 422, reason: metav1.StatusReasonInvalid, message: `CronTab.stable.example.com "m1" is invalid: .spec.replicas: Invalid value: -1: should be a non-negative integer`}),
	})
	st := e.do(merge(cronTabs+"/m1", `{"spec":{"replicas":"abc"}}`)).status(t)
	if st.Details == nil || len(st.Details.Causes) != 2 || st.Details.Causes[1].Field != ".spec.replicas" {
		t.Errorf("causes = %+v, want the schema's and the scale's", st.Details)
	}
}
