package handler

import (
	"bytes"
	"reflect"
	"runtime"
	"testing"

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
		a, b := encodedAfter(t, deepCopy(dec)), encodedAfter(t, deepCopy(enc))
		if !bytes.Equal(a, b) {
			t.Errorf("line %d: after the metadata check and a copy\n%s\nencoded, want\n%s", tc.line, b, a)
		}
	}
}

// encodedAfter is obj's stored encoding after normalizeMetadata.
func encodedAfter(t *testing.T, obj map[string]any) []byte {
	t.Helper()
	normalizeMetadata(obj)
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
