package handler_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"testing"
)

// A CRD with two versions of different schemas, an embedded resource and
// a field preserving unknown fields.
const gizmoCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
 "metadata":{"name":"gizmos.fv.example.com"},
 "spec":{"group":"fv.example.com","scope":"Namespaced",
  "names":{"plural":"gizmos","singular":"gizmo","kind":"Gizmo"},
  "versions":[
   {"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{
    "spec":{"type":"object","properties":{
     "size":{"type":"integer"},
     "e":{"type":"object","x-kubernetes-embedded-resource":true,"properties":{"spec":{"type":"object"}}},
     "free":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}}}}},
   {"name":"v1beta1","served":true,"storage":false,"schema":{"openAPIV3Schema":{"type":"object","properties":{
    "spec":{"type":"object","properties":{"old":{"type":"string"}}}}}}}]}}`

const gizmos = "/apis/fv.example.com/v1/namespaces/default/gizmos"

// newGizmoEnv starts a server serving gizmos.
func newGizmoEnv(t *testing.T) *env {
	t.Helper()
	e := newEnv(t)
	if r := e.do(req{method: "POST", path: "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", body: gizmoCRD}); r.code != 201 {
		t.Fatalf("creating the CRD: %d %s", r.code, r.body)
	}
	for i := 0; e.do(req{method: "GET", path: gizmos}).code != 200; i++ {
		if i == 300 {
			t.Fatal("gizmos are not served")
		}
		sleep()
	}
	return e
}

// warnings are the texts of r's Warning headers, in order.
func (r resp) warnings(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, h := range r.header.Values("Warning") {
		const prefix = "299 - "
		if len(h) < len(prefix) || h[:len(prefix)] != prefix {
			t.Fatalf("Warning %q", h)
		}
		text, err := strconv.Unquote(h[len(prefix):])
		if err != nil {
			t.Fatalf("Warning %q: %v", h, err)
		}
		out = append(out, text)
	}
	return out
}

// warnedCase is a POST and its answer: code, Warning texts and, when not
// empty, the Status message.
type warnedCase struct {
	name, path, body string
	code             int
	warnings         []string
	message          string
}

// postWarned POSTs each case's body as contentType and checks the answer.
func (e *env) postWarned(t *testing.T, contentType string, cases []warnedCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(req{method: "POST", path: tc.path, body: tc.body, contentType: contentType})
			if r.code != tc.code {
				t.Fatalf("code %d, want %d: %s", r.code, tc.code, r.body)
			}
			if got := r.warnings(t); !slices.Equal(got, tc.warnings) {
				t.Errorf("warnings\n got %q\nwant %q", got, tc.warnings)
			}
			if tc.message == "" {
				return
			}
			var st struct{ Message string }
			if err := json.Unmarshal(r.body, &st); err != nil || st.Message != tc.message {
				t.Errorf("message\n got %q\nwant %q", st.Message, tc.message)
			}
		})
	}
}

// The unknown fields of a custom resource body, as upstream's decoder
// reports them: the root metadata's first, then the others', then the
// embedded resources' metadata's; a body of another version by that
// version's schema (the request is refused after decoding), one of
// another kind or group by its metadata only.
func TestUnknownFieldWarnings(t *testing.T) {
	e := newGizmoEnv(t)
	e.postWarned(t, "application/json", []warnedCase{
		{
			name: "in upstream's order",
			path: gizmos + "?dryRun=All",
			body: `{"apiVersion":"fv.example.com/v1","kind":"Gizmo","metadata":{"name":"a","zz":1,"bogus":1},"a":1,
			 "spec":{"size":1,"x":1,"e":{"apiVersion":"v1","kind":"K","metadata":{"name":"e","junk":1},"other":1},"free":{"any":1}}}`,
			code: 201,
			warnings: []string{`unknown field "metadata.bogus"`, `unknown field "metadata.zz"`, `unknown field "a"`,
				`unknown field "spec.e.other"`, `unknown field "spec.x"`, `unknown field "spec.e.metadata.junk"`},
		},
		{
			name:    "strict, in upstream's order",
			path:    gizmos + "?fieldValidation=Strict",
			body:    `{"apiVersion":"fv.example.com/v1","kind":"Gizmo","metadata":{"name":"a","bogus":1},"a":1}`,
			code:    400,
			message: `Gizmo in version "v1" cannot be handled as a Gizmo: strict decoding error: unknown field "metadata.bogus", unknown field "a"`,
		},
		{
			name:     "another version, by its schema",
			path:     gizmos,
			body:     `{"apiVersion":"fv.example.com/v1beta1","kind":"Gizmo","metadata":{"name":"a","bogus":1},"spec":{"old":"x","size":1}}`,
			code:     400,
			warnings: []string{`unknown field "metadata.bogus"`, `unknown field "spec.size"`},
			message:  "the API version in the data (fv.example.com/v1beta1) does not match the expected API version (fv.example.com/v1)",
		},
		{
			name:    "another version, strict",
			path:    gizmos + "?fieldValidation=Strict",
			body:    `{"apiVersion":"fv.example.com/v1beta1","kind":"Gizmo","metadata":{"name":"a"},"spec":{"old":"x","size":1}}`,
			code:    400,
			message: `Gizmo in version "v1beta1" cannot be handled as a Gizmo: strict decoding error: unknown field "spec.size"`,
		},
		{
			name:     "a version the resource does not have: all but apiVersion, kind and metadata",
			path:     gizmos,
			body:     `{"apiVersion":"fv.example.com/v9","kind":"Gizmo","metadata":{"name":"a","bogus":1},"spec":{"size":1},"b":1}`,
			code:     400,
			warnings: []string{`unknown field "metadata.bogus"`, `unknown field "b"`, `unknown field "spec"`},
			message:  "the API version in the data (fv.example.com/v9) does not match the expected API version (fv.example.com/v1)",
		},
		{
			name:     "another group: the metadata only",
			path:     gizmos,
			body:     `{"apiVersion":"other.example.com/v1","kind":"Gizmo","metadata":{"name":"a","bogus":1},"spec":{"x":1}}`,
			code:     400,
			warnings: []string{`unknown field "metadata.bogus"`},
			message:  "the API version in the data (other.example.com/v1) does not match the expected API version (fv.example.com/v1)",
		},
		{
			name:    "another group, strict",
			path:    gizmos + "?fieldValidation=Strict",
			body:    `{"apiVersion":"other.example.com/v1","kind":"Gizmo","metadata":{"name":"a","bogus":1},"spec":{"x":1}}`,
			code:    400,
			message: `Gizmo in version "v1" cannot be handled as a Gizmo: strict decoding error: unknown field "metadata.bogus"`,
		},
		{
			name:     "another kind: the metadata only",
			path:     gizmos,
			body:     `{"apiVersion":"fv.example.com/v1","kind":"Other","metadata":{"name":"a","bogus":1},"spec":{"x":1}}`,
			code:     422,
			warnings: []string{`unknown field "metadata.bogus"`},
			message:  `Other.fv.example.com "a" is invalid: kind: Invalid value: "Other": must be Gizmo`,
		},
		{
			// A control character makes no Warning header upstream.
			name:     "field names quoted as they are",
			path:     gizmos + "?dryRun=All",
			body:     `{"apiVersion":"fv.example.com/v1","kind":"Gizmo","metadata":{"name":"a"},"spec":{"a\"b":1,"c\td":1,"é\\":1}}`,
			code:     201,
			warnings: []string{`unknown field "spec.a"b"`, `unknown field "spec.é\"`},
		},
		{
			name:    "field names quoted as they are, strict",
			path:    gizmos + "?fieldValidation=Strict",
			body:    `{"apiVersion":"fv.example.com/v1","kind":"Gizmo","metadata":{"name":"a"},"spec":{"a\"b":1,"c\td":1}}`,
			code:    400,
			message: "Gizmo in version \"v1\" cannot be handled as a Gizmo: strict decoding error: unknown field \"spec.a\"b\", unknown field \"spec.c\td\"",
		},
		{
			name:    "another kind, strict: the body's kind",
			path:    gizmos + "?fieldValidation=Strict",
			body:    `{"apiVersion":"fv.example.com/v1","kind":"Other","metadata":{"name":"a","bogus":1},"spec":{"x":1}}`,
			code:    400,
			message: `Other in version "v1" cannot be handled as a Other: strict decoding error: unknown field "metadata.bogus"`,
		},
		{
			name:     "no apiVersion: the metadata only",
			path:     gizmos,
			body:     `{"kind":"Gizmo","metadata":{"name":"a","bogus":1},"spec":{"x":1}}`,
			code:     400,
			warnings: []string{`unknown field "metadata.bogus"`},
			message:  "the API version in the data () does not match the expected API version (fv.example.com/v1)",
		},
		{
			name:    "no apiVersion, strict",
			path:    gizmos + "?fieldValidation=Strict",
			body:    `{"kind":"Gizmo","metadata":{"name":"a","bogus":1},"spec":{"x":1}}`,
			code:    400,
			message: "Object 'apiVersion' is missing in 'object has no apiVersion field'",
		},
		{
			name:    "no apiVersion, strict, nothing unknown",
			path:    gizmos + "?fieldValidation=Strict",
			body:    `{"kind":"Gizmo","metadata":{"name":"a"}}`,
			code:    400,
			message: "the API version in the data () does not match the expected API version (fv.example.com/v1)",
		},
		{
			name:    "an apiVersion that does not parse",
			path:    gizmos,
			body:    `{"apiVersion":"a/b/c","kind":"Gizmo","metadata":{"name":"a","bogus":1}}`,
			code:    400,
			message: `the object provided is unrecognized (must be of type Gizmo): unexpected GroupVersion string: a/b/c ({"apiVersion":"a/b/c","kind":" ...)`,
		},
	})
}

