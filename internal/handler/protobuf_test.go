package handler

import (
	"encoding/json"
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
		if _, _, err := protobufMetadataList(metav1.ListMeta{ResourceVersion: "9"}, metas); err != nil {
			b.Fatal(err)
		}
	}
}

// TestProtobufMetadataList decodes a metadata list as the metadata client
// does: each item is the object's metadata, read as the Go type reads it,
// whether it was transcoded or (not being as stored) decoded and
// marshalled, with no kind or apiVersion of its own.
func TestProtobufMetadataList(t *testing.T) {
	stored := `{"creationTimestamp":"2026-11-29T10:59:29Z","labels":{"a":"b"},"name":"x","namespace":"ns","resourceVersion":"5","uid":"u"}`
	odd := `{"name":"y","creationTimestamp":"2026-11-29T10:59:29\u005a"}` // an escaped time: the long way
	metas := []encodedMeta{{b: []byte(stored)}, {b: []byte(odd)}}
	head, items, err := protobufMetadataList(metav1.ListMeta{ResourceVersion: "9", Continue: "c"}, metas)
	if err != nil {
		t.Fatal(err)
	}
	env, err := unwrapProtobuf(append(head, items...))
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
	want := metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: "9", Continue: "c"}, Items: make([]metav1.PartialObjectMetadata, 2)}
	for i, m := range []string{stored, odd} {
		if err := json.Unmarshal([]byte(m), &want.Items[i].ObjectMeta); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decoded list (-want +got):\n%s", diff)
	}
	if _, _, err := protobufMetadataList(metav1.ListMeta{}, []encodedMeta{{b: []byte(`{"name":1}`)}}); err == nil {
		t.Error("metadata the Go type cannot read was encoded")
	}
}
