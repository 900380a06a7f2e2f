package controllers

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/watchcache"
)

// A 4 KB custom resource with managedFields, as the load generator writes.
var benchObject = func() []byte {
	obj := map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{
			"name": "w", "namespace": "ns", "uid": "u-1", "resourceVersion": "7",
			"ownerReferences": []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u-0"}},
			"finalizers":      []any{"foregroundDeletion"},
			"managedFields": []any{
				managedEntry("creator", map[string]any{"f:spec": fields(20), "f:metadata": map[string]any{"f:labels": fields(5)}}),
				managedEntry("updater", map[string]any{"f:spec": fields(5), "f:metadata": map[string]any{"f:annotations": fields(3)}}),
			},
		},
		"spec": map[string]any{"data": strings.Repeat("x", 4000)},
	}
	b, _ := json.Marshal(obj)
	return b
}()

func managedEntry(manager string, fieldsV1 map[string]any) map[string]any {
	return map[string]any{"manager": manager, "operation": "Update", "apiVersion": "example.com/v1",
		"time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": fieldsV1}
}

func fields(n int) map[string]any {
	m := map[string]any{}
	for i := range n {
		m["f:field"+strconv.Itoa(i)] = map[string]any{}
	}
	return m
}

func TestDecodeGCNode(t *testing.T) {
	r := schema.GroupResource{Group: "example.com", Resource: "widgets"}
	n, err := decodeGCNode(r, benchObject)
	if err != nil {
		t.Fatal(err)
	}
	if n.Name != "w" || n.Namespace != "ns" || n.UID != "u-1" || n.Revision != 7 || len(n.Owners) != 1 || n.Owners[0].UID != "u-0" || !n.Foreground || n.Deleting {
		t.Errorf("decoded %+v", n)
	}
	// The node keeps nothing of the bytes: the watch reuses its buffer.
	buf := slices.Clone(benchObject)
	n2, err := decodeGCNode(r, buf)
	if err != nil {
		t.Fatal(err)
	}
	for i := range buf {
		buf[i] = 'x'
	}
	if !reflect.DeepEqual(n2, n) {
		t.Errorf("after its bytes were overwritten, the node is %+v, want %+v", n2, n)
	}
	// Input that is not compact JSON still decodes, and garbage fails.
	if n, err := decodeGCNode(r, []byte(`{ "metadata": {"name":"x","deletionTimestamp":"2020-01-01T00:00:00Z"} }`)); err != nil || n.Name != "x" || !n.Deleting {
		t.Errorf("spaced JSON: %+v, %v", n, err)
	}
	if _, err := decodeGCNode(r, []byte(`{"metadata":`)); err == nil {
		t.Error("malformed JSON decoded")
	}
	for _, tc := range []struct {
		data             string
		name             string
		deleting, orphan bool
		err              bool
	}{
		{data: `{"metadata":{"name":"a","deletionTimestamp":null,"finalizers":null}}`, name: "a"},
		{data: `{"metadata":{"name":"a","name":"b","finalizers":["orphan"]}}`, name: "b", orphan: true},
		{data: `{"metadata":{"name":null,"deletionTimestamp":"2020-01-01T00:00:00Z"}}`, deleting: true},
		{data: `{"metadata":null}`},
		{data: `{"kind":"X"}`},
		{data: `{"metadata":{"name":5}}`, err: true},
		{data: `{"metadata":{"ownerReferences":{}}}`, err: true},
		{data: `{"metadata":{"deletionTimestamp":"yesterday"}}`, err: true},
		{data: `{"metadata":{"name":"a","resourceVersion":"x1"}}`, err: true},
	} {
		n, err := decodeGCNode(r, []byte(tc.data))
		if (err != nil) != tc.err {
			t.Errorf("%s: err = %v, want error %v", tc.data, err, tc.err)
			continue
		}
		if err == nil && (n.Name != tc.name || n.Deleting != tc.deleting || n.Orphan != tc.orphan) {
			t.Errorf("%s: decoded %+v", tc.data, n)
		}
	}
}

