package handler

import (
	"encoding/json"
	"reflect"
	"testing"
	"unicode/utf8"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"

	"github.com/crdserver/crdserver/internal/codec"
)

// mergePatchCases are objects and merge patches of every shape the merge
// meets: nulls at every depth, objects merging into objects, scalars and
// arrays, and objects or arrays replacing one another.
var mergePatchCases = [][2]string{
	{`{"a":1,"b":{"c":2,"d":[1,2]}}`, `{"a":null,"b":{"c":null,"e":{"f":null,"g":1}}}`},
	{`{"a":{"b":1}}`, `{"a":[1,null,{"x":null,"y":2}]}`},
	{`{"a":[1,2]}`, `{"a":{"b":null,"c":{"d":null},"e":[null,{"f":null}]}}`},
	{`{"a":null}`, `{"a":{"b":null,"c":1}}`},
	{`{"a":"s"}`, `{"a":{"b":{"c":null}}}`},
	{`{"a":{"b":{"c":1,"d":2}}}`, `{"a":{"b":{"c":3}}}`},
	{`{"metadata":{"name":"w","labels":{"x":"1"}},"spec":{"replicas":1,"ports":[{"name":"a"}]}}`, `{"metadata":{"labels":{"x":null,"y":"2"},"annotations":{"n":"3"}},"spec":{"replicas":2.5,"ports":[]}}`},
	{`{}`, `{}`},
	{`{"a":1}`, `{"a":true,"b":"x","c":1e30,"d":-0.5}`},
}

// TestMergePatchAgrees merges decoded objects as the merge patch library
// merges their JSON.
func TestMergePatchAgrees(t *testing.T) {
	for _, c := range mergePatchCases {
		checkMergePatch(t, []byte(c[0]), []byte(c[1]))
	}
}

func FuzzMergePatch(f *testing.F) {
	for _, c := range mergePatchCases {
		f.Add([]byte(c[0]), []byte(c[1]))
	}
	f.Fuzz(checkMergePatch)
}

// checkMergePatch compares mergePatch with jsonpatch.MergePatch for a
// document and a patch that are JSON objects; the document is taken as
// the server holds objects, decoded from what it encodes.
func checkMergePatch(t *testing.T, docJSON, patchJSON []byte) {
	t.Helper()
	if !utf8.Valid(docJSON) || !utf8.Valid(patchJSON) {
		return // the library replaces invalid UTF-8: not what is compared here
	}
	doc, _, err := codec.Decode(docJSON, codec.MediaJSON, codec.DecodeOptions{})
	if err != nil || doc == nil {
		return
	}
	patch, _, err := codec.Decode(patchJSON, codec.MediaJSON, codec.DecodeOptions{})
	if err != nil || patch == nil {
		return
	}
	canon, err := codec.Marshal(doc)
	if err != nil {
		return
	}
	if doc, _, err = codec.Decode(canon, codec.MediaJSON, codec.DecodeOptions{}); err != nil {
		t.Fatalf("decoding %s: %v", canon, err)
	}
	enc, err := json.Marshal(doc)
	if err != nil {
		return
	}
	out, err := jsonpatch.MergePatch(enc, patchJSON)
	if err != nil {
		return
	}
	want, _, err := codec.Decode(out, codec.MediaJSON, codec.DecodeOptions{})
	if err != nil {
		return
	}
	patchCopy := codec.DeepCopy(patch)
	got := mergePatch(doc, patch)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("merging %s into %s:\n got %v\nwant %v (%s)", patchJSON, canon, got, want, out)
	}
	if !reflect.DeepEqual(patch, patchCopy) {
		t.Errorf("merging %s changed the patch to %v", patchJSON, patch)
	}
}
