package schema

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// widgetsSchema returns the load generator's Widget schema (a copy of
// internal/loadgen/widgets-crd.yaml) as YAML: patterns, enums, defaults,
// int-or-string, sets and map lists.
func widgetsSchema(t testing.TB) string {
	t.Helper()
	data, err := os.ReadFile("testdata/widgets-crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatal(err)
	}
	out, err := yaml.Marshal(crd.Spec.Versions[0].Schema.OpenAPIV3Schema)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// widgetObject is a ~2 KB Widget with one unknown field and some fields
// left to defaulting.
func widgetObject(t testing.TB) map[string]any {
	t.Helper()
	data, err := os.ReadFile("testdata/widget.json")
	if err != nil {
		t.Fatal(err)
	}
	return decodeObject(t, data)
}

func decodeObject(t testing.TB, data []byte) map[string]any {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatal(err)
	}
	m, _ := convertNumbers(v).(map[string]any)
	return m
}

func TestWidgetPipeline(t *testing.T) {
	s := mustCompile(t, widgetsSchema(t))
	o := widgetObject(t)
	if paths := s.Prune(o); len(paths) != 1 || paths[0] != "spec.unknownField" {
		t.Errorf("pruned %q", paths)
	}
	s.Default(o)
	spec := o["spec"].(map[string]any)
	if spec["size"] != "medium" {
		t.Errorf("size not defaulted: %v", spec["size"])
	}
	if got := spec["config"].(map[string]any)["timeout"]; got != "30s" {
		t.Errorf("config.timeout not defaulted: %v", got)
	}
	if got := spec["endpoints"].([]any)[0].(map[string]any)["protocol"]; got != "TCP" {
		t.Errorf("endpoint protocol not defaulted: %v", got)
	}
	if errs := s.Validate(o); len(errs) != 0 {
		t.Errorf("valid widget: %v", errs)
	}
	spec["replicas"] = int64(5000)
	spec["tags"] = []any{"a", "a"}
	spec["port"] = true
	errs := errStrings(s.Validate(o))
	want := []string{
		`<nil>: Invalid value: "": "spec.port" must validate at least one schema (anyOf)`,
		`spec.port: Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean"`,
		`spec.port: Invalid value: "boolean": spec.port in body must be of type integer: "boolean"`,
		`spec.replicas: Invalid value: 5000: spec.replicas in body should be less than or equal to 1000`,
		`spec.tags[1]: Duplicate value: "a"`,
	}
	if len(errs) != len(want) {
		t.Fatalf("errors\n got %q\nwant %q", errs, want)
	}
	for i := range want {
		if errs[i] != want[i] {
			t.Errorf("error %d\n got %s\nwant %s", i, errs[i], want[i])
		}
	}
}

func BenchmarkPipeline(b *testing.B) {
	s := mustCompile(b, widgetsSchema(b))
	src := widgetObject(b)
	// Copies are made in batches outside the timer: the pipeline works in
	// place.
	batch := make([]map[string]any, 256)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%len(batch) == 0 {
			b.StopTimer()
			for j := range batch {
				batch[j] = runtime.DeepCopyJSON(src)
			}
			b.StartTimer()
		}
		o := batch[i%len(batch)]
		s.Prune(o)
		s.Default(o)
		if errs := s.Validate(o); len(errs) != 0 {
			b.Fatal(errs)
		}
	}
}

func BenchmarkValidateUpdate(b *testing.B) {
	s := mustCompile(b, widgetsSchema(b))
	o := widgetObject(b)
	s.Prune(o)
	s.Default(o)
	old := runtime.DeepCopyJSON(o)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if errs := s.ValidateUpdate(o, old); len(errs) != 0 {
			b.Fatal(errs)
		}
	}
}

// FuzzPipeline runs prune, default, validate and validate-update on
// arbitrary JSON against the Widget schema and a schema with junctors,
// embedded resources and preserve-unknown-fields: nothing may panic, and
// each run must stay fast.
func FuzzPipeline(f *testing.F) {
	seed, _ := os.ReadFile("testdata/widget.json")
	f.Add(seed)
	f.Add([]byte(`{"spec":{"port":true,"tags":["a","a",{"x":1}],"endpoints":[null,1,{"name":"a"},{"name":"a"}]}}`))
	f.Add([]byte(`{"metadata":{"foo":1,"ownerReferences":[1,{"x":2}]},"e":{"metadata":"x","apiVersion":1},"j":{"spec":{"foo":null}}}`))
	f.Add([]byte(`{"n":1e400,"m":-0.0000001,"o":[[[[]]]],"p":{"a":{"b":null}}}`))
	schemas := []*Schema{mustCompile(f, widgetsSchema(f)), mustCompile(f, hostileSchema)}
	f.Fuzz(func(t *testing.T, data []byte) {
		d := json.NewDecoder(bytes.NewReader(data))
		d.UseNumber()
		var v any
		if d.Decode(&v) != nil {
			return
		}
		o, ok := convertNumbers(v).(map[string]any)
		if !ok {
			return
		}
		for _, s := range schemas {
			start := time.Now()
			o1 := runtime.DeepCopyJSON(o)
			old := runtime.DeepCopyJSON(o)
			s.Prune(o1)
			s.Default(o1)
			s.Validate(o1)
			s.ValidateUpdate(o1, old)
			s.ValidateUpdate(o1, nil)
			if d := time.Since(start); d > 2*time.Second {
				t.Fatalf("pipeline took %v on %d bytes", d, len(data))
			}
		}
	})
}

const hostileSchema = `
type: object
properties:
  metadata:
    type: object
    properties:
      name: {type: string, pattern: '^[a-z]+$'}
  n: {type: number, multipleOf: 0.01, maximum: 1e300, minimum: -1e300}
  m: {type: integer, format: int32, multipleOf: 7}
  e:
    type: object
    x-kubernetes-embedded-resource: true
    x-kubernetes-preserve-unknown-fields: true
  j:
    type: object
    x-kubernetes-preserve-unknown-fields: true
    properties:
      spec:
        type: object
        properties:
          foo: {type: string, default: x}
  o:
    type: array
    x-kubernetes-list-type: set
    items:
      type: array
      x-kubernetes-list-type: atomic
      items:
        x-kubernetes-preserve-unknown-fields: true
  p:
    type: object
    minProperties: 1
    additionalProperties:
      type: object
      nullable: true
      default: {}
      additionalProperties:
        type: string
        nullable: true
        format: date-time
  q:
    x-kubernetes-int-or-string: true
    allOf:
    - anyOf: [{type: integer}, {type: string}]
    - anyOf: [{maximum: 3}, {pattern: '^a'}]
  r:
    type: object
    properties:
      a: {type: string}
      b: {type: string}
    oneOf: [{required: [a]}, {required: [b]}]
    not: {required: [a, b]}
`

// TestConcurrentUse shares one compiled schema between goroutines, as the
// handler does; run with -race.
func TestConcurrentUse(t *testing.T) {
	s := mustCompile(t, widgetsSchema(t))
	src := widgetObject(t)
	done := make(chan struct{})
	for g := 0; g < 4; g++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := 0; i < 50; i++ {
				o := runtime.DeepCopyJSON(src)
				s.Prune(o)
				s.Default(o)
				if errs := s.ValidateUpdate(o, src); len(errs) != 0 {
					t.Errorf("errors: %v", errs)
					return
				}
			}
		}()
	}
	for g := 0; g < 4; g++ {
		<-done
	}
}
