package handler

import (
	"bytes"
	"reflect"
	"runtime"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdserver/crdserver/internal/apply"
	"github.com/crdserver/crdserver/internal/codec"
)

// TestEncodedManagedFieldsReadAlike: an object whose managedFields are
// kept encoded reads, in everything an update does with it, as the same
// object decoded: metadata validation's entries, the metadata check that
// drops malformed fields, copies, and the stored bytes.
func TestEncodedManagedFieldsReadAlike(t *testing.T) {
	cases := []struct {
		line int
		mf   string
	}{
		{caseLine(), `[{"apiVersion":"g/v1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{".":{},"f:x":{}}},"manager":"m","operation":"Update","time":"2026-01-01T00:00:00Z"}]`},
		{caseLine(), `[{"apiVersion":"g/v1","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{"f:a":{}}},"k:{\"name\":\"x\"}":{}},"manager":"kubectl","operation":"Apply","subresource":"status"},{"manager":"n","operation":"Update"}]`},
		{caseLine(), `[{"manager":null,"operation":null,"time":null}]`},
		{caseLine(), `[{"manager":1}]`},        // not a string: malformed
		{caseLine(), `[{"time":"yesterday"}]`}, // not a time: malformed
		{caseLine(), `[{"time":3}]`},           // not a time: malformed
		{caseLine(), `[1,"x"]`},                // entries that are not objects
		{caseLine(), `[{"manager":"a","operation":"Apply"},{},1,{"subresource":"s"},[{"manager":"b"}]]`}, // nothing carried from one entry to the next
		{caseLine(), `[{"manager":"a"},{"manager":"b","time":"x"}]`},                                     // a malformed second entry
		{caseLine(), `[{"manager":"\u003cm\u003e","x":[1,2.5,true]}]`},
	}
	for _, tc := range cases {
		stored := []byte(`{"apiVersion":"g/v1","kind":"K","metadata":{"managedFields":` + tc.mf + `,"name":"a"},"spec":{"x":1}}`)
		dec, err := decodeStored(stored)
		if err != nil {
			t.Fatalf("line %d: %v", tc.line, err)
		}
		enc, err := decodeStoredFieldsRaw(stored)
		if err != nil {
			t.Fatalf("line %d: %v", tc.line, err)
		}
		if _, ok := metadata(enc)["managedFields"].(codec.Raw); !ok {
			t.Fatalf("line %d: managedFields not kept encoded", tc.line)
		}
		if got, want := metaOf(enc).GetManagedFields(), metaOf(dec).GetManagedFields(); !reflect.DeepEqual(got, want) {
			t.Errorf("line %d: entries %+v, want %+v", tc.line, got, want)
		}
		if got, want := isManagedFields(metadata(enc)["managedFields"]), isManagedFields(metadata(dec)["managedFields"]); got != want {
			t.Errorf("line %d: isManagedFields %v, want %v", tc.line, got, want)
		}
		a, b := encodedAfter(t, codec.DeepCopy(dec)), encodedAfter(t, codec.DeepCopy(enc))
		if !bytes.Equal(a, b) {
			t.Errorf("line %d: after the metadata check and a copy\n%s\nencoded, want\n%s", tc.line, b, a)
		}
	}
}

// encodedAfter is obj's stored encoding after normalizeMetadata.
func encodedAfter(t *testing.T, obj map[string]any) []byte {
	t.Helper()
	normalizeMetadata(obj, nil)
	b, err := encodeStored(obj)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// caseLine returns the caller's line, so that a failing case names itself.
func caseLine() int {
	_, _, l, _ := runtime.Caller(1)
	return l
}

// TestWrittenManagedFieldsReadAlike: entries recordFields describes
// (apply.Written) read, in the metadata check and validation, as the
// same entries walked; once the object no longer holds them (admission
// replaced them), the object's own are read.
func TestWrittenManagedFieldsReadAlike(t *testing.T) {
	raw := codec.Raw(`[{"apiVersion":"g/v1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:x":{}}},"manager":"m","operation":"Update","time":"2026-01-01T00:00:00Z"}]`)
	w := &apply.Written{Raw: raw, Entries: []metav1.ManagedFieldsEntry{{Manager: "m", Operation: "Update", APIVersion: "g/v1", FieldsType: "FieldsV1"}}}
	obj := map[string]any{"metadata": map[string]any{"name": "a", "managedFields": raw}}
	if got, want := metaOfWritten(obj, w).GetManagedFields(), metaOf(obj).GetManagedFields(); !reflect.DeepEqual(got, want) {
		t.Errorf("described entries %+v, want %+v", got, want)
	}
	normalizeMetadata(obj, w)
	if !w.Holds(metadata(obj)["managedFields"]) {
		t.Errorf("the metadata check dropped well-typed entries")
	}
	// Replaced by admission: a list, then another encoding.
	replaced := []any{map[string]any{"manager": "webhook", "operation": "Update"}}
	metadata(obj)["managedFields"] = replaced
	if got := metaOfWritten(obj, w).GetManagedFields(); len(got) != 1 || got[0].Manager != "webhook" {
		t.Errorf("entries %+v, want the webhook's", got)
	}
	metadata(obj)["managedFields"] = codec.Raw(append([]byte(nil), `[{"manager":1}]`...))
	normalizeMetadata(obj, w)
	if _, ok := metadata(obj)["managedFields"]; ok {
		t.Errorf("malformed entries admission set were kept")
	}
}