// Duplicate keys of a YAML body: a warning for each under Warn, and under
// Strict the YAML decoder's one error listing them, as upstream's.
func TestYAMLDuplicateKeyWarnings(t *testing.T) {
	e := newGizmoEnv(t)
	const gizmo = "apiVersion: fv.example.com/v1\nkind: Gizmo\nmetadata:\n  name: %s\nspec:\n  size: 1\n  size: 2\n  x: 1\n  free:\n    a: 1\n    a: 2\n"
	const configMap = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  bogus: 1\ndata:\n  a: \"1\"\n  a: \"2\"\n"
	e.postWarned(t, "application/yaml", []warnedCase{
		{
			name: "custom resource", path: gizmos, body: fmt.Sprintf(gizmo, "y1"), code: 201,
			warnings: []string{`line 7: key "size" already set in map`, `line 11: key "a" already set in map`, `unknown field "spec.x"`},
		},
		{
			name: "custom resource, strict", path: gizmos + "?fieldValidation=Strict", body: fmt.Sprintf(gizmo, "y2"), code: 400,
			message: "Gizmo in version \"v1\" cannot be handled as a Gizmo: strict decoding error: yaml: unmarshal errors:\n  line 7: key \"size\" already set in map\n  line 11: key \"a\" already set in map, unknown field \"spec.x\"",
		},
		{
			name: "built-in", path: "/api/v1/namespaces/default/configmaps", body: fmt.Sprintf(configMap, "y3"), code: 201,
			warnings: []string{`line 8: key "a" already set in map`, `unknown field "metadata.bogus"`},
		},
		{
			name: "built-in, strict", path: "/api/v1/namespaces/default/configmaps?fieldValidation=Strict", body: fmt.Sprintf(configMap, "y4"), code: 400,
			message: "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: yaml: unmarshal errors:\n  line 8: key \"a\" already set in map, unknown field \"metadata.bogus\"",
		},
	})
}

