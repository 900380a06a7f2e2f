package handler

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/conversion"
	"github.com/crdserver/crdserver/internal/registry"
)

// configMapHooks serve a ConfigMap-shaped resource in protobuf.
type configMapHooks struct{}

func (configMapHooks) NewProtobuf() registry.ProtoMessage { return &corev1.ConfigMap{} }

var _ registry.Protobuf = configMapHooks{}

// assembledAnswer is how writeStored answered before answers in the
// stored version went out in parts: the object put together and handed
// to the converter (writeConverted), or obj encoded.
func assembledAnswer(h *Handler, c *call, status int, key string, obj map[string]any, enc codec.Stored, rev int64) {
	if c.media.As != "" || c.present != nil {
		setRV(obj, rev)
		h.writeObject(c, status, obj)
		return
	}
	writeConverted(c, status, key, enc.RV.Set(rvString(rev)), rev)
}

// An object just written is answered with the same status, headers and
// bytes whether it goes out in parts (JSON, YAML or indented, in the
// stored version) or put together and converted (another version,
// protobuf, a Table). The converter is asked only for the latter.
func TestWriteStoredAnswers(t *testing.T) {
	var converted int
	convert := conversion.Func(func(_ context.Context, to string, objs []conversion.Object) ([][]byte, error) {
		converted++
		out := make([][]byte, len(objs))
		for i, o := range objs {
			if av, _ := conversion.APIVersion(o.Bytes()); av == to {
				out[i] = o.Bytes()
				continue
			}
			out[i], _ = conversion.SetAPIVersion(o.Bytes(), to)
		}
		return out, nil
	})
	widgets := &registry.Definition{
		Group: "stable.example.com", Resource: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList",
		Scope:     registry.Namespaced,
		Versions:  []registry.Version{{Name: "v1", Served: true, Storage: true}, {Name: "v2", Served: true}},
		Converter: convert,
	}
	configMaps := &registry.Definition{
		Resource: "configmaps", Singular: "configmap", Kind: "ConfigMap", ListKind: "ConfigMapList",
		Scope: registry.Namespaced, Versions: []registry.Version{{Name: "v1", Served: true, Storage: true}},
		Hooks: configMapHooks{},
	}
	h := New(Config{Registry: registry.New([]*registry.Definition{widgets, configMaps}), Clock: func() time.Time { return time.Unix(1e9, 0) }})

	widget := `{"apiVersion":"stable.example.com/v1","kind":"Widget","metadata":{"creationTimestamp":"2026-11-29T10:59:29Z","managedFields":[{"apiVersion":"stable.example.com/v1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:size":{}}},"manager":"m","operation":"Update","time":"2026-11-29T10:59:29Z"}],"name":"w","namespace":"ns","resourceVersion":"7","uid":"u"},"spec":{"size":3}}`
	configMap := `{"apiVersion":"v1","data":{"a":"b"},"kind":"ConfigMap","metadata":{"name":"c","namespace":"ns","uid":"u"}}`
	json := codec.MediaType{Type: codec.MediaJSON}
	for _, tc := range []struct {
		name    string
		def     *registry.Definition
		version int
		obj     string
		media   codec.MediaType
		asks    bool   // the answer asks the converter (widgets only)
		ctype   string // and is of this Content-Type
		kind    string // and kind
	}{
		{name: "json", def: widgets, obj: widget, media: json, ctype: codec.MediaJSON, kind: "Widget"},
		{name: "yaml", def: widgets, obj: widget, media: codec.MediaType{Type: codec.MediaYAML}, ctype: codec.MediaYAML, kind: "Widget"},
		{name: "pretty", def: widgets, obj: widget, media: codec.MediaType{Type: codec.MediaJSON, Pretty: true}, ctype: codec.MediaJSON, kind: "Widget"},
		{name: "converted", def: widgets, version: 1, obj: widget, media: json, asks: true, ctype: codec.MediaJSON, kind: "Widget"},
		{name: "converted yaml", def: widgets, version: 1, obj: widget, media: codec.MediaType{Type: codec.MediaYAML}, asks: true, ctype: codec.MediaYAML, kind: "Widget"},
		{name: "table", def: widgets, obj: widget, media: codec.MediaType{Type: codec.MediaJSON, As: "Table", Group: "meta.k8s.io", Version: "v1"}, ctype: codec.MediaJSON, kind: "Table"},
		{name: "protobuf", def: configMaps, obj: configMap, media: codec.MediaType{Type: codec.MediaProtobuf}, ctype: codec.MediaProtobuf, kind: "ConfigMap"},
		{name: "json built-in", def: configMaps, obj: configMap, media: json, ctype: codec.MediaJSON, kind: "ConfigMap"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var answers [2]*httptest.ResponseRecorder
			for i, write := range []func(*Handler, *call, int, string, map[string]any, codec.Stored, int64){assembledAnswer, (*Handler).writeStored} {
				obj, err := decodeStored([]byte(tc.obj))
				if err != nil {
					t.Fatal(err)
				}
				enc, err := encodeForStorage(obj)
				if err != nil || !enc.HasRV {
					t.Fatalf("encoding: %v (found the splice: %v)", err, enc.HasRV)
				}
				w := httptest.NewRecorder()
				c := &call{w: w, r: httptest.NewRequest(http.MethodPut, "/", nil), def: tc.def, version: &tc.def.Versions[tc.version], media: tc.media}
				converted = 0
				write(h, c, http.StatusOK, "/registry/k/ns/w", obj, enc, 12)
				answers[i] = w
				if i == 1 && (converted > 0) != tc.asks {
					t.Errorf("the converter was asked %d times, want asked: %v", converted, tc.asks)
				}
			}
			want, got := answers[0], answers[1]
			if got.Code != want.Code || !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) {
				t.Fatalf("answer %d %q\nwant %d %q", got.Code, got.Body.Bytes(), want.Code, want.Body.Bytes())
			}
			for _, h := range []string{"Content-Type", "Content-Length"} {
				if got.Header().Get(h) != want.Header().Get(h) {
					t.Errorf("%s: %q, want %q", h, got.Header().Get(h), want.Header().Get(h))
				}
			}
			if want.Code != http.StatusOK || want.Header().Get("Content-Type") != tc.ctype || !bytes.Contains(want.Body.Bytes(), []byte(tc.kind)) || !bytes.Contains(want.Body.Bytes(), []byte("12")) {
				t.Errorf("answer %d %s %q: not a %s at revision 12", want.Code, want.Header().Get("Content-Type"), want.Body.Bytes(), tc.kind)
			}
		})
	}
}

