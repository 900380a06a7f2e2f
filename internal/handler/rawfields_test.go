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

// TestCachedManagedFieldsDecodeAlike: an update decodes the object it
// starts from alike whether it reads it from the watch cache, where the
// cache noted its managedFields in Marshal's form and the decode does
// not check them again, or from storage, where it checks them: kept
// encoded when they are in that form, decoded when they are not (as
// another writer of etcd may store them), absent when absent.
func TestCachedManagedFieldsDecodeAlike(t *testing.T) {
	entry := `{"apiVersion":"g/v1","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{".":{},"f:a":{}}},"f:spec":{".":{},"f:x":{},"k:{\"name\":\"c\"}":{}}},"manager":"m","operation":"Update","time":"2026-01-01T00:00:00Z"}`
	cases := []struct {
		line int
		mf   string // metadata.managedFields; "" for none
		raw  bool   // kept encoded
	}{
		{caseLine(), `[` + entry + `]`, true},
		{caseLine(), `[` + entry + `,{"manager":"n","operation":"Apply"}]`, true},
		{caseLine(), "", false},
		{caseLine(), `[]`, false},
		{caseLine(), `null`, false},
		// Written by hand: keys out of order, escapes and numbers
		// Marshal writes otherwise.
		{caseLine(), `[{"manager":"m","apiVersion":"g/v1","fieldsV1":{"f:spec":{"f:x":{}}}}]`, false},
		{caseLine(), `[{"fieldsV1":{"f:spec":{"f:x":{},"f:a":{}}},"manager":"m"}]`, false},
		{caseLine(), `[{"manager":"\u006d"}]`, false},
		{caseLine(), `[{"manager":"<m>"}]`, false},
		{caseLine(), `[{"fieldsV1":{"f:spec":{}},"x":1.0}]`, false},
	}
	for _, tc := range cases {
		md := `"name":"a","namespace":"ns"`
		if tc.mf != "" {
			md = `"managedFields":` + tc.mf + `,` + md
		}
		stored := []byte(`{"apiVersion":"g/v1","kind":"K","metadata":{"labels":{"a":"b"},` + md + `},"spec":{"x":1}}`)
		const rev = 7
		it, err := indexItem("/g/k/ns/a", stored, rev)
		if err != nil {
			t.Fatalf("line %d: %v", tc.line, err)
		}
		if at := it.RawManagedFields(); (at[1] > 0) != tc.raw {
			t.Errorf("line %d: the cache notes managedFields in Marshal's form at %v, want %v", tc.line, at, tc.raw)
		}
		read, err := withRV(stored, rev)
		if err != nil {
			t.Fatal(err)
		}
		want, err := decodeStoredFieldsRaw(read) // from storage
		if err != nil {
			t.Fatalf("line %d: %v", tc.line, err)
		}
		cached := it.JSON()
		if !bytes.Equal(cached, read) {
			t.Fatalf("line %d: cached %s, want %s", tc.line, cached, read)
		}
		got, err := decodeStoredFieldsRawAt(cached, it.RawManagedFields())
		if err != nil {
			t.Fatalf("line %d: %v", tc.line, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("line %d: from the cache %v, want %v", tc.line, got, want)
		}
		if _, ok := metadata(got)["managedFields"].(codec.Raw); ok != tc.raw {
			t.Errorf("line %d: managedFields kept encoded %v, want %v", tc.line, ok, tc.raw)
		}
		a, b := encodedAfter(t, codec.DeepCopy(want)), encodedAfter(t, codec.DeepCopy(got))
		if !bytes.Equal(a, b) {
			t.Errorf("line %d: stored from the cache\n%s\nwant\n%s", tc.line, b, a)
		}
	}
}
