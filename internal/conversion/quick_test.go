package conversion

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/registry"
)

const quickGroup = "example.com"

// junkSchema prunes spec.junk and defaults spec.size to "m".
type junkSchema struct{ registry.Schema }

func (junkSchema) Prune(obj map[string]any) []string {
	if spec, ok := obj["spec"].(map[string]any); ok {
		if _, ok := spec["junk"]; ok {
			delete(spec, "junk")
			return []string{"spec.junk"}
		}
	}
	return nil
}

func (junkSchema) Default(obj map[string]any) {
	if spec, ok := obj["spec"].(map[string]any); ok {
		if _, ok := spec["size"]; !ok {
			spec["size"] = "m"
		}
	}
}

func (junkSchema) Validate(map[string]any) field.ErrorList { return nil }

func thing(name string) []byte {
	return []byte(`{"apiVersion":"` + quickGroup + `/v1","kind":"Thing","metadata":{"annotations":{"n":"1"},"labels":{"a":"b"},"managedFields":[{"manager":"m"}],"name":"` +
		name + `","namespace":"ns","resourceVersion":"7","uid":"u-` + name + `"},"spec":{"junk":1,"x":[1,2.5,"s"]}}`)
}

// converted is thing converted to v2 by rewriting its apiVersion, then
// edited.
func converted(name string, edit func(string) string) []byte {
	c := strings.Replace(string(thing(name)), quickGroup+"/v1", quickGroup+"/v2", 1)
	if edit != nil {
		c = edit(c)
	}
	return []byte(c)
}

// checkSame holds quickResult to result on one converted object: either
// it declines, or both give the same bytes. It reports whether
// quickResult took it.
func checkSame(t *testing.T, orig Object, conv []byte) bool {
	t.Helper()
	quickIn, err1 := Decode(conv)
	slowIn, err2 := Decode(conv)
	if err1 != nil || err2 != nil {
		return false
	}
	to := quickGroup + "/v2"
	quick, _, ok := quickResult(orig, quickIn, to, junkSchema{}, nil)
	w := &Webhook{def: &registry.Definition{Group: quickGroup, Kind: "Thing", ListKind: "ThingList"}}
	toGV := schema.GroupVersion{Group: quickGroup, Version: "v2"}
	in := toGV.WithKind("ThingList")
	slow, err := w.result(orig, slowIn, toGV, junkSchema{}, in, 0, false)
	if !ok {
		return false
	}
	if err != nil {
		t.Fatalf("quickResult took an answer result refuses (%v): %s", err, conv)
	}
	if !bytes.Equal(quick, slow) {
		t.Fatalf("\nquick %s\nslow  %s\nanswer %s", quick, slow, conv)
	}
	return true
}

func TestQuickResult(t *testing.T) {
	stored := Object{JSON: thing("a"), Key: "/a", Revision: 7}
	for _, tc := range []struct {
		name  string
		edit  func(string) string
		quick bool
	}{
		{"plain", nil, true},
		{"pruned and defaulted", func(c string) string { return strings.Replace(c, `"x":`, `"y":true,"x":`, 1) }, true},
		{"metadata besides identity ignored", func(c string) string {
			return strings.Replace(c, `"managedFields":[{"manager":"m"}]`, `"generation":3,"junk":{}`, 1)
		}, true},
		{"indented", func(c string) string { return strings.ReplaceAll(c, `,"`, ",\n  \"") }, true},
		{"label escaped", func(c string) string { return strings.Replace(c, `{"a":"b"}`, `{"a":"\u0062"}`, 1) }, true},
		{"label changed", func(c string) string { return strings.Replace(c, `{"a":"b"}`, `{"a":"c"}`, 1) }, false},
		{"label not a string", func(c string) string { return strings.Replace(c, `{"a":"b"}`, `{"a":1}`, 1) }, false},
		{"labels dropped", func(c string) string { return strings.Replace(c, `"labels":{"a":"b"},`, ``, 1) }, false},
		{"annotation changed", func(c string) string { return strings.Replace(c, `{"n":"1"}`, `{"n":"2"}`, 1) }, false},
		{"name changed", func(c string) string { return strings.Replace(c, `"name":"a"`, `"name":"z"`, 1) }, false},
		{"uid dropped", func(c string) string { return strings.Replace(c, `,"uid":"u-a"`, ``, 1) }, false},
		{"kind changed", func(c string) string { return strings.Replace(c, `"kind":"Thing"`, `"kind":"Other"`, 1) }, false},
		{"kind repeated", func(c string) string { return strings.Replace(c, `"kind":"Thing"`, `"kind":"Other","kind":"Thing"`, 1) }, true},
		{"version not converted", func(c string) string { return strings.Replace(c, "/v2", "/v1", 1) }, false},
		{"no metadata", func(c string) string { return c[:strings.Index(c, `"metadata"`)] + `"spec":{}}` }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := checkSame(t, stored, converted("a", tc.edit)); got != tc.quick {
				t.Errorf("quick path taken: %v, want %v", got, tc.quick)
			}
		})
	}
	// A request's object, not stored, always takes the careful path.
	if checkSame(t, Object{JSON: thing("a")}, converted("a", nil)) {
		t.Error("quick path taken for an object that is not stored")
	}
}

// FuzzQuickResult: whatever a webhook answers for an object, quickResult
// either declines or agrees with result.
func FuzzQuickResult(f *testing.F) {
	f.Add(converted("a", nil))
	f.Add(converted("a", func(c string) string { return strings.Replace(c, `"x":`, `"y":{"z":null},"x":`, 1) }))
	f.Add(converted("a", func(c string) string {
		return strings.Replace(c, `"labels":{"a":"b"}`, `"labels":{"a":"b","a":"c"}`, 1)
	}))
	f.Add(converted("a", func(c string) string { return strings.Replace(c, `"name":"a"`, `"name":"\u0061"`, 1) }))
	f.Add(converted("a", func(c string) string { return strings.Replace(c, `"labels":{"a":"b"}`, `"labels":null`, 1) }))
	stored := Object{JSON: thing("a"), Key: "/a", Revision: 7}
	f.Fuzz(func(t *testing.T, conv []byte) {
		checkSame(t, stored, conv)
	})
}

func Example_quickResult() {
	obj, _ := Decode(converted("a", nil))
	out, _, ok := quickResult(Object{JSON: thing("a"), Key: "/a", Revision: 7}, obj, quickGroup+"/v2", junkSchema{}, nil)
	fmt.Println(ok)
	fmt.Printf("%s\n", out)
	// Output:
	// true
	// {"apiVersion":"example.com/v2","kind":"Thing","metadata":{"annotations":{"n":"1"},"labels":{"a":"b"},"managedFields":[{"manager":"m"}],"name":"a","namespace":"ns","resourceVersion":"7","uid":"u-a"},"spec":{"size":"m","x":[1,2.5,"s"]}}
}
