package handler

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/crdserver/crdserver/internal/registry"
	"github.com/crdserver/crdserver/internal/watchcache"
)

// printerOf compiles the columns that specs describe, each as
// "<name> <type> <JSONPath>".
func printerOf(t *testing.T, specs ...string) *printer {
	t.Helper()
	var cols []registry.PrinterColumn
	for _, spec := range specs {
		f := strings.Fields(spec)
		cols = append(cols, registry.PrinterColumn{Name: f[0], Type: f[1], JSONPath: f[2]})
	}
	p, err := compilePrinter(cols, true)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Cells are kept encoded with the object's cache item; the ages of date
// columns are written when the row is sent. Values that do not have their
// column's type are null, as upstream's CRD table convertor makes them.
func TestEncodedRowFormats(t *testing.T) {
	p := printerOf(t,
		"Int integer .spec.int",
		"IntFromFloat integer .spec.float",
		"Num number .spec.int",
		"Float number .spec.float",
		"Bool boolean .spec.bool",
		"NotBool boolean .spec.int",
		"Str string .spec.str",
		"StrOfList string .spec.list",
		"Missing string .spec.missing",
		"Created date .metadata.creationTimestamp",
		"Empty date .spec.empty",
		"Bad date .spec.bad",
		"NotDate date .spec.int",
		"Later date .spec.later",
		"Range string .spec.list[*]",
	)
	obj := []byte(`{"apiVersion":"v1","kind":"X","metadata":{"creationTimestamp":"2024-01-01T00:00:00Z","name":"x<1>"},` +
		`"spec":{"bad":"yesterday","bool":true,"empty":"","float":2.5,"int":3,"later":"2024-01-03T00:00:00Z","list":["a","b"],"str":"s"}}`)
	r, err := p.decodeRow(obj)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2024, 1, 3, 1, 2, 3, 0, time.UTC)
	got := string(r.appendCells(nil, now))
	want := `["x\u003c1\u003e",3,2,3,2.5,true,null,"s","[\"a\",\"b\"]",null,"2d1h",` +
		`"\u003cunknown\u003e","\u003cinvalid\u003e",null,"62m","a"]`
	if got != want {
		t.Errorf("cells\n got %s\nwant %s", got, want)
	}
	// The same cells as the decoded path (single objects, watches of
	// converted objects) renders.
	dec, err := decodeStored(obj)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(p.row(dec, now))
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != want {
		t.Errorf("decoded row\n got %s\nwant %s", b, want)
	}
}

// A row is built once per object revision and printer: a second list
// shares it, and a printer compiled for other columns (a CRD change)
// builds its own rather than reusing the old one's.
func TestRowKeptPerPrinter(t *testing.T) {
	it := &watchcache.Item{Key: "k"}
	it.SetJSON([]byte(`{"metadata":{"name":"a"},"spec":{"size":"L","replicas":2}}`), nil, nil)
	size := printerOf(t, "Size string .spec.size")
	replicas := printerOf(t, "Replicas integer .spec.replicas")
	own := listItem{item: it}
	r1, err := size.rowOf(it, own)
	if err != nil {
		t.Fatal(err)
	}
	if r2, _ := size.rowOf(it, own); r2 != r1 {
		t.Error("second row of one printer was built again")
	}
	r3, err := replicas.rowOf(it, own)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(r3.appendCells(nil, time.Time{})); got != `["a",2]` {
		t.Errorf("new columns: %s, want [\"a\",2]", got)
	}
	if got := string(r1.appendCells(nil, time.Time{})); got != `["a","L"]` {
		t.Errorf("old columns: %s, want [\"a\",\"L\"]", got)
	}
	// Bytes that are not the item's own (a conversion's) are not kept.
	conv := listItem{body: []byte(`{"metadata":{"name":"a"},"spec":{"size":"XL"}}`)}
	r4, err := size.rowOf(it, conv)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(r4.appendCells(nil, time.Time{})); got != `["a","XL"]` {
		t.Errorf("converted: %s", got)
	}
	if r5, _ := size.rowOf(it, own); r5 != r1 {
		t.Error("a converted row replaced the kept one")
	}
}

// Rows of plain column paths decode only the members they read, and are
// the rows a decoding of the whole object gives.
func TestRowFromMembers(t *testing.T) {
	p := printerOf(t,
		"Replicas integer .spec.replicas",
		"Spec string .spec",
		"Phase string .status.phase",
		"Deep string .spec.size.value",
		"Label string .metadata.labels.app",
		"Ratio number .spec.ratio",
		"Created date .metadata.creationTimestamp",
	)
	if len(p.fields) != 8 {
		t.Fatalf("plain fields %v", p.fields)
	}
	now := time.Date(2024, 1, 3, 0, 0, 0, 0, time.UTC)
	for _, obj := range []string{
		`{"apiVersion":"v1","kind":"X","metadata":{"creationTimestamp":"2024-01-01T00:00:00Z","labels":{"app":"a"},"name":"x"},"spec":{"ratio":1,"replicas":3,"size":"L"},"status":{"phase":null}}`,
		`{"metadata":{"name":"y"},"spec":"text","status":{"phase":{"a":[1,2]}}}`,
		`{"metadata":{},"spec":{"replicas":2.5,"size":{"value":"XL"}}}`,
		`{"metadata":{"name":"z\u00e9\"q"},"spec":{"replicas":"3","size":{"value":"X\nL"}},"status":{"phase":"Ré\\ady"}}`,
	} {
		members, ok := p.members([]byte(obj))
		if !ok {
			t.Fatalf("members of %s not read", obj)
		}
		full, err := decodeStored([]byte(obj))
		if err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(p.row(members, now))
		b, _ := json.Marshal(p.row(full, now))
		if string(a) != string(b) {
			t.Errorf("%s:\nfrom members %s\n   decoded   %s", obj, a, b)
		}
	}
	// A column that is not a plain path makes every row decode the object.
	if q := printerOf(t, "First string .spec.list[0]"); q.fields != nil {
		t.Errorf("fields of a path with an index: %v", q.fields)
	}
}