// A built-in's JSON body that gives a key twice: the second object adds
// to the first, as upstream's typed decoder has it, and the duplicate is
// warned of.
func TestTypedBodyRepeatedKeys(t *testing.T) {
	e := newEnv(t)
	r := e.do(req{method: "POST", path: "/api/v1/namespaces/default/configmaps?dryRun=All",
		body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labels":{"x":"1"}},"data":{"a":"1","a":"2"},"metadata":{"labels":{"y":"2"}},"data":{"b":"x"}}`})
	if r.code != 201 {
		t.Fatalf("code %d: %s", r.code, r.body)
	}
	want := []string{`duplicate field "data.a"`, `duplicate field "metadata"`, `duplicate field "data"`}
	if got := r.warnings(t); !slices.Equal(got, want) {
		t.Errorf("warnings\n got %q\nwant %q", got, want)
	}
	obj := r.obj(t)
	if got, want := obj["data"], map[string]any{"a": "2", "b": "x"}; !reflect.DeepEqual(got, want) {
		t.Errorf("data %v, want %v", got, want)
	}
	if str(obj, "metadata", "name") != "a" || str(obj, "metadata", "labels", "x") != "1" || str(obj, "metadata", "labels", "y") != "2" {
		t.Errorf("metadata %v, want name a and labels x and y", obj["metadata"])
	}
}
