package controllers

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A 4 KB custom resource with managedFields, as the load generator writes.
var benchObject = func() []byte {
	obj := map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{
			"name": "w", "namespace": "ns", "uid": "u-1", "resourceVersion": "7",
			"ownerReferences": []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u-0"}},
			"finalizers":      []any{"foregroundDeletion"},
			"managedFields": []any{map[string]any{"manager": "m", "operation": "Update", "apiVersion": "example.com/v1",
				"fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:spec": map[string]any{"f:data": map[string]any{}}}}},
		},
		"spec": map[string]any{"data": strings.Repeat("x", 4000)},
	}
	b, _ := json.Marshal(obj)
	return b
}()

func TestDecodeGCNode(t *testing.T) {
	r := schema.GroupResource{Group: "example.com", Resource: "widgets"}
	n, err := decodeGCNode(r, benchObject)
	if err != nil {
		t.Fatal(err)
	}
	if n.Name != "w" || n.Namespace != "ns" || n.UID != "u-1" || n.ResourceVersion != "7" || len(n.Owners) != 1 || n.Owners[0].UID != "u-0" || !n.Foreground || n.Deleting {
		t.Errorf("decoded %+v", n)
	}
	// Input that is not compact JSON still decodes, and garbage fails.
	if n, err := decodeGCNode(r, []byte(`{ "metadata": {"name":"x","deletionTimestamp":"2020-01-01T00:00:00Z"} }`)); err != nil || n.Name != "x" || !n.Deleting {
		t.Errorf("spaced JSON: %+v, %v", n, err)
	}
	if _, err := decodeGCNode(r, []byte(`{"metadata":`)); err == nil {
		t.Error("malformed JSON decoded")
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
