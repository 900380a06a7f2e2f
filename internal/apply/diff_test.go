package apply

import (
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	utiljson "k8s.io/apimachinery/pkg/util/json"
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
