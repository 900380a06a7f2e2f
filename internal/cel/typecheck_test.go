package cel

import (
	"strings"
	"testing"
)

func TestCheckPolicyExpression(t *testing.T) {
	models := map[string]map[string]any{
		"example.v1.Widget": {"type": "object", "properties": map[string]any{
			"metadata": map[string]any{"allOf": []any{map[string]any{"$ref": "#/components/schemas/meta.ObjectMeta"}}},
			"spec": map[string]any{"type": "object", "properties": map[string]any{
				"replicas": map[string]any{"type": "integer"},
				"selector": map[string]any{"$ref": "#/components/schemas/example.v1.Widget"}, // a cycle
			}},
		}},
		"meta.ObjectMeta": {"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}},
	}
	typ, err := ObjectType("example.v1.Widget", models)
	if err != nil || typ == nil {
		t.Fatalf("ObjectType: %v, %v", typ, err)
	}
	tests := []struct{ expr, want string }{
		{"object.spec.replicas > 1", ""},
		{"object.metadata.name == 'x'", ""},
		{"object.spec.replicas > '1'", "found no matching overload for '_>_' applied to '(int, string)'"},
		{"object.spec.maxRetries < 10", "undefined field 'maxRetries'"},
		{"'wants replicas > 1, got ' + object.spec.replicas", "found no matching overload for '_+_' applied to '(string, int)'"},
		{"params.anything == 1", ""},
	}
	for _, tt := range tests {
		got := CheckPolicyExpression(typ, nil, tt.expr)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("CheckPolicyExpression(%q) = %q, want %q", tt.expr, got, tt.want)
		}
	}
}
