package handler

import (
	"reflect"
	"testing"
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
