package handler

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BenchmarkProtobufMetadataList is a metadata list of 1,000 objects in
// protobuf, as client-go's metadata client asks for it.
func BenchmarkProtobufMetadataList(b *testing.B) {
	md := `{"creationTimestamp":"2026-11-29T10:59:29Z","labels":{"app":"bench","tier":"x"},"managedFields":[` +
		strings.Repeat(`{"apiVersion":"bench.crdserver.io/v1","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{".":{},"f:payload":{},"f:replicas":{},"f:size":{}}},"manager":"bench","operation":"Update","time":"2026-11-29T10:59:29Z"},`, 3) +
		`{"apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:status":{}},"manager":"m","operation":"Update","subresource":"status","time":"2026-11-29T10:59:29Z"}],"name":"w-1","namespace":"lt","resourceVersion":"61","uid":"9d2cb16c-1076-40fe-810b-dfeb04bd669c"}`
	metas := make([]encodedMeta, 1000)
	for i := range metas {
		metas[i].b = []byte(md)
	}
	for b.Loop() {
		if err := writeProtobufMetadataList(io.Discard, func(int) {}, metav1.ListMeta{ResourceVersion: "9"}, listedMeta{all: metas}, protobufListBuffered); err != nil {
			b.Fatal(err)
		}
	}
}

// TestProtobufMetadataList decodes a metadata list as the metadata client
// does: each item is the object's metadata, read as the Go type reads it,
// whether it was transcoded or (not being as stored) decoded and
// marshalled, with no kind or apiVersion of its own. Buffered or encoded
// twice and streamed, the list is the same bytes, of the length start was
// told.
func TestProtobufMetadataList(t *testing.T) {
	stored := `{"creationTimestamp":"2026-11-29T10:59:29Z","labels":{"a":"b"},"name":"x","namespace":"ns","resourceVersion":"5","uid":"u"}`
	odd := `{"name":"y","creationTimestamp":"2026-11-29T10:59:29\u005a"}`           // an escaped time: the long way
	big := `{"name":"z","annotations":{"a":"` + strings.Repeat("x", 70<<10) + `"}}` // more than a flush
	metas := []encodedMeta{{b: []byte(stored)}, {b: []byte(odd)}, {b: []byte(big)}, {b: []byte(stored)}}
	lm := metav1.ListMeta{ResourceVersion: "9", Continue: "c"}
	var bodies [2][]byte
	for i, bufferUpTo := range []int{protobufListBuffered, 0} {
		var w bytes.Buffer
		n := -1
		if err := writeProtobufMetadataList(&w, func(l int) { n = l }, lm, listedMeta{all: metas}, bufferUpTo); err != nil {
			t.Fatal(err)
		}
		if n != w.Len() {
			t.Fatalf("buffered up to %d: start told %d bytes, wrote %d", bufferUpTo, n, w.Len())
		}
		bodies[i] = w.Bytes()
	}
	if !bytes.Equal(bodies[0], bodies[1]) {
		t.Fatal("the streamed list differs from the buffered one")
	}
	env, err := unwrapProtobuf(bodies[0])
	if err != nil {
		t.Fatal(err)
	}
	if env.APIVersion != "meta.k8s.io/v1" || env.Kind != "PartialObjectMetadataList" {
		t.Fatalf("envelope %s %s", env.APIVersion, env.Kind)
	}
	var got metav1.PartialObjectMetadataList
	if err := got.Unmarshal(env.Raw); err != nil {
		t.Fatal(err)
	}
	want := metav1.PartialObjectMetadataList{ListMeta: lm, Items: make([]metav1.PartialObjectMetadata, len(metas))}
	for i, m := range metas {
		if err := json.Unmarshal(m.b, &want.Items[i].ObjectMeta); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decoded list (-want +got):\n%s", diff)
	}
	for _, bufferUpTo := range []int{protobufListBuffered, 0} {
		started := false
		bad := []encodedMeta{{b: []byte(stored)}, {b: []byte(`{"name":1}`)}}
		if err := writeProtobufMetadataList(io.Discard, func(int) { started = true }, metav1.ListMeta{}, listedMeta{all: bad}, bufferUpTo); err == nil || started {
			t.Errorf("buffered up to %d: metadata the Go type cannot read: err %v, started %v", bufferUpTo, err, started)
		}
	}
}
