package handler

import (
	"bytes"
	"strings"
	"testing"

	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/registry"
	"github.com/crdserver/crdserver/internal/watchcache"
)

// benchWidget is the load generator's object as stored, with rv (a
// resourceVersion member and its comma, or "") in its metadata.
func benchWidget(rv string) string {
	return `{"apiVersion":"bench.crdserver.io/v1","kind":"Widget","metadata":{"annotations":{"bench.crdserver.io/seq":"12"},` +
		`"creationTimestamp":"2026-11-29T10:59:29Z","generation":2,"labels":{"app":"bench"},"managedFields":[` +
		`{"apiVersion":"bench.crdserver.io/v1","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:annotations":{".":{},"f:bench.crdserver.io/seq":{}},"f:labels":{".":{},"f:app":{}}},"f:spec":{".":{},"f:payload":{},"f:replicas":{},"f:size":{}}},"manager":"bench","operation":"Update","time":"2026-11-29T10:59:29Z"}],` +
		`"name":"bench-1","namespace":"lt",` + rv + `"uid":"9d2cb16c-1076-40fe-810b-dfeb04bd669c"},` +
		`"spec":{"payload":"` + strings.Repeat("x", 2000) + `","replicas":3,"size":"L"}}`
}

// BenchmarkItemDecoder is what the watch cache does with each event of
// the load generator's object: its item, field sets shared.
func BenchmarkItemDecoder(b *testing.B) {
	def := &registry.Definition{Group: "bench.crdserver.io", Kind: "Widget", Versions: []registry.Version{{Name: "v1"}}}
	decode := ItemDecoder(func() *registry.Definition { return def })
	stored := []byte(benchWidget(""))
	b.ReportAllocs()
	for b.Loop() {
		it, err := decode("/registry/bench.crdserver.io/widgets/lt/bench-1", stored, 61)
		if err != nil || it.Len() != len(stored)+len(`"resourceVersion":"61",`) {
			b.Fatalf("item of %d bytes, %v", it.Len(), err)
		}
	}
}

// BenchmarkWatchEvent is the work a watcher does for one event of the
// load generator's 3.5 KB object, in each form a watch asks for: in
// protobuf, the first watcher of an event encodes it, the others take
// its encoding.
func BenchmarkWatchEvent(b *testing.B) {
	obj := benchWidget(`"resourceVersion":"61",`)
	x, ok := codec.IndexStored(nil, []byte(obj), "61")
	if !ok {
		b.Fatal("object not indexed")
	}
	it := indexedItem("/registry/bench.crdserver.io/widgets/lt/bench-1", 61, x)
	def := &registry.Definition{Group: "bench.crdserver.io", Kind: "Widget", Versions: []registry.Version{{Name: "v1"}}}
	// Events of as many items as the recent objects keep, and more: the
	// first watcher of each, which encodes it.
	firsts := make([]watchcache.Event, 2*recentEntries)
	for i := range firsts {
		firsts[i] = watchcache.Event{Type: watchcache.Modified, Item: indexedItem(it.Key, 61, x)}
	}
	protobufMeta := codec.MediaType{Type: codec.MediaProtobuf, As: "PartialObjectMetadata", Version: "v1"}
	for _, tc := range []struct {
		name  string
		media codec.MediaType
		evs   []watchcache.Event
	}{
		{"json", codec.MediaType{Type: codec.MediaJSON}, nil},
		{"metadata", codec.MediaType{Type: codec.MediaJSON, As: "PartialObjectMetadata", Version: "v1"}, nil},
		{"metadata-protobuf", protobufMeta, nil},
		{"metadata-protobuf-first", protobufMeta, firsts},
	} {
		b.Run(tc.name, func(b *testing.B) {
			h := &Handler{}
			c := &call{def: def, version: &def.Versions[0], media: tc.media}
			evs := tc.evs
			if evs == nil {
				evs = []watchcache.Event{{Type: watchcache.Modified, Item: it}}
			}
			var buf bytes.Buffer
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				buf.Reset()
				if err := h.appendFrame(c, &buf, evs[i%len(evs)], nil); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkItemDecoderSelectable is BenchmarkItemDecoder for a resource
// with selectable fields (as Secrets, Services, Namespaces, Events and
// Pods have): the item is built as any other, then the fields read.
func BenchmarkItemDecoderSelectable(b *testing.B) {
	def := &registry.Definition{Group: "bench.crdserver.io", Kind: "Widget",
		Versions: []registry.Version{{Name: "v1", SelectableFields: []string{"spec.size", "spec.replicas"}}}}
	decode := ItemDecoder(func() *registry.Definition { return def })
	stored := []byte(benchWidget(""))
	b.ReportAllocs()
	for b.Loop() {
		it, err := decode("/registry/bench.crdserver.io/widgets/lt/bench-1", stored, 61)
		if err != nil || it.Fields["spec.size"] != "L" || it.Fields["spec.replicas"] != "3" {
			b.Fatalf("fields %v, %v", it.Fields, err)
		}
	}
}
