package apply

import (
	"fmt"
	"math/rand"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/crdserver/crdserver/internal/registry"
)

// gadgetSchema has a field of every shape createdFields walks or leaves
// to the comparison.
const gadgetSchema = `{
  "type": "object",
  "properties": {
    "spec": {"type": "object", "properties": {
      "name": {"type": "string"},
      "count": {"type": "integer"},
      "ratio": {"type": "number"},
      "on": {"type": "boolean"},
      "size": {"x-kubernetes-int-or-string": true},
      "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
      "ids": {"type": "array", "items": {"type": "integer"}, "x-kubernetes-list-type": "set"},
      "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name", "protocol"],
        "items": {"type": "object", "required": ["name", "protocol"], "properties": {
          "name": {"type": "string"}, "protocol": {"type": "string"}, "port": {"type": "integer"},
          "hosts": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["id"],
            "items": {"type": "object", "required": ["id"], "properties": {"id": {"type": "integer"}, "host": {"type": "string"}}}}}}},
      "env": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}, "value": {"type": "string"}}}},
      "args": {"type": "array", "items": {"type": "string"}},
      "params": {"type": "object", "additionalProperties": {"type": "string"}},
      "selector": {"type": "object", "x-kubernetes-map-type": "atomic", "additionalProperties": {"type": "string"}},
      "nested": {"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "object", "properties": {"c": {"type": "string"}}}}}}},
      "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
      "template": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}
    }},
    "status": {"type": "object", "properties": {"phase": {"type": "string"}}}
  }
}`

func gadgetManager(t *testing.T, slow bool) *Manager {
	t.Helper()
	def := &registry.Definition{Group: "example.com", Resource: "gadgets", Kind: "Gadget", ListKind: "GadgetList", Scope: registry.Namespaced,
		Versions: []registry.Version{{Name: "v1", Served: true, Storage: true, OpenAPISchema: []byte(gadgetSchema), Subresources: registry.Subresources{Status: true}}}}
	m := &Manager{Types: NewTypes(def), GroupVersion: schema.GroupVersion{Group: "example.com", Version: "v1"}, Kind: "Gadget", slow: slow}
	m.Reset = map[fieldpath.APIVersion]*fieldpath.Set{"example.com/v1": fieldpath.NewSet(fieldpath.MakePathOrDie("status"))}
	return m
}

// randomGadget builds an object with a random part of every field, now
// and then of the wrong type, null, empty, or with repeated keys.
func randomGadget(rng *rand.Rand) map[string]any {
	some := func() bool { return rng.Intn(10) < 6 }
	str := func() any {
		switch rng.Intn(60) {
		case 0:
			return nil
		case 1:
			return int64(rng.Intn(3))
		}
		return fmt.Sprint("s", rng.Intn(4))
	}
	num := func() any {
		switch rng.Intn(60) {
		case 0:
			return "x"
		case 1:
			return float64(rng.Intn(3)) + 0.5
		}
		return int64(rng.Intn(4))
	}
	list := func(n int, item func() any) any {
		if rng.Intn(60) == 0 {
			return map[string]any{"not": "a list"}
		}
		l := make([]any, rng.Intn(n+1))
		for i := range l {
			l[i] = item()
		}
		return l
	}
	obj := func(fields map[string]func() any) any {
		if rng.Intn(60) == 0 {
			return "not an object"
		}
		o := map[string]any{}
		for k, f := range fields {
			if some() {
				o[k] = f()
			}
		}
		return o
	}
	host := func() any { return obj(map[string]func() any{"id": num, "host": str}) }
	port := func() any {
		return obj(map[string]func() any{"name": str, "protocol": str, "port": num, "hosts": func() any { return list(3, host) }})
	}
	spec := obj(map[string]func() any{
		"name": str, "count": num, "ratio": func() any { return float64(rng.Intn(5)) / 2 }, "on": func() any { return rng.Intn(2) == 0 },
		"size":  func() any { return []any{int64(3), "3Gi"}[rng.Intn(2)] },
		"tags":  func() any { return list(4, str) },
		"ids":   func() any { return list(3, num) },
		"ports": func() any { return list(3, port) },
		"env": func() any {
			return list(2, func() any { return obj(map[string]func() any{"name": str, "value": str}) })
		},
		"args":     func() any { return list(3, str) },
		"params":   func() any { return obj(map[string]func() any{"p": str, "q": str}) },
		"selector": func() any { return obj(map[string]func() any{"k": str}) },
		"nested": func() any {
			return obj(map[string]func() any{"a": func() any {
				return obj(map[string]func() any{"b": func() any { return obj(map[string]func() any{"c": str}) }})
			}})
		},
		"extra": func() any {
			return obj(map[string]func() any{"anything": str, "deep": func() any { return obj(map[string]func() any{"x": num}) }})
		},
		"template": func() any {
			return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p"}}
		},
	})
	if m, ok := spec.(map[string]any); ok && rng.Intn(10) == 0 {
		// A field the schema does not know (the server prunes them first).
		m["unknown"] = str()
	}
	md := map[string]any{"name": "g", "namespace": "ns", "uid": "u", "resourceVersion": "1", "generation": int64(1), "creationTimestamp": "2026-01-01T00:00:00Z"}
	if some() {
		md["labels"] = obj(map[string]func() any{"a": str, "b": str})
	}
	if some() {
		md["annotations"] = obj(map[string]func() any{"x/y": str})
	}
	if rng.Intn(4) == 0 {
		md["finalizers"] = list(2, str)
	}
	if rng.Intn(4) == 0 {
		md["ownerReferences"] = list(2, func() any {
			return obj(map[string]func() any{"uid": str, "name": str, "kind": str, "apiVersion": str, "controller": func() any { return true }})
		})
	}
	if rng.Intn(6) == 0 {
		md["managedFields"] = []any{}
	}
	o := map[string]any{"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": md}
	if some() {
		o["spec"] = spec
	}
	if rng.Intn(3) == 0 {
		o["status"] = map[string]any{"phase": "Ready"}
	}
	return o
}

// TestCreateMatchesComparison creates random objects through the fast
// path and through structured-merge-diff's comparison, and wants the same
// entries.
func TestCreateMatchesComparison(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	fast, slow := gadgetManager(t, false), gadgetManager(t, true)
	pt, err := fast.Types.Version("v1")
	if err != nil {
		t.Fatal(err)
	}
	walked := 0
	const n = 3000
	for i := range n {
		o := randomGadget(rng)
		if _, ok := createdFields(pt.Schema, pt.TypeRef, o, fast.Reset["example.com/v1"]); ok {
			walked++
		}
		of, os := runtime.DeepCopyJSON(o), runtime.DeepCopyJSON(o)
		fast.Update(nil, of, "creator")
		slow.Update(nil, os, "creator")
		if f, s := summary(of), summary(os); !reflect.DeepEqual(f, s) {
			t.Fatalf("object %d %v:\nfast path %v\ncomparison %v", i, o, f, s)
		}
	}
	t.Logf("the walk took %d of %d objects", walked, n)
	if walked < n/3 {
		t.Errorf("the walk took %d of %d objects", walked, n)
	}
}
