package apply

import (
	"fmt"
	"math/rand"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"testing"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/crdserver/crdserver/internal/registry"
)

// caseName annotates a table case's name with the line it is on.
func caseName(name string) string {
	_, file, line, _ := runtime.Caller(1)
	return name + " (" + filepath.Base(file) + ":" + strconv.Itoa(line) + ")"
}

// scalarLive is the object the comparisons start from.
const scalarLive = `{"apiVersion":"example.com/v1","kind":"Widget",
	  "metadata":{"name":"w","namespace":"ns","uid":"u1","creationTimestamp":"2026-01-02T03:04:05Z","generation":3,"resourceVersion":"7",
	    "labels":{"a":"b"},"annotations":{"seq":"1","pad":"xx"}},
	  "spec":{"color":"red","replicas":1,"tags":["x"],"ports":[{"name":"http","port":80}],"selector":{"k":"v"},"extra":{"n":1.5}},
	  "status":{"phase":"Ready"}}`

// TestScalarChangesMatchesComparison wants the fast comparison of an
// update either to report what structured-merge-diff's comparison
// reports, or to leave the change to it; and to take the changes it is
// for (scalar fields changing value) itself.
func TestScalarChangesMatchesComparison(t *testing.T) {
	tests := []struct {
		name   string
		change func(o map[string]any)
		fast   bool // the fast comparison decides
	}{
		{caseName("nothing"), func(map[string]any) {}, true},
		{caseName("annotation"), func(o map[string]any) { md(o)["annotations"].(map[string]any)["seq"] = "2" }, true},
		{caseName("integer"), func(o map[string]any) { specOf(o)["replicas"] = int64(2) }, true},
		{caseName("string and status"), func(o map[string]any) {
			specOf(o)["color"] = "blue"
			o["status"].(map[string]any)["phase"] = "Gone"
		}, true},
		{caseName("resourceVersion"), func(o map[string]any) { md(o)["resourceVersion"] = "8" }, true},
		{caseName("integer to float"), func(o map[string]any) { specOf(o)["replicas"] = 1.0 }, false},
		{caseName("string to integer"), func(o map[string]any) { specOf(o)["color"] = int64(1) }, false},
		{caseName("to null"), func(o map[string]any) { specOf(o)["color"] = nil }, false},
		{caseName("field added"), func(o map[string]any) { md(o)["annotations"].(map[string]any)["new"] = "x" }, true},
		{caseName("field removed"), func(o map[string]any) { delete(specOf(o), "color") }, true},
		{caseName("field renamed"), func(o map[string]any) {
			delete(md(o)["annotations"].(map[string]any), "pad")
			md(o)["annotations"].(map[string]any)["padding"] = "xx"
		}, true},
		{caseName("server's metadata left out, value changed"), func(o map[string]any) {
			delete(md(o), "uid")
			delete(md(o), "creationTimestamp")
			delete(md(o), "generation")
			md(o)["annotations"].(map[string]any)["seq"] = "2"
		}, true},
		{caseName("undeclared field added"), func(o map[string]any) { specOf(o)["colour"] = "red" }, false},
		{caseName("integer turned string"), func(o map[string]any) { specOf(o)["replicas"] = "many" }, false},
		{caseName("map added"), func(o map[string]any) { o["status"].(map[string]any)["more"] = map[string]any{"a": "b"} }, false},
		{caseName("map removed"), func(o map[string]any) { delete(md(o), "labels") }, false},
		{caseName("list removed"), func(o map[string]any) { delete(specOf(o), "tags") }, false},
		{caseName("null added"), func(o map[string]any) { md(o)["annotations"].(map[string]any)["new"] = nil }, false},
		{caseName("set changed"), func(o map[string]any) { specOf(o)["tags"] = []any{"y"} }, false},
		{caseName("list-map item changed"), func(o map[string]any) {
			specOf(o)["ports"].([]any)[0].(map[string]any)["port"] = int64(81)
		}, false},
		{caseName("atomic map changed"), func(o map[string]any) { specOf(o)["selector"].(map[string]any)["k"] = "w" }, false},
		{caseName("atomic map unchanged, scalar changed"), func(o map[string]any) { specOf(o)["replicas"] = int64(5) }, true},
		{caseName("map emptied"), func(o map[string]any) { md(o)["labels"] = map[string]any{} }, false},
		{caseName("undeclared field"), func(o map[string]any) { specOf(o)["extra"].(map[string]any)["n"] = 2.5 }, false},
		{caseName("scalar turned map"), func(o map[string]any) { specOf(o)["color"] = map[string]any{"r": "x"} }, false},
	}
	pt := scalarTypes(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := decodeInts(t, scalarLive), decodeInts(t, scalarLive)
			tt.change(b)
			checkScalarChanges(t, pt, a, b, tt.fast)
		})
	}
}

