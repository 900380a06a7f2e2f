package handler

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A DeleteOptions body decodes as upstream's meta codecs decode it: its
// kind under any apiVersion or none, JSON or YAML; anything else is
// refused in their words.
func TestDecodeDeleteOptions(t *testing.T) {
	for _, tc := range []struct {
		name, body, contentType string
		policy                  metav1.DeletionPropagation // of a body that decodes
		code                    int32
		message                 string
	}{
		{name: "core kind", body: `{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Orphan"}`, policy: "Orphan"},
		{name: "meta kind", body: `{"kind":"DeleteOptions","apiVersion":"meta.k8s.io/v1","propagationPolicy":"Orphan"}`, policy: "Orphan"},
		{name: "a group's kind", body: `{"kind":"DeleteOptions","apiVersion":"apps/v1","propagationPolicy":"Orphan"}`, policy: "Orphan"},
		{name: "an unknown group's kind", body: `{"kind":"DeleteOptions","apiVersion":"nosuch.example.com/v9","propagationPolicy":"Orphan"}`, policy: "Orphan"},
		{name: "no kind", body: `{"propagationPolicy":"Orphan"}`, policy: "Orphan"},
		{name: "no content type", body: `{"propagationPolicy":"Orphan"}`, contentType: "-", policy: "Orphan"},
		{name: "unknown field", body: `{"nosuch":1,"propagationPolicy":"Orphan"}`, policy: "Orphan"},
		{name: "YAML", body: "kind: DeleteOptions\napiVersion: v1\npropagationPolicy: Orphan\n", contentType: "application/yaml", policy: "Orphan"},
		{name: "another kind", body: `{"kind":"ConfigMap","apiVersion":"v1"}`,
			code: 400, message: `no kind "ConfigMap" is registered for version "v1" in scheme "pkg/runtime/scheme.go:111"`},
		{name: "another meta kind", body: `{"kind":"ListOptions","apiVersion":"meta.k8s.io/v1"}`,
			code: 400, message: "converting (v1.ListOptions) to (v1.DeleteOptions): unknown conversion"},
		{name: "malformed", body: `{"propagationPolicy":`,
			code: 400, message: "couldn't get version/kind; json parse error: unexpected end of JSON input"},
		{name: "a field of another type", body: `{"gracePeriodSeconds":"ten"}`,
			code: 400, message: "json: cannot unmarshal string into Go struct field DeleteOptions.gracePeriodSeconds of type int64"},
		{name: "another media type", body: `{}`, contentType: "text/plain",
			code: 415, message: "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ct := tc.contentType
			switch ct {
			case "":
				ct = "application/json"
			case "-":
				ct = ""
			}
			var opts metav1.DeleteOptions
			err := decodeDeleteOptions([]byte(tc.body), ct, &opts)
			if tc.code == 0 {
				if err != nil || opts.PropagationPolicy == nil || *opts.PropagationPolicy != tc.policy {
					t.Fatalf("decoded %+v, %v; want propagationPolicy %s", opts, err, tc.policy)
				}
				return
			}
			st, ok := err.(apierrors.APIStatus)
			if !ok {
				t.Fatalf("error %v, want a %d", err, tc.code)
			}
			if s := st.Status(); s.Code != tc.code || s.Message != tc.message {
				t.Errorf("got %d %q, want %d %q", s.Code, s.Message, tc.code, tc.message)
			}
		})
	}
}
