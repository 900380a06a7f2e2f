package conversion

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/registry"
	crschema "github.com/crdserver/crdserver/internal/schema"
)

// widgetSchema is a structural schema like the load generator's Widget's:
// typed spec fields, one defaulted, a list of objects and a string map.
const widgetSchema = `{"type":"object","properties":{"spec":{"type":"object","properties":{
"displayName":{"type":"string"},"size":{"type":"string","default":"medium"},"replicas":{"type":"integer"},
"paused":{"type":"boolean"},"owner":{"type":"string"},"image":{"type":"string"},"weight":{"type":"number"},
"tags":{"type":"array","items":{"type":"string"}},
"selector":{"type":"object","additionalProperties":{"type":"string"}},
"endpoints":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"url":{"type":"string"},"port":{"type":"integer"},"protocol":{"type":"string"}}}}}}}}`

// widget is a stored Widget of about 2KB, padded in an annotation as the
// load generator pads, with its conversion to v2 by a webhook that only
// rewrites apiVersion.
func widget(tb testing.TB, i int) (Object, []byte) {
	tb.Helper()
	name := "bench-" + strconv.Itoa(i)
	obj := map[string]any{
		"apiVersion": "bench.crdserver.io/v1", "kind": "Widget",
		"metadata": map[string]any{
			"name": name, "namespace": "ns", "uid": "uid-" + strconv.Itoa(i), "resourceVersion": strconv.Itoa(i + 1),
			"creationTimestamp": "2026-11-28T12:00:00Z", "generation": int64(1),
			"labels":      map[string]any{"bench.crdserver.io/run": "r1", "app.kubernetes.io/name": "widget", "app.kubernetes.io/instance": name, "tier": "data"},
			"annotations": map[string]any{"bench.crdserver.io/seq": "0", "bench.crdserver.io/padding": strings.Repeat("x", 900)},
		},
		"spec": map[string]any{
			"displayName": "Widget number " + strconv.Itoa(i), "size": "large", "replicas": int64(i % 100), "paused": false,
			"owner": "team-1", "image": "registry.example.com/widgets/widget:v1.3", "weight": 12.5,
			"tags":      []any{"bench", "widget", "tag-1"},
			"selector":  map[string]any{"app": "widget", "name": name},
			"endpoints": []any{map[string]any{"name": "ep-0", "url": "https://ep-0." + name + ".example.com/api", "port": int64(8080), "protocol": "TCP"}},
		},
	}
	js, err := codec.Marshal(obj)
	if err != nil {
		tb.Fatal(err)
	}
	conv := strings.Replace(string(js), "bench.crdserver.io/v1", "bench.crdserver.io/v2", 1)
	return Object{JSON: js, Key: "/widgets/ns/" + name, Revision: int64(i + 1)}, []byte(conv)
}

func compileWidgetSchema(tb testing.TB) *crschema.Schema {
	tb.Helper()
	var props apiextensionsv1.JSONSchemaProps
	if err := json.Unmarshal([]byte(widgetSchema), &props); err != nil {
		tb.Fatal(err)
	}
	s, err := crschema.Compile(&props)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// BenchmarkRawResultWidget is the server's work per object of a list's
// webhook answer, once the review is read: checking a 2KB Widget
// converted by rewriting its apiVersion and taking it as it came.
func BenchmarkRawResultWidget(b *testing.B) {
	s := compileWidgetSchema(b)
	orig, conv := widget(b, 7)
	b.SetBytes(int64(len(conv)))
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := rawResult(orig, conv, "bench.crdserver.io/v2", s); !ok {
			b.Fatal("rawResult declined")
		}
	}
}

// widgetReview is a webhook's answer converting 500 stored Widgets by
// rewriting their apiVersion, with the originals, as a list's review has.
func widgetReview(tb testing.TB) ([]Object, []int, []byte) {
	objs := make([]Object, 500)
	idx := make([]int, len(objs))
	answer := []byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{"uid":"u1","result":{"status":"Success"},"convertedObjects":[`)
	for i := range objs {
		var conv []byte
		objs[i], conv = widget(tb, i)
		idx[i] = i
		if i > 0 {
			answer = append(answer, ',')
		}
		answer = append(answer, conv...)
	}
	return objs, idx, append(answer, "]}}"...)
}

// BenchmarkWidgetReview is the server's work on one review's answer of
// 500 Widgets once it has arrived: reading the review, checking each
// object and taking it as it came.
func BenchmarkWidgetReview(b *testing.B) {
	s := compileWidgetSchema(b)
	objs, idx, answer := widgetReview(b)
	w := &Webhook{review: "v1", def: &registry.Definition{Group: "bench.crdserver.io", Kind: "Widget", ListKind: "WidgetList"}}
	to := "bench.crdserver.io/v2"
	toGV := schema.GroupVersion{Group: "bench.crdserver.io", Version: "v2"}
	b.SetBytes(int64(len(answer)))
	b.ReportAllocs()
	for b.Loop() {
		raws, ok := w.quickReview("u1", answer, len(idx), s, nil)
		if !ok {
			b.Fatal("quickReview declined")
		}
		out, shared, ok, err := w.resultsFromRaw(raws, to, objs, idx, toGV, s, toGV.WithKind("WidgetList"), false)
		if !ok || !shared || err != nil || len(out) != len(idx) {
			b.Fatal(ok, shared, err)
		}
	}
}

// widgetDef is the load generator's Widget: v1 stored, v2 served with the
// same schema (or another, when v2Schema differs), its schemas last
// changed at revision schemaRev.
func widgetDef(s *crschema.Schema, v2Schema string, schemaRev int64) *registry.Definition {
	return &registry.Definition{
		Group: "bench.crdserver.io", Kind: "Widget", ListKind: "WidgetList", SchemaRevision: schemaRev,
		Versions: []registry.Version{
			{Name: "v1", Storage: true, Schema: s, OpenAPISchema: []byte(widgetSchema)},
			{Name: "v2", Schema: s, OpenAPISchema: []byte(v2Schema)},
		},
	}
}

// BenchmarkWidgetReviewStored is BenchmarkWidgetReview for originals
// written since the schema last changed, to a version of the same schema:
// each answer is compared with its original instead of walked.
func BenchmarkWidgetReviewStored(b *testing.B) {
	s := compileWidgetSchema(b)
	objs, idx, answer := widgetReview(b)
	w := &Webhook{review: "v1", def: widgetDef(s, widgetSchema, 0)}
	to := "bench.crdserver.io/v2"
	toGV := schema.GroupVersion{Group: "bench.crdserver.io", Version: "v2"}
	b.SetBytes(int64(len(answer)))
	b.ReportAllocs()
	for b.Loop() {
		raws, ok := w.quickReview("u1", answer, len(idx), s, w.storedMatcher(to, objs))
		if !ok {
			b.Fatal("quickReview declined")
		}
		out, shared, ok, err := w.resultsFromRaw(raws, to, objs, idx, toGV, s, toGV.WithKind("WidgetList"), false)
		if !ok || !shared || err != nil || len(out) != len(idx) {
			b.Fatal(ok, shared, err)
		}
	}
}