// The fast comparison leaves managedFields out, whichever object has
// them, as the comparison of the objects without them does.
func TestScalarChangesLeaveManagedFieldsOut(t *testing.T) {
	entries := func(manager string) []any { return []any{map[string]any{"manager": manager, "operation": "Update"}} }
	tests := []struct {
		name       string
		live, next func(o map[string]any) // changes from scalarLive
		fast       bool
	}{
		{caseName("in live only (the usual update), annotation changed"),
			func(o map[string]any) { md(o)["managedFields"] = entries("n") },
			func(o map[string]any) { md(o)["annotations"].(map[string]any)["seq"] = "2" }, true},
		{caseName("in live only, field removed"),
			func(o map[string]any) { md(o)["managedFields"] = entries("n") },
			func(o map[string]any) { delete(md(o), "uid") }, true},
		{caseName("in the new object only, annotation changed"),
			func(map[string]any) {},
			func(o map[string]any) {
				md(o)["managedFields"] = entries("m")
				md(o)["annotations"].(map[string]any)["seq"] = "2"
			}, true},
		{caseName("different in both, field removed"),
			func(o map[string]any) { md(o)["managedFields"] = entries("n") },
			func(o map[string]any) {
				md(o)["managedFields"] = []any{}
				delete(md(o), "uid")
			}, true},
		// Metadata empty but for them is left to the comparison.
		{caseName("metadata with nothing else"),
			func(o map[string]any) { o["metadata"] = map[string]any{"managedFields": entries("n")} },
			func(o map[string]any) { o["metadata"] = map[string]any{} }, false},
	}
	pt := scalarTypes(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := decodeInts(t, scalarLive)
			tt.live(a)
			b := decodeInts(t, scalarLive)
			tt.next(b)
			checkScalarChanges(t, pt, a, b, tt.fast)
		})
	}
}

