package codec

import (
	"reflect"
	"slices"
	"testing"
	"unsafe"
)

// TestDeepCopy checks that a copy equals its object and shares no map or
// list with it, so that a write changing the copy (a retried update
// starts from the body it decoded) leaves the object as it was.
func TestDeepCopy(t *testing.T) {
	raw := Raw(`[{"manager":"m"}]`)
	newObj := func() map[string]any {
		return map[string]any{
			"metadata": map[string]any{"name": "a", "labels": map[string]any{"x": "1"}, "managedFields": raw},
			"spec": map[string]any{
				"list":   []any{map[string]any{"k": int64(1)}, []any{"n"}, "s", nil},
				"num":    1.5,
				"on":     true,
				"none":   nil,
				"empty":  map[string]any{},
				"nolist": []any{},
			},
		}
	}
	obj := newObj()
	cp := DeepCopy(obj)
	if !reflect.DeepEqual(cp, obj) {
		t.Fatalf("copy %v, want %v", cp, obj)
	}
	// Change every map and list of the copy.
	md := cp["metadata"].(map[string]any)
	md["name"] = "b"
	md["labels"].(map[string]any)["x"] = "2"
	spec := cp["spec"].(map[string]any)
	list := spec["list"].([]any)
	list[0].(map[string]any)["k"] = int64(2)
	list[1].([]any)[0] = "m"
	list[2] = "t"
	spec["empty"].(map[string]any)["y"] = "z"
	spec["added"] = true
	if !reflect.DeepEqual(obj, newObj()) {
		t.Errorf("changing the copy changed the object: %v", obj)
	}
	if got := md["managedFields"].(Raw); unsafe.SliceData(got) != unsafe.SliceData(raw) {
		t.Error("the copy's encoded managedFields are not the object's")
	}
	if DeepCopy(nil) != nil {
		t.Error("a copy of nil is not nil")
	}
}

func TestStrings(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want []string
	}{
		{nil, []string{}},
		{"a", []string{}},
		{[]any{"a", 1, "b", nil}, []string{"a", "b"}},
	} {
		if got := Strings(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("Strings(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
