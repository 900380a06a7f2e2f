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

// TestScalarChangesMatchesComparison wants the fast comparison of an
// update either to report what structured-merge-diff's comparison
// reports, or to leave the change to it; and to take the changes it is
// for (scalar fields changing value) itself.
func TestScalarChangesMatchesComparison(t *testing.T) {
	const live = `{"apiVersion":"example.com/v1","kind":"Widget",
	  "metadata":{"name":"w","namespace":"ns","resourceVersion":"7","labels":{"a":"b"},"annotations":{"seq":"1","pad":"xx"}},
	  "spec":{"color":"red","replicas":1,"tags":["x"],"ports":[{"name":"http","port":80}],"selector":{"k":"v"},"extra":{"n":1.5}},
	  "status":{"phase":"Ready"}}`
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
		{caseName("field added"), func(o map[string]any) { md(o)["annotations"].(map[string]any)["new"] = "x" }, false},
		{caseName("field removed"), func(o map[string]any) { delete(specOf(o), "color") }, false},
		{caseName("field renamed"), func(o map[string]any) {
			delete(specOf(o), "color")
			specOf(o)["colour"] = "red"
		}, false},
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
	m := manager(t, "v1", "")
	pt, err := m.Types.Version("v1")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := decodeInts(t, live), decodeInts(t, live)
			tt.change(b)
			got, ok := scalarChanges(pt.Schema, pt.TypeRef, a, b)
			if ok != tt.fast {
				t.Fatalf("fast comparison decided: %v, want %v", ok, tt.fast)
			}
			if !ok {
				return
			}
			ca, cb := changedOnly(pt.Schema, pt.TypeRef, a, b)
			want, err := typedValue(pt, ca).Compare(typedValue(pt, cb))
			if err != nil {
				t.Fatalf("comparison: %v", err)
			}
			if !want.Added.Empty() || !want.Removed.Empty() || !got.Equals(want.Modified) {
				t.Errorf("fast comparison: modified %v\ncomparison:\n%v", got, want)
			}
		})
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
