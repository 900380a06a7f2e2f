package controllers

import (
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"k8s.io/apimachinery/pkg/runtime/schema"

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
