package handler

import (
	"bytes"
	"reflect"
	"testing"
	"unsafe"

	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/registry"
	"github.com/crdserver/crdserver/internal/watchcache"
)

// TestItemDecoder checks that the watch cache items ItemDecoder makes
// (spliced when the stored value has the form json.Marshal writes) equal
// the ones decoding and encoding make, for stored and unexpected forms.
func TestItemDecoder(t *testing.T) {
	canonical := func(s string) []byte {
		obj, err := decodeStored([]byte(s))
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		b, err := encodeStored(obj)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	decode := ItemDecoder(func() *registry.Definition { return nil })
	var decoded [][2]*watchcache.Item
	for _, value := range [][]byte{
		canonical(`{"apiVersion":"g/v1","kind":"K","metadata":{"name":"a","namespace":"ns","labels":{"x":"y","resourceVersion":"z"},"uid":"u"},"spec":{"metadata":{"name":"b"}}}`),
		canonical(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"é\u003c","labels":{}}}`),
		canonical(`{"metadata":{"labels":{"a":1,"b":"c"},"name":"n"}}`),
		canonical(`{"metadata":{"resourceVersion":"3","name":"n"}}`),
		canonical(`{"metadata":{"name":1,"namespace":null}}`),
		canonical(`{"apiVersion":"g/v1","kind":"K","metadata":{"managedFields":[{"apiVersion":"g/v1","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{".":{},"f:x":{}}},"f:spec":{"f:a":{}}},"manager":"m","operation":"Update","time":"2026-01-02T03:04:05Z"}],"name":"a","namespace":"ns","labels":{"x":"y"}},"spec":{"a":1}}`),
		canonical(`{"metadata":{"annotations":{"managedFields":"x"},"managedFields":[{"fieldsV1":{"f:spec":{"f:a":{},"f:b":{},"f:c":{},"f:d":{},"f:e":{},"f:f":{},"f:g":{}}},"manager":"m"}],"name":"a"}}`),
		// Not as json.Marshal writes them: decoded and encoded again.
		[]byte(`{"kind":"K", "metadata": {"name":"a","labels":{"x":"y"}}}`),
		[]byte(`{"metadata":{"uid":"u","name":"a"}}`),
		[]byte(`{"metadata":{"name":"a"},"metadata":{"name":"b"}}`),
		[]byte(`{"kind":"K"}`),
		[]byte(`{"metadata":null}`),
		// Field sets long enough to be shared between items.
		[]byte(`{"apiVersion":"v1","metadata":{"name":"a","managedFields":[{"manager":"m","fieldsV1":{"f:spec":{"f:a":{},"f:b":{},"f:c":{},"f:d":{},"f:e":{},"f:f":{}}}},` +
			`{"manager":"n","fieldsV1":{"f:status":{"f:a":{},"f:b":{},"f:c":{},"f:d":{},"f:e":{},"f:f":{}}}}],"resourceVersion":"1"},"spec":{}}`),
	} {
		got, err := decode("/k", value, 42)
		if err != nil {
			t.Fatalf("%s: %v", value, err)
		}
		want, err := decodeItem("/k", value, 42)
		if err != nil {
			t.Fatalf("%s: %v", value, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("ItemDecoder(%s)\n got  %+v\n      %s\n want %+v\n      %s", value, got, got.JSON(), want, want.JSON())
		}
		decoded = append(decoded, [2]*watchcache.Item{got, want})
	}
	// The buffer the decoder reuses changed none of the items it made.
	for _, d := range decoded {
		if !bytes.Equal(d[0].JSON(), d[1].JSON()) {
			t.Errorf("after later decodes, an item holds %s, want %s", d[0].JSON(), d[1].JSON())
		}
	}
	if _, err := decode("/k", []byte(`[]`), 1); err == nil {
		t.Error("ItemDecoder accepted a value that is not an object")
	}
}

func TestWithRV(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"metadata":{"name":"a"}}`, `{"metadata":{"name":"a","resourceVersion":"7"}}`},
		{`{"metadata": {"name":"a"}}`, `{"metadata":{"name":"a","resourceVersion":"7"}}`},
		{`{"kind":"K"}`, `{"kind":"K","metadata":{"resourceVersion":"7"}}`},
	} {
		got, err := withRV([]byte(c.in), 7)
		if err != nil || !bytes.Equal(got, []byte(c.want)) {
			t.Errorf("withRV(%s) = %s, %v; want %s", c.in, got, err, c.want)
		}
	}
	if _, err := withRV([]byte(`nope`), 7); err == nil {
		t.Error("withRV accepted a value that is not JSON")
	}
}

// TestDecodeStoredMatchesUtilJSON checks decodeStored yields what
// k8s.io/apimachinery/pkg/util/json did before it used the body decoder.
func TestDecodeStoredMatchesUtilJSON(t *testing.T) {
	inputs := []string{
		`{}`,
		`{"a":1,"b":-0,"c":1.0,"d":1e3,"e":9223372036854775807,"f":9223372036854775808,"g":-9223372036854775809,"h":0.1}`,
		`{"s":"\u003c\u0026\u2028\ud83d\ude00 \" \\ \/ \b\f\n\r\t","u":"héllo"}`,
		`{"n":null,"t":true,"f":false,"l":[1,"x",null,[],{}],"m":{"k":{"k":[{"x":2.5}]}}}`,
		` { "ws" : [ 1 , 2 ] } `,
		"{\"bad\":\"a\xffb\\ud800\"}",
	}
	for _, in := range inputs {
		got, err := decodeStored([]byte(in))
		if err != nil {
			t.Errorf("decodeStored(%s): %v", in, err)
			continue
		}
		var want map[string]any
		if err := utiljson.Unmarshal([]byte(in), &want); err != nil {
			t.Fatalf("utiljson.Unmarshal(%s): %v", in, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("decodeStored(%s) = %#v, want %#v", in, got, want)
		}
	}
	for _, in := range []string{``, `[]`, `null`, `{"a":}`, `{} x`} {
		if _, err := decodeStored([]byte(in)); err == nil {
			t.Errorf("decodeStored(%q): no error", in)
		}
	}
}

// An item's name and namespace share its key's bytes when the key ends in
// them, and are kept as they are otherwise.
func TestInKey(t *testing.T) {
	for _, tc := range []struct {
		key, s string
		end    int
		shared bool
	}{
		{"/registry/g/widgets/ns/a", "a", 0, true},
		{"/registry/g/widgets/ns/a", "ns", 2, true},
		{"/registry/g/widgets/ns/ba", "a", 0, false},
		{"/registry/g/namespaces/ns", "ns", 0, true},
		{"/registry/g/widgets/ns/a", "other", 2, false},
		{"a", "a", 0, false},
		{"/x", "", 0, false},
	} {
		got := inKey(tc.key, tc.s, tc.end)
		if got != tc.s {
			t.Errorf("inKey(%q, %q, %d) = %q", tc.key, tc.s, tc.end, got)
		}
		shared := got != "" && unsafe.StringData(got) != unsafe.StringData(tc.s)
		if shared != tc.shared {
			t.Errorf("inKey(%q, %q, %d) shares the key: %v, want %v", tc.key, tc.s, tc.end, shared, tc.shared)
		}
	}
}

// TestEncodeStoredAndAdmitted checks that what admission webhooks receive
// of an update's object is byte for byte its encoding, whatever its
// resourceVersion, and that its storage encoding is encodeStored's.
func TestEncodeStoredAndAdmitted(t *testing.T) {
	for _, tc := range []struct {
		doc string
		// spliced: admission receives the storage encoding with the
		// resourceVersion spliced in; else it encodes the object itself.
		spliced bool
	}{
		{`{"apiVersion":"g/v1","kind":"K","metadata":{"name":"a","resourceVersion":"17","uid":"u"},"spec":{"x":1}}`, true},
		{`{"apiVersion":"g/v1","kind":"K","metadata":{"name":"a","resourceVersion":""}}`, true},
		{`{"apiVersion":"g/v1","kind":"K","metadata":{"name":"a"}}`, true},
		{`{"apiVersion":"g/v1","kind":"K","metadata":{"name":"a","resourceVersion":"<\"&>"}}`, true},
		{`{"apiVersion":"g/v1","kind":"K","metadata":{"zz":"after","resourceVersion":"1","aa":"before"}}`, true},
		{`{"apiVersion":"g/v1","kind":"K"}`, true},
		{`{"apiVersion":"g/v1","kind":"K","metadata":{"name":"a","resourceVersion":null}}`, false},
		{`{"apiVersion":"g/v1","kind":"K","metadata":{"resourceVersion":5}}`, false},
	} {
		doc := tc.doc
		obj, err := decodeStored([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		want, err := codec.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		wantStored, err := encodeStored(obj)
		if err != nil {
			t.Fatal(err)
		}
		stored, admit, err := encodeStoredAndAdmitted(obj)
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		var admitted []byte // nil: admission encodes obj itself
		if admit != nil {
			admitted = admit()
		}
		if !bytes.Equal(stored.JSON, wantStored) {
			t.Errorf("%s: stored\n%s, want\n%s", doc, stored.JSON, wantStored)
		}
		if (admitted != nil) != tc.spliced {
			t.Errorf("%s: admitted %s, want spliced %v", doc, admitted, tc.spliced)
		}
		if admitted != nil && !bytes.Equal(admitted, want) {
			t.Errorf("%s: admitted\n%s, want\n%s", doc, admitted, want)
		}
		if again, _ := codec.Marshal(obj); !bytes.Equal(again, want) {
			t.Errorf("%s: encoding changed the object: %s", doc, again)
		}
	}
}
