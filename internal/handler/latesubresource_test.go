package handler_test

import (
	"encoding/json"
	"runtime"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// lateCase is a write through a built-in's own subresource that changes
// more than the subresource keeps: what is stored, and what the writer's
// managedFields own.
type lateCase struct {
	name   string
	line   int
	create req
	write  req
	// stored maps a dotted path of the answer to the JSON it holds: ""
	// where it holds nothing, * where it holds anything.
	stored map[string]string
	// owned and notOwned are members of the writer's fieldsV1.
	owned, notOwned []string
}

func lateAt(c lateCase) lateCase {
	_, _, c.line, _ = runtime.Caller(1)
	return c
}

// A write through pods/ephemeralcontainers, certificatesigningrequests/
// approval or namespaces/finalize is the whole object until it is
// prepared, as kube-apiserver 1.37's strategies keep it in
// PrepareForUpdate: its managedFields record what it changed (less the
// subresource's reset fields: a CSR's spec and certificate through
// /approval, a namespace's status through /finalize), and only then is
// it kept to what the subresource may change.
func TestLateSubresources(t *testing.T) {
	e := newEnv(t)
	cases := []lateCase{
		lateAt(lateCase{
			name: "ephemeral containers keep the containers added, not the labels, image or status",
			create: req{method: "POST", path: "/api/v1/namespaces/default/pods", body: `{"apiVersion":"v1","kind":"Pod",` +
				`"metadata":{"name":"eph","labels":{"app":"eph"}},"spec":{"containers":[{"name":"app","image":"nginx"}]}}`},
			write: req{method: "PATCH", path: "/api/v1/namespaces/default/pods/eph/ephemeralcontainers?fieldManager=writer", contentType: "application/strategic-merge-patch+json",
				body: `{"metadata":{"labels":{"x":"y"}},"spec":{"containers":[{"name":"app","image":"nginx:2"}],` +
					`"ephemeralContainers":[{"name":"dbg","image":"busybox"}]},"status":{"message":"m"}}`},
			stored: map[string]string{
				"metadata.labels":                            `{"app":"eph"}`,
				"metadata.generation":                        `2`,
				"spec.containers.0.image":                    `"nginx"`,
				"spec.ephemeralContainers.0.name":            `"dbg"`,
				"spec.ephemeralContainers.0.imagePullPolicy": `"Always"`,
				"status.message":                             ``,
			},
			owned: []string{`"f:x"`, `"f:image"`, `"k:{\"name\":\"dbg\"}"`, `"f:message"`},
		}),
		lateAt(lateCase{
			name: "approval keeps the metadata and conditions, not the spec or certificate",
			create: req{method: "POST", path: "/apis/certificates.k8s.io/v1/certificatesigningrequests", body: `{"metadata":{"name":"late","labels":{"app":"csr"}},` +
				`"spec":{"request":"` + testCSRRequest + `","signerName":"example.com/signer","usages":["client auth"]}}`},
			write: req{method: "PATCH", path: "/apis/certificates.k8s.io/v1/certificatesigningrequests/late/approval?fieldManager=writer", contentType: "application/json-patch+json",
				body: `[{"op":"add","path":"/metadata/labels/x","value":"y"},{"op":"replace","path":"/spec/usages","value":["server auth"]},` +
					`{"op":"add","path":"/status/certificate","value":"bm90IHBlbQ=="},` +
					`{"op":"add","path":"/status/conditions","value":[{"type":"Approved","status":"True","reason":"R","message":"m"}]}]`},
			stored: map[string]string{
				"metadata.labels":                    `{"app":"csr","x":"y"}`,
				"spec.usages":                        `["client auth"]`,
				"status.certificate":                 ``,
				"status.conditions.0.type":           `"Approved"`,
				"status.conditions.0.lastUpdateTime": `*`,
			},
			// The conditions' times too, which the strategy sets: decoded,
			// the write's are zero times, which read as set (null).
			owned:    []string{`"f:x"`, `"f:reason"`, `"f:lastUpdateTime"`},
			notOwned: []string{`"f:spec"`, `"f:certificate"`},
		}),
		lateAt(lateCase{
			name:   "finalize keeps the metadata and finalizers, not the status",
			create: req{method: "POST", path: "/api/v1/namespaces", body: `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"late"}}`},
			write: req{method: "PUT", path: "/api/v1/namespaces/late/finalize?fieldManager=writer",
				body: `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"late","labels":{"x":"y"}},` +
					`"spec":{"finalizers":["kubernetes","example.com/f"]},"status":{"phase":"Terminating"}}`},
			stored: map[string]string{
				"metadata.labels.x": `"y"`,
				"spec.finalizers":   `["kubernetes","example.com/f"]`,
				"status.phase":      `"Active"`,
			},
			owned:    []string{`"f:x"`, `"f:finalizers"`},
			notOwned: []string{`"f:status"`},
		}),
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if r := e.do(c.create); r.code != 201 {
				t.Fatalf("line %d: create: %d %s", c.line, r.code, r.body)
			}
			r := e.do(c.write)
			if r.code != 200 {
				t.Fatalf("line %d: write: %d %s", c.line, r.code, r.body)
			}
			var obj map[string]any
			if err := json.Unmarshal(r.body, &obj); err != nil {
				t.Fatal(err)
			}
			for path, want := range c.stored {
				got := ""
				if v, ok := valueAt(obj, path); ok {
					b, _ := json.Marshal(v)
					got = string(b)
				}
				if got != want && (want != "*" || got == "") {
					t.Errorf("line %d: %s is %s, want %s", c.line, path, got, want)
				}
			}
			fields := managerFields(t, obj, "writer")
			for _, f := range c.owned {
				if !strings.Contains(fields, f) {
					t.Errorf("line %d: the writer's fields %s lack %s", c.line, fields, f)
				}
			}
			for _, f := range c.notOwned {
				if strings.Contains(fields, f) {
					t.Errorf("line %d: the writer's fields %s own %s", c.line, fields, f)
				}
			}
		})
	}
}

