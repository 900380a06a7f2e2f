package crd

import (
	"os"
	"path/filepath"
	"testing"

	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// load reads a CRD fixture as the handler holds objects: JSON-decoded,
// integers int64.
func load(t testing.TB, name string) map[string]any {
	t.Helper()
	y, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	j, err := yaml.YAMLToJSON(y)
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := utiljson.Unmarshal(j, &obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

// valid returns a fixture as the handler holds it after PrepareForCreate,
// with the resourceVersion it has once stored (which an update needs).
func valid(t testing.TB, name string) map[string]any {
	t.Helper()
	obj := load(t, name)
	Hooks{}.PrepareForCreate(obj)
	set(obj, "1", "metadata", "resourceVersion")
	return obj
}

// at returns the value at keys (strings index maps, ints index lists).
func at(v any, keys ...any) any {
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

// set stores value at keys, creating maps on the way; a nil value deletes.
func set(obj map[string]any, value any, keys ...any) {
	var parent any = obj
	for i, k := range keys[:len(keys)-1] {
		next := at(parent, k)
		if next == nil {
			next = map[string]any{}
			switch p := parent.(type) {
			case map[string]any:
				p[k.(string)] = next
			case []any:
				p[k.(int)] = next
			}
		}
		_ = i
		parent = next
	}
	last := keys[len(keys)-1]
	switch p := parent.(type) {
	case map[string]any:
		if value == nil {
			delete(p, last.(string))
		} else {
			p[last.(string)] = value
		}
	case []any:
		p[last.(int)] = value
	}
}

// deepCopy copies a JSON-shaped value.
func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = deepCopy(e)
		}
		return l
	}
	return v
}

func copyObj(obj map[string]any) map[string]any { return deepCopy(obj).(map[string]any) }
