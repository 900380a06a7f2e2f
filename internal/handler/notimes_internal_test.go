package handler

import (
	"strings"
	"testing"

	"github.com/crdserver/crdserver/internal/codec"
)

// A write whose only change is its managedFields' times is found so
// against storage's bytes and against a cached copy (with its
// resourceVersion), and any other change is not.
func TestOnlyTimesDiffer(t *testing.T) {
	const stored = `{"apiVersion":"v1","data":{"a":"1"},"kind":"Secret","metadata":{"managedFields":[{"manager":"kubectl","operation":"Apply","time":"2026-01-01T00:00:00Z"}],"name":"s"}}`
	cached := strings.Replace(stored, `"name":"s"`, `"name":"s","resourceVersion":"7"`, 1)
	for _, tc := range []struct {
		name, obj string
		want      bool
	}{
		{"the same", stored, false},
		{"a new time", strings.Replace(stored, "00:00:00Z", "00:00:05Z", 1), true},
		{"a new time and data", strings.NewReplacer("00:00:00Z", "00:00:05Z", `"a":"1"`, `"a":"2"`).Replace(stored), false},
		{"new data", strings.Replace(stored, `"a":"1"`, `"a":"2"`, 1), false},
		{"a new manager", strings.Replace(stored, `"kubectl"`, `"kubectx"`, 1), false},
	} {
		obj, err := decodeStored([]byte(tc.obj))
		if err != nil {
			t.Fatal(err)
		}
		enc, err := encodeForStorage(obj)
		if err != nil {
			t.Fatal(err)
		}
		for _, cur := range []currentObject{
			{json: []byte(cached), rev: 7, stored: []byte(stored)},
			{json: []byte(cached), rev: 7, cached: true},
		} {
			if got := cur.onlyTimesDiffer(enc); got != tc.want {
				t.Errorf("%s (cached %v): onlyTimesDiffer = %v, want %v", tc.name, cur.cached, got, tc.want)
			}
		}
	}
	if (currentObject{stored: []byte(stored)}).onlyTimesDiffer(codec.Stored{JSON: []byte(stored)}) {
		t.Error("an object without noted managedFields differs only in times")
	}
}