// TestScanGCNode wants the one-scan reading of compact objects to read
// what encoding/json reads, and to give way to it on anything else.
func TestScanGCNode(t *testing.T) {
	r := schema.GroupResource{Group: "example.com", Resource: "widgets"}
	for _, tc := range []struct {
		data    string
		scanned bool // read by the scan, not left to encoding/json
	}{
		{string(benchObject), true},
		{`{"apiVersion":"v1","metadata":{"finalizers":["orphan"],"managedFields":[{"fieldsV1":{"f:metadata":{}},"manager":"m"}],"name":"a","namespace":"n","resourceVersion":"3","uid":"u"},"spec":{"x":[1,{"y":null}]}}`, true},
		{`{"metadata":{"name":"a","name":"b","deletionTimestamp":"2020-01-01T00:00:00Z"},"spec":"s"}`, true},
		{`{"metadata":{"name":null,"ownerReferences":[{"apiVersion":"v1","kind":"K","name":"o","uid":"u0","controller":true}]}}`, true},
		{`{"kind":"X"}`, false},
		{`{"metadata":null}`, false},
		{`{"metadata":{"name":"a","managedFields":[{"manager": "m"}]}}`, false},
		{`{"metadata":{"name":5}}`, false},
		{`{"spec":{},"metadata":{"name":"a"},"status":{}}`, true},
		{`{"metadata":{"name":"a","resourceVersion":"x1"}}`, false},
	} {
		want, werr := unmarshalGCNode(r, []byte(tc.data))
		got, ok := scanGCNode(r, []byte(tc.data))
		if ok != tc.scanned {
			t.Errorf("%.80s: scanned %v, want %v", tc.data, ok, tc.scanned)
		}
		if ok && (werr != nil || !reflect.DeepEqual(got, want)) {
			t.Errorf("%.80s: scanned %+v; encoding/json reads %+v, %v", tc.data, got, want, werr)
		}
	}
}

// IndexedItem is indexedItem for the package's external tests.
var IndexedItem = indexedItem

// indexedItem is the item of data, a stored object with its revision
// rev, as the server's watch cache decoder builds it
// (handler.ItemDecoder): the field sets of its managedFields shared with
// other items, where its metadata is noted. ok is false when data is not
// in the stored form.
func indexedItem(key string, rev int64, data []byte) (*watchcache.Item, bool) {
	x, ok := codec.IndexStored(nil, data, strconv.FormatInt(rev, 10))
	if !ok {
		return nil, false
	}
	it := &watchcache.Item{Key: key, Revision: rev, MetaStart: int32(x.MetaStart), MetaEnd: int32(x.MetaEnd)}
	it.CopyJSON(x.JSON, x.Shared, x.Meta.Labels)
	return it, true
}

// markedItem is the item of data, an object in any form, as the server's
// decoder builds it from an object it encodes anew: where metadata is and
// its field sets are found in data as it is.
func markedItem(data []byte) *watchcache.Item {
	it := &watchcache.Item{}
	var shared [][2]int
	if start, end, ok := codec.MetadataSpan(data); ok {
		it.MetaStart, it.MetaEnd = int32(start), int32(end)
		shared = codec.FieldsV1Spans(data, start, end)
	}
	it.SetJSON(slices.Clone(data), shared, nil)
	return it
}

// longFields is a field set long enough for an item to share.
const longFields = `{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{".":{},"f:replicas":{},"f:template":{}}}`