// scalarTypes are the types of scalarLive.
func scalarTypes(t *testing.T) *versionTypes {
	t.Helper()
	v, err := manager(t, "v1", "").Types.version("v1")
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// checkScalarChanges wants the fast comparison of a and b to decide when
// fast is set, and then to report what structured-merge-diff's comparison
// of them without managedFields reports.
func checkScalarChanges(t *testing.T, v *versionTypes, a, b map[string]any, fast bool) {
	t.Helper()
	got, ok := scalarChanges(v.walk, a, b)
	if ok != fast {
		t.Fatalf("fast comparison decided: %v, want %v", ok, fast)
	}
	if !ok {
		return
	}
	pt := v.pt
	ca, cb := changedOnly(pt.Schema, pt.TypeRef, withoutManagedFields(a), withoutManagedFields(b))
	want, err := typedValue(pt, ca).Compare(typedValue(pt, cb))
	if err != nil {
		t.Fatalf("comparison: %v", err)
	}
	if !got.Modified.Equals(want.Modified) || !got.Added.Equals(want.Added) || !got.Removed.Equals(want.Removed) {
		t.Errorf("fast comparison:\n%v\ncomparison:\n%v", got, want)
	}
}

func md(o map[string]any) map[string]any     { return o["metadata"].(map[string]any) }
func specOf(o map[string]any) map[string]any { return o["spec"].(map[string]any) }

// decodeInts decodes JSON as the server does: integers as int64.
func decodeInts(t *testing.T, s string) map[string]any {
	t.Helper()
	var o map[string]any
	if err := utiljson.Unmarshal([]byte(s), &o); err != nil {
		t.Fatal(err)
	}
	return o
}

// gadgetLive is an object of gadgetSchema, with a field of each shape
// the walk looks the type of up.
const gadgetLive = `{"apiVersion":"example.com/v1","kind":"Gadget",
	  "metadata":{"name":"g","namespace":"ns","labels":{"a":"b"}},
	  "spec":{"name":"n","count":1,"on":true,"size":"3Gi","params":{"p":"x"},"selector":{"k":"v"},
	    "nested":{"a":{"b":{"c":"deep"}}},
	    "extra":{"anything":"x","deep":{"x":1}},
	    "template":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}}}}`

// The fast comparison takes the scalar changes of every field whose type
// it resolves, whatever the shape of the type.
func TestScalarChangesFieldTypes(t *testing.T) {
	schemaless := &registry.Definition{Group: "example.com", Resource: "gadgets", Kind: "Gadget", Scope: registry.Namespaced,
		Versions: []registry.Version{{Name: "v1", Served: true, Storage: true}}}
	gadget, err := gadgetManager(t, false).Types.version("v1")
	if err != nil {
		t.Fatal(err)
	}
	deduced, err := NewTypes(schemaless).version("v1")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name          string
		change        func(o map[string]any)
		fast, deduced bool // the fast comparison decides on gadgetSchema, on no schema
	}{
		{caseName("declared field, four maps deep"), func(o map[string]any) {
			specOf(o)["nested"].(map[string]any)["a"].(map[string]any)["b"].(map[string]any)["c"] = "deeper"
		}, true, true},
		{caseName("declared boolean"), func(o map[string]any) { specOf(o)["on"] = false }, true, true},
		{caseName("int-or-string"), func(o map[string]any) { specOf(o)["size"] = "4Gi" }, true, true},
		{caseName("int-or-string turned integer"), func(o map[string]any) { specOf(o)["size"] = int64(3) }, false, false},
		{caseName("map's element"), func(o map[string]any) { specOf(o)["params"].(map[string]any)["p"] = "y" }, true, true},
		{caseName("map's element added"), func(o map[string]any) { specOf(o)["params"].(map[string]any)["q"] = "y" }, true, true},
		{caseName("map's element added, of another kind"), func(o map[string]any) {
			specOf(o)["params"].(map[string]any)["q"] = int64(1)
		}, false, true},
		{caseName("preserved field"), func(o map[string]any) { specOf(o)["extra"].(map[string]any)["anything"] = "y" }, true, true},
		{caseName("preserved field added"), func(o map[string]any) { specOf(o)["extra"].(map[string]any)["more"] = true }, true, true},
		{caseName("preserved field, a map deeper"), func(o map[string]any) {
			specOf(o)["extra"].(map[string]any)["deep"].(map[string]any)["x"] = int64(2)
		}, true, true},
		{caseName("embedded resource's name"), func(o map[string]any) {
			specOf(o)["template"].(map[string]any)["metadata"].(map[string]any)["name"] = "q"
		}, true, true},
		{caseName("atomic map's element"), func(o map[string]any) { specOf(o)["selector"].(map[string]any)["k"] = "w" }, false, true},
		{caseName("undeclared field"), func(o map[string]any) { specOf(o)["unknown"] = "x" }, false, true},
		{caseName("declared field of another kind"), func(o map[string]any) { specOf(o)["count"] = "many" }, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := decodeInts(t, gadgetLive), decodeInts(t, gadgetLive)
			tt.change(b)
			checkScalarChanges(t, gadget, a, b, tt.fast)
			checkScalarChanges(t, deduced, a, b, tt.deduced)
		})
	}
}

