package conversion

import (
	"context"
	"strings"
	"testing"

	"github.com/crdserver/crdserver/internal/registry"
)

// renamer stores "name" as "title": v1beta1 has name, v1 (storage) title.
type renamer struct{}

func (renamer) ToStorage(obj map[string]any, version string) (map[string]any, error) {
	obj["title"], obj["apiVersion"] = obj["name"], "g.io/v1"
	delete(obj, "name")
	return obj, nil
}

func (renamer) FromStorage(obj map[string]any, version string) map[string]any {
	obj["name"], obj["apiVersion"] = obj["title"], "g.io/"+version
	delete(obj, "title")
	return obj
}

func TestTypedConvertsBothWays(t *testing.T) {
	def := &registry.Definition{Group: "g.io", Hooks: renamer{}, Versions: []registry.Version{
		{Name: "v1", Served: true, Storage: true}, {Name: "v1beta1", Served: true},
	}}
	c := For(def)
	if _, ok := c.(Typed); !ok {
		t.Fatalf("For = %T, want Typed for a built-in with a VersionConverter", c)
	}
	stored := []byte(`{"apiVersion":"g.io/v1","title":"x"}`)
	out, err := c.Convert(context.Background(), "g.io/v1beta1", []Object{{JSON: stored}})
	if err != nil || !strings.Contains(string(out[0]), `"name":"x"`) || !strings.Contains(string(out[0]), `"g.io/v1beta1"`) {
		t.Fatalf("from storage: %s, %v", out, err)
	}
	back, err := c.Convert(context.Background(), "g.io/v1", []Object{{JSON: out[0]}})
	if err != nil || string(back[0]) != string(stored) {
		t.Fatalf("to storage: %s, %v; want %s", back, err, stored)
	}
	same, _ := c.Convert(context.Background(), "g.io/v1", []Object{{JSON: stored}})
	if &same[0][0] != &stored[0] {
		t.Error("an object already at the target version should come back as it is")
	}
}