// TestItemGCNode wants the garbage collector's reading of a cache item,
// which skips the field sets the item shares, to build the node
// encoding/json builds from the whole object, for items as the server's
// decoder builds them of stored objects and of objects in other forms.
func TestItemGCNode(t *testing.T) {
	r := schema.GroupResource{Group: "example.com", Resource: "widgets"}
	mf := func(fieldsV1 string) string {
		return `"managedFields":[{"apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":` + fieldsV1 + `,"manager":"m","operation":"Update"},` +
			`{"fieldsV1":` + longFields + `,"manager":"n\u00e9","time":"2026-01-01T00:00:00Z"}]`
	}
	for _, data := range []string{
		string(benchObject),
		`{"apiVersion":"v1","kind":"K","metadata":{"finalizers":["orphan"],` + mf(longFields) + `,"name":"a","namespace":"n","uid":"u"},"spec":{"x":[1,{"y":null}]}}`,
		`{"apiVersion":"v1","metadata":{"deletionTimestamp":"2020-01-01T00:00:00Z","finalizers":["foregroundDeletion"],` + mf(`"`+strings.Repeat("s", 80)+`"`) + `,"name":"a\"b\u003c","ownerReferences":[{"apiVersion":"v1","blockOwnerDeletion":true,"controller":true,"kind":"K","name":"o","uid":"u0"}],"uid":"u\n1"}}`,
		`{"metadata":{` + mf(`null`) + `,"name":null,"namespace":null,"ownerReferences":null,"uid":"u"}}`,
		`{"metadata":{"deletionTimestamp":null,"finalizers":null,` + mf(`{}`) + `,"name":"a"}}`,
		`{"metadata":{"name":"a","namespace":"n","uid":"u"}}`,
		`{"metadata":{"managedFields":null,"name":"a"}}`,
		`{"metadata":{"managedFields":[],"name":"a"}}`,
		`{"metadata":{}}`,
		`{"kind":"X","metadata":{` + mf(longFields) + `,"name":"a"},"z":1}`,
		// Not in the stored form: members out of order, repeated,
		// spaced, or not of their type.
		`{"spec":{},"metadata":{"uid":"u",` + mf(longFields) + `,"name":"a","namespace":"n"},"kind":"K"}`,
		`{"metadata":{"name":"a","name":"b",` + mf(longFields) + `,"finalizers":["orphan"],"finalizers":["x"]}}`,
		`{"metadata": {"name": "a", ` + mf(longFields) + `}}`,
		`{"metadata":{` + mf(longFields) + `,"name":5}}`,
		`{"metadata":{"ownerReferences":{},` + mf(longFields) + `}}`,
		`{"metadata":{"deletionTimestamp":"yesterday",` + mf(longFields) + `}}`,
		`{"metadata":{` + mf(longFields) + `,"resourceVersion":"x1"}}`,
		`{"metadata":null}`,
		`{"kind":"X"}`,
	} {
		want, werr := unmarshalGCNode(r, []byte(data))
		var items []*watchcache.Item
		if it, ok := indexedItem("/k", 7, []byte(data)); ok {
			items = append(items, it)
			// Indexed with its revision: the reference reads that too.
			want, werr = unmarshalGCNode(r, it.JSON())
		} else {
			items = append(items, markedItem([]byte(data)))
		}
		var buf []byte
		for _, it := range items {
			got, err := itemGCNode(r, it, &buf)
			if (err != nil) != (werr != nil) || err == nil && !reflect.DeepEqual(got, want) {
				t.Errorf("%.100s: item read as %+v, %v; encoding/json reads %+v, %v", data, got, err, want, werr)
			}
			if werr == nil && bytes.Contains(buf, []byte(`"f:replicas"`)) {
				t.Errorf("%.100s: the shared field sets were put together", data)
			}
		}
	}
}

// FuzzItemGCNode builds items of JSON objects as the server's decoder
// does (of the object as it is, when it is in the stored form, and encoded
// anew), and wants the garbage collector to read from each the node
// encoding/json reads from its JSON.
func FuzzItemGCNode(f *testing.F) {
	f.Add(benchObject)
	f.Add([]byte(`{"metadata":{"finalizers":["orphan"],"managedFields":[{"fieldsV1":` + longFields + `,"manager":"m"}],"name":"a\u0041","ownerReferences":[{"apiVersion":"v1","kind":"K","name":"o","uid":"u0"}],"uid":"u"}}`))
	f.Add([]byte(`{"metadata":{"deletionTimestamp":"2020-01-01T00:00:00Z","managedFields":[{"fieldsV1":"` + strings.Repeat("s", 70) + `"}],"name":null}}`))
	f.Add([]byte(`{"spec":1,"metadata":{"name":"a","name":"b"}}`))
	r := schema.GroupResource{Resource: "widgets"}
	f.Fuzz(func(t *testing.T, data []byte) {
		var items []*watchcache.Item
		if it, ok := indexedItem("/k", 7, data); ok {
			items = append(items, it)
		}
		var obj map[string]any
		if json.Unmarshal(data, &obj) == nil && obj != nil {
			if b, err := json.Marshal(obj); err == nil {
				items = append(items, markedItem(b))
			}
		}
		var buf []byte
		for _, it := range items {
			got, err := itemGCNode(r, it, &buf)
			// The whole object read as before items were read in
			// parts.
			was, werr := decodeGCNode(r, it.JSON())
			if (err != nil) != (werr != nil) || err == nil && !reflect.DeepEqual(got, was) {
				t.Fatalf("%q: item read as %+v, %v; the object as %+v, %v", it.JSON(), got, err, was, werr)
			}
			if foldedKeys(it.JSON()) {
				continue
			}
			want, werr := unmarshalGCNode(r, it.JSON())
			if (err != nil) != (werr != nil) || err == nil && !reflect.DeepEqual(got, want) {
				t.Fatalf("%q: item read as %+v, %v; encoding/json reads %+v, %v", it.JSON(), got, err, want, werr)
			}
		}
	})
}

// foldedKeys reports whether a member of data's metadata is named as one
// a node is read from in other case ("UID"): encoding/json reads those as
// that member, the scans of stored objects (which the server writes with
// its names as they are) do not.
func foldedKeys(data []byte) bool {
	folded := false
	codec.EachMemberAt(data, []string{"metadata"}, func(name string, _ []byte) bool {
		for _, m := range []string{"namespace", "name", "uid", "resourceVersion", "ownerReferences", "finalizers", "deletionTimestamp"} {
			folded = folded || name != m && strings.EqualFold(name, m)
		}
		return true
	})
	codec.EachMember(data, func(name string, _ []byte) bool {
		folded = folded || name != "metadata" && strings.EqualFold(name, "metadata")
		return true
	})
	return folded
}

