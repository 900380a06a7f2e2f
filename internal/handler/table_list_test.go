package handler_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	widgets     = "/apis/patch.example.com/v1/namespaces/default/widgets"
	tableAccept = "application/json;as=Table;g=meta.k8s.io;v=v1"
)

func (e *env) table(t *testing.T, path string) metav1.Table {
	t.Helper()
	r := e.do(req{method: "GET", path: path, accept: tableAccept})
	if r.code != http.StatusOK {
		t.Fatalf("table %s: %d %s", path, r.code, r.body)
	}
	var tbl metav1.Table
	if err := json.Unmarshal(r.body, &tbl); err != nil {
		t.Fatalf("table %s: %v: %s", path, err, r.body)
	}
	return tbl
}

func columnNames(tbl metav1.Table) []string {
	var names []string
	for _, c := range tbl.ColumnDefinitions {
		names = append(names, c.Name)
	}
	return names
}

// Table lists carry each row's object as includeObject says, and a CRD
// change that alters the columns changes the cells of objects listed
// before it (whose cells were kept with them).
func TestTableListColumnsFollowCRD(t *testing.T) {
	e := newWidgetEnv(t)
	tbl := e.table(t, widgets)
	if got := columnNames(tbl); len(got) != 2 || got[1] != "Age" {
		t.Fatalf("columns %v, want [Name Age]", got)
	}
	if len(tbl.Rows) != 1 || tbl.Rows[0].Cells[0] != "w1" {
		t.Fatalf("rows %+v", tbl.Rows)
	}
	var pm metav1.PartialObjectMetadata
	if err := json.Unmarshal(tbl.Rows[0].Object.Raw, &pm); err != nil || pm.Kind != "PartialObjectMetadata" || pm.Name != "w1" || pm.ResourceVersion == "" {
		t.Errorf("row object %s (%v), want w1's PartialObjectMetadata", tbl.Rows[0].Object.Raw, err)
	}
	if tbl.ResourceVersion == "" {
		t.Error("table without a resourceVersion")
	}
	for include, want := range map[string]string{"None": "null", "Object": `"kind":"Widget"`, "Metadata": `"kind":"PartialObjectMetadata"`} {
		tbl := e.table(t, widgets+"?includeObject="+include)
		raw := tbl.Rows[0].Object.Raw
		if raw == nil {
			raw = []byte("null")
		}
		if !bytes.Contains(raw, []byte(want)) {
			t.Errorf("includeObject=%s: row object %s, want %s", include, raw, want)
		}
	}

	patch := `[{"op":"add","path":"/spec/versions/0/additionalPrinterColumns","value":[` +
		`{"name":"Size","type":"integer","jsonPath":".spec.size"},{"name":"Big","type":"boolean","jsonPath":".spec.big"}]}]`
	if r := e.do(jsonPatch("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.patch.example.com", patch)); r.code != 200 {
		t.Fatalf("changing the columns: %d %s", r.code, r.body)
	}
	for i := 0; ; i++ {
		tbl = e.table(t, widgets)
		if len(tbl.ColumnDefinitions) == 3 {
			break
		}
		if i == 300 {
			t.Fatalf("columns still %v", columnNames(tbl))
		}
		sleep()
	}
	if got := columnNames(tbl); got[1] != "Size" || got[2] != "Big" {
		t.Errorf("columns %v, want [Name Size Big]", got)
	}
	if c := tbl.Rows[0].Cells; len(c) != 3 || c[1] != float64(1) || c[2] != nil {
		t.Errorf("cells %v, want [w1 1 <nil>]", c)
	}
}

// A metadata list carries every object's metadata and the list's.
func TestPartialObjectMetadataList(t *testing.T) {
	e := newWidgetEnv(t)
	w2 := `{"apiVersion":"patch.example.com/v1","kind":"Widget","metadata":{"name":"w2","labels":{"a":"b"}},"spec":{"replicas":1}}`
	if r := e.do(req{method: "POST", path: widgets, body: w2}); r.code != 201 {
		t.Fatalf("creating w2: %d %s", r.code, r.body)
	}
	r := e.do(req{method: "GET", path: widgets + "?limit=1", accept: "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"})
	if r.code != 200 {
		t.Fatalf("list: %d %s", r.code, r.body)
	}
	var l metav1.PartialObjectMetadataList
	if err := json.Unmarshal(r.body, &l); err != nil {
		t.Fatal(err)
	}
	if l.Kind != "PartialObjectMetadataList" || l.APIVersion != "meta.k8s.io/v1" || l.Continue == "" || len(l.Items) != 1 || l.Items[0].Name != "w1" || l.Items[0].Kind != "PartialObjectMetadata" {
		t.Errorf("first page: %s", r.body)
	}
	r = e.do(req{method: "GET", path: widgets + "?continue=" + l.Continue, accept: "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1"})
	l = metav1.PartialObjectMetadataList{}
	if err := json.Unmarshal(r.body, &l); err != nil {
		t.Fatal(err)
	}
	if l.APIVersion != "meta.k8s.io/v1beta1" || l.Continue != "" || len(l.Items) != 1 || l.Items[0].Labels["a"] != "b" || l.Items[0].APIVersion != "meta.k8s.io/v1beta1" {
		t.Errorf("second page: %s", r.body)
	}
}

