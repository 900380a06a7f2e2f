package handler

import (
	"reflect"
	"strings"
	"testing"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestJSONEqual checks jsonEqual agrees with reflect.DeepEqual on decoded
// JSON values.
func TestJSONEqual(t *testing.T) {
	values := []any{
		nil, "a", "b", int64(1), int64(2), float64(1), 1.5, true, false,
		map[string]any(nil), map[string]any{}, map[string]any{"a": int64(1)},
		map[string]any{"a": float64(1)}, map[string]any{"a": nil}, map[string]any{"b": nil},
		map[string]any{"a": []any{"x", map[string]any{"y": true}}},
		map[string]any{"a": []any{"x", map[string]any{"y": false}}},
		[]any(nil), []any{}, []any{nil}, []any{"a", int64(1)}, []any{int64(1), "a"},
		[]string{"a"},
	}
	for i, a := range values {
		for j, b := range values {
			if got, want := jsonEqual(a, b), reflect.DeepEqual(a, b); got != want {
				t.Errorf("jsonEqual(values[%d], values[%d]) = %v, want %v", i, j, got, want)
			}
		}
	}
}

// Metadata validation skips apimachinery's label and annotation checks
// only where they would find nothing: the errors are the same either way.
func TestMetaToValidateAgrees(t *testing.T) {
	big := strings.Repeat("x", apivalidation.TotalAnnotationSizeLimitB)
	for _, tc := range []struct {
		name        string
		labels      any
		annotations any
	}{
		{"none", nil, nil},
		{"valid", map[string]any{"app": "x", "app.kubernetes.io/name": "web", "empty": ""}, map[string]any{"crdserver.dev/seq": "12", "Example.com/Note": "free text"}},
		{"bad label key", map[string]any{"-app": "x"}, nil},
		{"bad label prefix", map[string]any{"Example.com/app": "x"}, nil},
		{"bad label value", map[string]any{"app": "x y"}, nil},
		{"long label value", map[string]any{"app": strings.Repeat("v", 64)}, nil},
		{"label value not a string", map[string]any{"app": int64(1)}, nil},
		{"labels not a map", "app=x", nil},
		{"bad annotation key", nil, map[string]any{"a/b/c": "x"}},
		{"non-ASCII annotation key", nil, map[string]any{"é": "x"}},
		{"annotations too large", nil, map[string]any{"a": big}},
		{"annotation value not a string", nil, map[string]any{"a": true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md := map[string]any{"name": "n", "namespace": "ns"}
			if tc.labels != nil {
				md["labels"] = tc.labels
			}
			if tc.annotations != nil {
				md["annotations"] = tc.annotations
			}
			obj := map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": md}
			path := field.NewPath("metadata")
			got := apivalidation.ValidateObjectMetaAccessor(metaToValidate(obj, nil), true, nameIsDNSSubdomain, path)
			want := apivalidation.ValidateObjectMetaAccessor(metaOf(obj), true, apivalidation.NameIsDNSSubdomain, path)
			if got.ToAggregate() == nil && want.ToAggregate() == nil {
				return
			}
			if got.ToAggregate() == nil || want.ToAggregate() == nil || got.ToAggregate().Error() != want.ToAggregate().Error() {
				t.Errorf("errors %v, apimachinery's %v", got, want)
			}
		})
	}
}

func TestNameIsDNSSubdomainAgrees(t *testing.T) {
	for _, name := range []string{"", "a", "my-widget", "My-widget", "a.b", "a..b", "-a", "a-", strings.Repeat("a", 253), strings.Repeat("a", 254), "a_b"} {
		for _, prefix := range []bool{false, true} {
			got, want := nameIsDNSSubdomain(name, prefix), apivalidation.NameIsDNSSubdomain(name, prefix)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("nameIsDNSSubdomain(%q, %v) = %q, apimachinery's %q", name, prefix, got, want)
			}
		}
	}
}