// BenchmarkItemGCNode is the garbage collector's reading of each event, of
// an item as the server's decoder builds it: the object put together
// (json, as it was) or its metadata without the shared field sets (meta);
// of benchObject, and of an object as the load generator's fields
// workload writes it (widget: managedFields a third of it, no owners).
func BenchmarkItemGCNode(b *testing.B) {
	r := schema.GroupResource{Group: "example.com", Resource: "widgets"}
	widget, err := os.ReadFile("../codec/testdata/managedfields-widget.json")
	if err != nil {
		b.Fatal(err)
	}
	for _, obj := range []struct {
		name string
		data []byte
	}{{"owned", benchObject}, {"widget", widget}} {
		it, ok := indexedItem("/k", 7, obj.data)
		if !ok {
			b.Fatal("not in the stored form")
		}
		var buf []byte
		for _, bc := range []struct {
			name string
			read func() (*gcNode, error)
		}{
			{"json", func() (*gcNode, error) { return decodeGCNode(r, it.JSONInto(&buf)) }},
			{"meta", func() (*gcNode, error) { return itemGCNode(r, it, &buf) }},
		} {
			b.Run(obj.name+"/"+bc.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := bc.read(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkDecodeGCNode(b *testing.B) {
	r := schema.GroupResource{Group: "example.com", Resource: "widgets"}
	b.SetBytes(int64(len(benchObject)))
	for b.Loop() {
		if _, err := decodeGCNode(r, benchObject); err != nil {
			b.Fatal(err)
		}
	}
}

// TestGCNodeUsesItemStrings: a node observed from a cache item holds the
// item's name and namespace (which share its key's bytes) and a uid in its
// own bytes rather than copies, unless they differ, and gives its revision
// back as text; the absent cache keeps copies of what it is given.
func TestGCNodeUsesItemStrings(t *testing.T) {
	r := schema.GroupResource{Group: "example.com", Resource: "widgets"}
	key := "/registry/example.com/widgets/ns/w"
	for _, tc := range []struct {
		name, namespace string
		shared          bool
	}{
		{"w", "ns", true},
		{"other", "elsewhere", false},
	} {
		data := []byte(`{"metadata":{"name":"` + tc.name + `","namespace":"` + tc.namespace + `","resourceVersion":"7","uid":"u-1"}}`)
		it := &watchcache.Item{Key: key, Revision: 7, Name: key[len(key)-1:], Namespace: key[len(key)-4 : len(key)-2]}
		it.SetJSON(data, nil, nil)
		n, err := decodeGCNode(r, data)
		if err != nil {
			t.Fatal(err)
		}
		n.useItemStrings(it)
		if n.Name != tc.name || n.Namespace != tc.namespace || n.UID != "u-1" {
			t.Errorf("%s/%s: node names %s/%s, uid %s", tc.namespace, tc.name, n.Namespace, n.Name, n.UID)
		}
		sameName := unsafe.StringData(n.Name) == unsafe.StringData(it.Name)
		sameNS := unsafe.StringData(n.Namespace) == unsafe.StringData(it.Namespace)
		if sameName != tc.shared || sameNS != tc.shared {
			t.Errorf("%s/%s: name shared %v, namespace shared %v, want %v", tc.namespace, tc.name, sameName, sameNS, tc.shared)
		}
		if p := unsafe.Pointer(unsafe.StringData(string(n.UID))); uintptr(p) < uintptr(unsafe.Pointer(&data[0])) || uintptr(p) >= uintptr(unsafe.Pointer(&data[0]))+uintptr(len(data)) {
			t.Errorf("%s/%s: the uid is a copy, not the item's bytes", tc.namespace, tc.name)
		}
		if rv := n.object().ResourceVersion; rv != "7" {
			t.Errorf("object's resourceVersion %q, want 7", rv)
		}
		var c absentCache
		c.add(n.UID, n.Namespace)
		for k := range c.cur {
			if unsafe.StringData(string(k.uid)) == unsafe.StringData(string(n.UID)) || unsafe.StringData(k.namespace) == unsafe.StringData(n.Namespace) {
				t.Errorf("%s/%s: the absent cache keeps the node's strings, not copies", tc.namespace, tc.name)
			}
		}
		if !c.has(absentKey{"u-1", tc.namespace}) {
			t.Errorf("%s/%s: not absent once added", tc.namespace, tc.name)
		}
	}
}
