package cel

import (
	"context"
	"reflect"
	"testing"

	"github.com/crdserver/crdserver/internal/codec"
)

// TestEncodedManagedFields: an expression reads managedFields kept encoded
// exactly as it reads them decoded — values, sizes, equality, presence,
// costs — whether it reaches them by path, through a variable or by
// comparing whole objects.
func TestEncodedManagedFields(t *testing.T) {
	const stored = `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"labels":{"app":"a"},"managedFields":[{"apiVersion":"example.com/v1","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:replicas":{}}},"manager":"kubectl","operation":"Update","time":"2026-11-28T05:17:55Z"},{"apiVersion":"example.com/v1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:size":{}}},"manager":"ctl","operation":"Apply","time":"2026-11-28T05:18:00Z"}],"name":"w"},"spec":{"replicas":3,"size":"s"}}`
	decoded := func() map[string]any {
		obj, _, err := codec.Decode([]byte(stored), codec.MediaJSON, codec.DecodeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return obj
	}
	encoded := func() map[string]any {
		obj, _, err := codec.Decode([]byte(stored), codec.MediaJSON, codec.DecodeOptions{RawManagedFields: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := obj["metadata"].(map[string]any)["managedFields"].(codec.Raw); !ok {
			t.Fatal("the test object's managedFields were decoded")
		}
		return obj
	}
	exprs := []string{
		"size(object.metadata.managedFields)",
		"object.metadata.managedFields[1].manager",
		"object.metadata.managedFields.map(e, e.operation)",
		"object.metadata.managedFields.exists(e, e.manager == 'ctl' && 'f:size' in e.fieldsV1['f:spec'])",
		"has(object.metadata.managedFields) && !has(object.metadata.generateName)",
		"object.metadata.managedFields == oldObject.metadata.managedFields",
		"object == oldObject",
		"object.metadata",
		"variables.entries[0].fieldsV1['f:metadata']",
		"string(variables.entries[0].time)",
	}
	vars := func(obj, old map[string]any) PolicyVars {
		entries, err := CompilePolicyExpression("object.metadata.managedFields", AnyResult)
		if err != nil {
			t.Fatal(err)
		}
		v := PolicyVars{Object: obj, OldObject: old, Variables: map[string]any{}}
		if v.Variables["entries"], _, err = entries.Eval(context.Background(), v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, expr := range exprs {
		t.Run(expr, func(t *testing.T) {
			e, err := CompilePolicyExpression(expr, AnyResult)
			if err != nil {
				t.Fatal(err)
			}
			want, wantCost, err := e.Eval(context.Background(), vars(decoded(), decoded()))
			if err != nil {
				t.Fatal(err)
			}
			// The old object decoded and the new one encoded, and both
			// encoded.
			for _, old := range []map[string]any{decoded(), encoded()} {
				got, cost, err := e.Eval(context.Background(), vars(encoded(), old))
				if err != nil {
					t.Fatal(err)
				}
				// A value taken whole from the object is the object's
				// own, encoded managedFields included (they enter CEL
				// again through the same adapter): compare it decoded.
				if got = decodeRaws(t, got); !reflect.DeepEqual(got, want) || cost != wantCost {
					t.Errorf("encoded: %v (cost %d), decoded: %v (cost %d)", got, cost, want, wantCost)
				}
			}
		})
	}
}

// TestConditionEncodedManagedFields: a webhook's match condition reads
// encoded managedFields as decoded ones.
func TestConditionEncodedManagedFields(t *testing.T) {
	c, err := CompileCondition("object.metadata.managedFields.exists(e, e.manager == 'ctl') && size(oldObject.metadata.managedFields) == 1")
	if err != nil {
		t.Fatal(err)
	}
	obj, _, err := codec.Decode([]byte(`{"metadata":{"managedFields":[{"manager":"ctl","operation":"Apply"}]}}`), codec.MediaJSON, codec.DecodeOptions{RawManagedFields: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := obj["metadata"].(map[string]any)["managedFields"].(codec.Raw); !ok {
		t.Fatal("the test object's managedFields were decoded")
	}
	ok, _, err := c.Eval(context.Background(), obj, obj, map[string]any{}, nil)
	if err != nil || !ok {
		t.Errorf("condition = %v, %v; want true", ok, err)
	}
}

// decodeRaws returns v with every codec.Raw in it decoded.
func decodeRaws(t *testing.T, v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = decodeRaws(t, e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = decodeRaws(t, e)
		}
		return out
	case codec.Raw:
		d, err := codec.DecodeRaw(v)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	return v
}