// A PUT through /approval or /finalize is a replacement as the main
// resource's: the uid it carries is a precondition of upstream's store.
func TestLateSubresourcePreconditions(t *testing.T) {
	e := newEnv(t)
	const uid = "6b1a3e0c-0000-4000-8000-000000000000"
	for _, r := range []req{
		{method: "POST", path: "/api/v1/namespaces", body: ns("late")},
		{method: "POST", path: "/apis/certificates.k8s.io/v1/certificatesigningrequests", body: `{"metadata":{"name":"late"},` +
			`"spec":{"request":"` + testCSRRequest + `","signerName":"example.com/signer","usages":["client auth"]}}`},
	} {
		if got := e.do(r); got.code != 201 {
			t.Fatalf("create: %d %s", got.code, got.body)
		}
	}
	e.checkCases(t, []errCase{
		at(errCase{name: "finalize", req: req{method: "PUT", path: "/api/v1/namespaces/late/finalize",
			body: `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"late","uid":"` + uid + `"},"spec":{"finalizers":["kubernetes"]}}`},
			code: 409, reason: metav1.StatusReasonConflict, message: "Key: /registry/namespaces/late, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: " + uid}),
		at(errCase{name: "approval", req: req{method: "PUT", path: "/apis/certificates.k8s.io/v1/certificatesigningrequests/late/approval",
			body: `{"apiVersion":"certificates.k8s.io/v1","kind":"CertificateSigningRequest","metadata":{"name":"late","uid":"` + uid + `"},` +
				`"spec":{"request":"` + testCSRRequest + `","signerName":"example.com/signer","usages":["client auth"]}}`},
			code: 409, reason: metav1.StatusReasonConflict, message: "Key: /registry/certificatesigningrequests/late, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: " + uid}),
	})
}

// valueAt is the value at a dotted path of obj (numbers index lists).
func valueAt(obj any, path string) (any, bool) {
	v := obj
	for _, k := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[k]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// managerFields is the fieldsV1 of manager's entry in obj's managedFields
// ("" when it has none).
func managerFields(t *testing.T, obj map[string]any, manager string) string {
	t.Helper()
	md, _ := obj["metadata"].(map[string]any)
	entries, _ := md["managedFields"].([]any)
	for _, e := range entries {
		if e, _ := e.(map[string]any); e["manager"] == manager {
			b, err := json.Marshal(e["fieldsV1"])
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
	}
	return ""
}