// Bad Table requests answer as upstream's: a conversion the server does
// not have is 406, an includeObject it does not know 400, whatever the
// verb.
func TestTableBadInput(t *testing.T) {
	e := newWidgetEnv(t)
	const badInclude = `Unable to convert to Table as requested: includeObject: Invalid value: "Everything": must be 'Metadata', 'Object', 'None', or empty`
	e.checkCases(t, []errCase{
		at(errCase{name: "Table in v2", req: req{method: "GET", path: widgets, accept: "application/json;as=Table;g=meta.k8s.io;v=v2"},
			code: 406, reason: metav1.StatusReasonNotAcceptable, message: "only the following media types are accepted"}),
		at(errCase{name: "Table in another group", req: req{method: "GET", path: widgets, accept: "application/json;as=Table;g=example.com;v=v1"},
			code: 406, reason: metav1.StatusReasonNotAcceptable, message: "only the following media types are accepted"}),
		at(errCase{name: "list includeObject", req: req{method: "GET", path: widgets + "?includeObject=Everything", accept: tableAccept},
			code: 400, reason: metav1.StatusReasonBadRequest, message: badInclude}),
		at(errCase{name: "get includeObject", req: req{method: "GET", path: widgetPath + "?includeObject=Everything", accept: tableAccept},
			code: 400, reason: metav1.StatusReasonBadRequest, message: badInclude}),
		at(errCase{name: "watch includeObject", req: req{method: "GET", path: widgets + "?watch=true&includeObject=Everything", accept: tableAccept},
			code: 400, reason: metav1.StatusReasonBadRequest, message: badInclude}),
	})
	// Without as=Table, includeObject is not read.
	if r := e.do(req{method: "GET", path: widgets + "?includeObject=Everything"}); r.code != 200 {
		t.Errorf("plain list with includeObject: %d %s", r.code, r.body)
	}
}

// A watch's first Table carries the columns, later ones only rows, as
// upstream's; every row has the cells of its object's revision.
func TestTableWatch(t *testing.T) {
	e := newWidgetEnv(t)
	w2 := `{"apiVersion":"patch.example.com/v1","kind":"Widget","metadata":{"name":"w2"},"spec":{"replicas":1}}`
	if r := e.do(req{method: "POST", path: widgets, body: w2}); r.code != 201 {
		t.Fatalf("creating w2: %d %s", r.code, r.body)
	}
	// A new resource's watch cache fills in the background; until it has,
	// watches get 429 with Retry-After, which clients retry.
	r := e.do(req{method: "GET", path: widgets + "?watch=true&resourceVersion=0&timeoutSeconds=1", accept: tableAccept})
	for i := 0; r.code == 429 && i < 300; i++ {
		sleep()
		r = e.do(req{method: "GET", path: widgets + "?watch=true&resourceVersion=0&timeoutSeconds=1", accept: tableAccept})
	}
	if r.code != 200 {
		t.Fatalf("watch: %d %s", r.code, r.body)
	}
	var names []any
	n := 0
	for line := range bytes.Lines(r.body) {
		var ev struct {
			Type   string
			Object metav1.Table
		}
		if err := json.Unmarshal(line, &ev); err != nil {
			t.Fatalf("frame %s: %v", line, err)
		}
		if hasColumns := len(ev.Object.ColumnDefinitions) > 0; hasColumns != (n == 0) {
			t.Errorf("event %d has columns: %v", n, hasColumns)
		}
		for _, row := range ev.Object.Rows {
			names = append(names, row.Cells[0])
		}
		n++
	}
	if len(names) != 2 || names[0] != "w1" || names[1] != "w2" {
		t.Errorf("rows of %v, want w1 and w2", names)
	}
}
