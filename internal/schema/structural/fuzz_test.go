package structural

import (
	"encoding/json"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// FuzzCheck: no schema a client can send panics the check.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"type":"array","items":{"x-kubernetes-int-or-string":true}}}}`,
		`{"anyOf":[{"type":"integer"},{"type":"string"}],"allOf":[{"anyOf":[{"type":"integer"},{"type":"string"}]},{"not":{"items":[{}]}}]}`,
		`{"properties":{"metadata":{"properties":{"name":{"default":1}},"additionalProperties":false}},"x-kubernetes-embedded-resource":true}`,
		`{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["a","a"],"items":{"type":"object","properties":{"a":{"type":"object","nullable":true}}}}`,
		`{"$ref":"#","definitions":{"a":{"$ref":"#"}},"dependencies":{"a":["b"],"c":{"type":"string"}},"additionalItems":true}`,
		`{"x-kubernetes-preserve-unknown-fields":false,"x-kubernetes-validations":[{"rule":"\n","reason":"x"}]}`,
		`{"type":"object","properties":{"a":{"type":"object","additionalProperties":true}},"x-kubernetes-validations":[{"rule":"x","fieldPath":".a['b'].c"}]}`,
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, status bool) {
		var s apiextensionsv1.JSONSchemaProps
		if err := json.Unmarshal(data, &s); err != nil {
			return
		}
		errs := Check(&s, root, status, Options{})
		for _, e := range errs {
			_ = e.Error()
		}
		opts := OptionsFor(specWith(&s))
		Check(&s, root, status, opts)
		IsStructural(&s)
	})
}

// TestDeepNesting: a schema far deeper than any real one is checked in
// bounded time and stack.
func TestDeepNesting(t *testing.T) {
	const depth = 5000
	for _, kind := range []string{"properties", "items", "allOf", "not", "additionalProperties"} {
		t.Run(kind, func(t *testing.T) {
			leaf := &apiextensionsv1.JSONSchemaProps{}
			s := leaf
			for i := 0; i < depth; i++ {
				child := s
				s = &apiextensionsv1.JSONSchemaProps{}
				switch kind {
				case "properties":
					s.Properties = map[string]apiextensionsv1.JSONSchemaProps{"a": *child}
				case "items":
					s.Items = &apiextensionsv1.JSONSchemaPropsOrArray{Schema: child}
				case "allOf":
					s.AllOf = []apiextensionsv1.JSONSchemaProps{*child}
				case "not":
					s.Not = child
				case "additionalProperties":
					s.AdditionalProperties = &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: child}
				}
			}
			OptionsFor(specWith(s))
			errs := Check(s, root, true, Options{})
			if len(errs) == 0 {
				t.Errorf("no errors for an untyped schema")
			}
			// Work is bounded by the depth limit, not by the schema's depth:
			// no more errors than the levels checked. (Time is for
			// benchmarks; under -race on a loaded machine it varies 30x.)
			if len(errs) > 3*(maxDepth+1) {
				t.Errorf("%d errors for a schema %d deep: the depth limit did not hold", len(errs), depth)
			}
		})
	}
}

// TestWideSchema: errors on a wide schema come out in the same order on
// every run, whatever the map order.
func TestWideSchema(t *testing.T) {
	props := map[string]apiextensionsv1.JSONSchemaProps{}
	for _, k := range strings.Split("abcdefghijklmnopqrstuvwxyz", "") {
		props[k] = apiextensionsv1.JSONSchemaProps{Type: "array", UniqueItems: true}
	}
	s := &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: props}
	first := Check(s, root, false, Options{}).ToAggregate().Error()
	for i := 0; i < 20; i++ {
		if got := Check(s, root, false, Options{}).ToAggregate().Error(); got != first {
			t.Fatalf("order changed:\n%s\n%s", got, first)
		}
	}
}

// FuzzFieldPath: no JSON path panics the resolver.
func FuzzFieldPath(f *testing.F) {
	for _, s := range []string{".spec.color", ".spec['a.b']", `.spec['x\'y']`, ".spec.any.x.y", "['", ".[", "..", `.spec.labels['\q']`} {
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, path string, arrays bool) {
		s := parse(t, selectableSchema)
		FieldPath(path, s, arrays)
		CheckSelectableFields([]apiextensionsv1.SelectableField{{JSONPath: path}}, s, root, false)
	})
}