// BenchmarkWriteStored is the answer to an update of the load
// generator's Widget, in JSON, as written and as it was put together
// before (assembled).
func BenchmarkWriteStored(b *testing.B) {
	def := &registry.Definition{
		Group: "bench.crdserver.io", Resource: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList",
		Scope: registry.Namespaced, Versions: []registry.Version{{Name: "v1", Served: true, Storage: true}},
	}
	h := New(Config{Registry: registry.New([]*registry.Definition{def})})
	obj, err := decodeStored([]byte(benchWidget("")))
	if err != nil {
		b.Fatal(err)
	}
	enc, err := encodeForStorage(obj)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name  string
		write func(*Handler, *call, int, string, map[string]any, codec.Stored, int64)
	}{{"parts", (*Handler).writeStored}, {"assembled", assembledAnswer}} {
		b.Run(bc.name, func(b *testing.B) {
			w := &discardWriter{h: http.Header{}}
			c := &call{w: w, r: httptest.NewRequest(http.MethodPut, "/", nil), def: def, version: &def.Versions[0], media: codec.MediaType{Type: codec.MediaJSON}}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				bc.write(h, c, http.StatusOK, "/registry/bench.crdserver.io/widgets/lt/bench-1", obj, enc, 123456)
			}
		})
	}
}