// TestScalarChangesRandom changes random objects a little, in the ways
// an update does and in others, on a schema with fields of every shape
// (and on no schema: types deduced from the values), and wants the fast
// comparison either to report what structured-merge-diff's comparison
// reports (of what changed, as the update compares them otherwise), or
// to leave the change to it.
func TestScalarChangesRandom(t *testing.T) {
	schemaless := &registry.Definition{Group: "example.com", Resource: "gadgets", Kind: "Gadget", Scope: registry.Namespaced,
		Versions: []registry.Version{{Name: "v1", Served: true, Storage: true}}}
	for _, tt := range []struct {
		name  string
		types *Types
	}{
		{"gadget schema", gadgetManager(t, false).Types},
		{"no schema", NewTypes(schemaless)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v, err := tt.types.version("v1")
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewSource(3))
			fast, changed := 0, 0
			const n = 3000
			for i := range n {
				a := randomGadget(rng)
				b := k8sruntime.DeepCopyJSON(a)
				changeSome(rng, b)
				got, ok := scalarChanges(v.walk, a, b)
				if !ok {
					continue
				}
				fast++
				ca, cb := changedOnly(v.pt.Schema, v.pt.TypeRef, withoutManagedFields(a), withoutManagedFields(b))
				want, err := typedValue(v.pt, ca).Compare(typedValue(v.pt, cb))
				if err != nil {
					t.Fatalf("object %d %v to %v: the fast comparison decided, the comparison failed: %v", i, a, b, err)
				}
				if !got.Modified.Equals(want.Modified) || !got.Added.Equals(want.Added) || !got.Removed.Equals(want.Removed) {
					t.Fatalf("object %d %v to %v:\nfast comparison:\n%v\ncomparison:\n%v", i, a, b, got, want)
				}
				if !got.IsSame() {
					changed++
				}
			}
			t.Logf("the fast comparison decided %d of %d changes, %d of them not empty", fast, n, changed)
			if fast < n/6 || changed < n/6 {
				t.Errorf("the fast comparison decided %d of %d changes, %d of them not empty", fast, n, changed)
			}
		})
	}
}

// changeSome makes up to three changes to maps of o, at any depth: a
// value replaced by a scalar of its kind or another, a field removed, a
// field added (declared or not, scalar or not).
func changeSome(rng *rand.Rand, o map[string]any) {
	var maps []map[string]any
	var collect func(m map[string]any)
	collect = func(m map[string]any) {
		maps = append(maps, m)
		for _, v := range m {
			if c, ok := v.(map[string]any); ok {
				collect(c)
			}
		}
	}
	collect(o)
	scalars := []any{"s1", "s9", int64(1), int64(7), 2.5, true, false, nil, map[string]any{"k": "v"}, []any{"x"}, map[string]any{}}
	names := []string{"name", "count", "ratio", "on", "phase", "p", "a", "anything", "x", "c", "zzz"}
	for range 1 + rng.Intn(3) {
		m := maps[rng.Intn(len(maps))]
		var keys []string
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		switch r := rng.Intn(10); {
		case r < 6 && len(keys) > 0:
			// Mostly a value of the same kind, as updates change them.
			k := keys[rng.Intn(len(keys))]
			same := rng.Intn(4) != 0
			switch m[k].(type) {
			case string:
				if same {
					m[k] = fmt.Sprint("s", rng.Intn(9))
					continue
				}
			case int64:
				if same {
					m[k] = rng.Int63n(9)
					continue
				}
			case bool:
				if same {
					m[k] = rng.Intn(2) == 0
					continue
				}
			}
			m[k] = scalars[rng.Intn(len(scalars))]
		case r < 8 && len(keys) > 0:
			delete(m, keys[rng.Intn(len(keys))])
		default:
			m[names[rng.Intn(len(names))]] = scalars[rng.Intn(len(scalars))]
		}
	}
}
