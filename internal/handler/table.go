package handler

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/client-go/util/jsonpath"

	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/registry"
	"github.com/crdserver/crdserver/internal/watchcache"
)

// printer renders objects of one version as Table rows. Compiled once per
// served version and shared. A printer is also the key under which an
// object's encoded row is kept with its watch cache item (rowOf): a CRD
// change that alters the columns compiles a new printer, so rows of the
// old columns are never served for the new ones.
type printer struct {
	headers []metav1.TableColumnDefinition
	// types are the types the columns after Name are rendered by (their
	// headers may declare another: registry.PrinterColumn.Declared).
	types []string
	// exprs are the columns' JSONPath templates. A compiled JSONPath keeps
	// state while it evaluates (range blocks), so each evaluation takes a
	// set of its own from paths.
	exprs []string
	paths sync.Pool // []*jsonpath.JSONPath compiled from exprs
	// fields, when every column is a plain chain of member names
	// (.spec.replicas), are those chains and metadata.name: the members a
	// row reads, which decodeRow then decodes alone; found finds them all
	// in one reading of the object.
	fields [][]string
	found  *codec.Paths
}

// plainPath is a JSONPath that names members only.
var plainPath = regexp.MustCompile(`^(\.[A-Za-z_][A-Za-z0-9_-]*)+$`)

var nameColumn = metav1.TableColumnDefinition{
	Name: "Name", Type: "string", Format: "name",
	Description: metav1.ObjectMeta{}.SwaggerDoc()["name"],
}

// compilePrinter compiles a version's printer columns. For custom
// resources (custom), a column without a description is described by its
// JSONPath, as upstream's CRD table convertor does.
func compilePrinter(cols []registry.PrinterColumn, custom bool) (*printer, error) {
	p := &printer{headers: []metav1.TableColumnDefinition{nameColumn}}
	for _, col := range cols {
		desc := col.Description
		if desc == "" && custom {
			desc = "Custom resource definition column (in JSONPath format): " + col.JSONPath
		}
		p.exprs = append(p.exprs, fmt.Sprintf("{%s}", col.JSONPath))
		declared := col.Type
		if col.Declared != "" {
			declared = col.Declared
		}
		p.types = append(p.types, col.Type)
		p.headers = append(p.headers, metav1.TableColumnDefinition{
			Name: col.Name, Type: declared, Format: col.Format,
			Description: desc, Priority: col.Priority,
		})
	}
	paths, err := p.compile()
	if err != nil {
		return nil, err
	}
	p.paths.Put(paths)
	p.fields = [][]string{{"metadata", "name"}}
	for _, col := range cols {
		if !plainPath.MatchString(col.JSONPath) {
			p.fields = nil
			break
		}
		p.fields = append(p.fields, strings.Split(col.JSONPath[1:], "."))
	}
	if p.fields != nil {
		if p.found, err = codec.NewPaths(p.fields); err != nil {
			p.fields = nil // more columns than Paths takes: decode objects whole
		}
	}
	return p, nil
}

// compile compiles the columns' JSONPaths.
func (p *printer) compile() ([]*jsonpath.JSONPath, error) {
	paths := make([]*jsonpath.JSONPath, len(p.exprs))
	for i, expr := range p.exprs {
		name := p.headers[i+1].Name
		jp := jsonpath.New(name)
		if err := jp.Parse(expr); err != nil {
			return nil, fmt.Errorf("printer column %q: %w", name, err)
		}
		jp.AllowMissingKeys(true)
		paths[i] = jp
	}
	return paths, nil
}

// printerFor returns the compiled printer of the call's version.
func (h *Handler) printerFor(c *call) (*printer, error) {
	if p, ok := h.printers.Load(c.version); ok {
		return p.(*printer), nil
	}
	p, err := compilePrinter(c.version.PrinterColumns, !goTyped(c.def))
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	h.printers.Store(c.version, p)
	return p, nil
}

// dateCell is a date column's value before it becomes an age: dates are
// shown relative to the time of each request.
type dateCell struct{ t time.Time }

// cells returns one object's cells, the values of date columns as
// dateCells. Evaluating the columns is the expensive part of a Table;
// rowOf keeps its result.
func (p *printer) cells(obj map[string]any) []any {
	paths, ok := p.paths.Get().([]*jsonpath.JSONPath)
	if !ok {
		var err error
		if paths, err = p.compile(); err != nil {
			panic(err) // compilePrinter compiled them once already
		}
	}
	defer p.paths.Put(paths)
	cells := make([]any, 1, 1+len(paths))
	name, _ := metadata(obj)["name"].(string)
	cells[0] = name
	var buf bytes.Buffer
	for i, jp := range paths {
		results, err := jp.FindResults(obj)
		if err != nil || len(results) == 0 || len(results[0]) == 0 {
			cells = append(cells, nil)
			continue
		}
		// As upstream: simple paths only, so the first result is the one.
		v := results[0][0].Interface()
		if p.types[i] == "string" {
			buf.Reset()
			if err := jp.PrintResults(&buf, []reflect.Value{reflect.ValueOf(v)}); err != nil {
				cells = append(cells, nil)
				continue
			}
			cells = append(cells, buf.String())
			continue
		}
		cells = append(cells, cellValue(p.types[i], v))
	}
	return cells
}

// row renders one object's cells at now.
func (p *printer) row(obj map[string]any, now time.Time) []any {
	cells := p.cells(obj)
	for i, v := range cells {
		if d, ok := v.(dateCell); ok {
			cells[i] = age(d.t, now)
		}
	}
	return cells
}

// age is a date cell at now, as upstream's ConvertToHumanReadableDateType
// writes it.
func age(t, now time.Time) string {
	return duration.HumanDuration(now.Sub(t))
}

// cellValue keeps a value only when it has the column's type, as
// upstream's CRD table convertor does. Dates become dateCells (their age
// depends on when they are shown), or "<unknown>" when empty and
// "<invalid>" when they do not parse.
func cellValue(typ string, v any) any {
	switch typ {
	case "integer":
		switch x := v.(type) {
		case int64:
			return x
		case float64:
			return int64(x)
		}
	case "number":
		switch x := v.(type) {
		case int64:
			return float64(x)
		case float64:
			return x
		}
	case "boolean":
		if b, ok := v.(bool); ok {
			return b
		}
	case "date":
		if s, ok := v.(string); ok {
			var t metav1.Time
			if err := t.UnmarshalQueryParameter(s); err != nil {
				return "<invalid>"
			}
			if t.IsZero() {
				return "<unknown>"
			}
			return dateCell{t.Time}
		}
	}
	return nil
}

// encodedRow is one object's cells encoded: the JSON array, with the date
// cells left out and their times kept to be written, as ages, at their
// offsets when the row is sent.
type encodedRow struct {
	cells []byte
	dates []encodedDate
}

type encodedDate struct {
	at int // offset in cells
	t  time.Time
}

// encodeRow encodes the cells of obj.
func (p *printer) encodeRow(obj map[string]any) (*encodedRow, error) {
	r := &encodedRow{}
	b := make([]byte, 0, 128)
	b = append(b, '[')
	for i, v := range p.cells(obj) {
		if i > 0 {
			b = append(b, ',')
		}
		if d, ok := v.(dateCell); ok {
			r.dates = append(r.dates, encodedDate{at: len(b), t: d.t})
			continue
		}
		var err error
		if b, err = codec.AppendMarshal(b, v); err != nil {
			return nil, fmt.Errorf("encoding a table cell: %w", err)
		}
	}
	r.cells = append(b, ']')
	if cap(r.cells) > len(r.cells)+len(r.cells)/4 {
		r.cells = bytes.Clone(r.cells) // kept for as long as the item
	}
	return r, nil
}

// appendCells appends the row's cells with their ages at now.
func (r *encodedRow) appendCells(b []byte, now time.Time) []byte {
	from := 0
	for _, d := range r.dates {
		b = append(b, r.cells[from:d.at]...)
		b = codec.AppendString(b, age(d.t, now))
		from = d.at
	}
	return append(b, r.cells[from:]...)
}

// rowOf returns the encoded row of a listed object: kept with its cache
// item, and built on first use, when enc is the item's own bytes (the
// object is in the request's version); built for this request otherwise.
func (p *printer) rowOf(it *watchcache.Item, enc listItem) (*encodedRow, error) {
	if it == nil || !enc.asCached(it) {
		return p.decodeRow(enc.bytes())
	}
	v := it.View(p, func(it *watchcache.Item) any {
		buf := rowBuffers.Get().(*[]byte)
		defer rowBuffers.Put(buf)
		// The row keeps nothing of the bytes it is read from.
		r, err := p.decodeRow(it.JSONInto(buf))
		if err != nil {
			return err // kept too: the same bytes fail the same way
		}
		return r
	})
	if err, ok := v.(error); ok {
		return nil, err
	}
	return v.(*encodedRow), nil
}

// rowBuffers hold the objects whose rows are being built, when their
// cache items keep them in parts: a first Table list of many objects
// would otherwise put each together in a buffer of its own, for nothing.
var rowBuffers = sync.Pool{New: func() any { return new([]byte) }}

// decodeRow builds the row of an encoded object. With plain column paths
// it decodes only the members they read: objects are mostly what no
// column shows (managedFields, annotations, the spec's bulk), and decoding
// all of it for every object of a first Table list is most of its cost
// and garbage.
func (p *printer) decodeRow(encoded []byte) (*encodedRow, error) {
	if obj, ok := p.members(encoded); ok {
		return p.encodeRow(obj)
	}
	obj, err := decodeStored(encoded)
	if err != nil {
		return nil, err
	}
	return p.encodeRow(obj)
}

// members returns an object holding only the members p.fields name, as
// they are in encoded; false when p has no plain fields or encoded is not
// read as expected (the caller decodes it all).
func (p *printer) members(encoded []byte) (map[string]any, bool) {
	if p.fields == nil {
		return nil, false
	}
	obj := map[string]any{}
	bad := false
	ok := p.found.Find(encoded, func(i int, v []byte) {
		if s, ok := codec.StringValue(v); ok { // most columns' values
			setMember(obj, p.fields[i], s)
			return
		}
		// The decoder reads objects: wrap the value in one.
		wrapped, err := decodeStored(append(append([]byte(`{"v":`), v...), '}'))
		if err != nil {
			bad = true
			return
		}
		setMember(obj, p.fields[i], wrapped["v"])
	})
	return obj, ok && !bad
}

// tableOptions reads includeObject: None, Metadata (the default, also
// for "") or Object. Anything else is upstream's 400.
func tableOptions(c *call) (metav1.IncludeObjectPolicy, error) {
	opts := metav1.TableOptions{IncludeObject: metav1.IncludeObjectPolicy(c.r.URL.Query().Get("includeObject"))}
	switch errs := validation.ValidateTableOptions(&opts); len(errs) {
	case 0:
	case 1:
		return "", apierrors.NewBadRequest(fmt.Sprintf("Unable to convert to Table as requested: %v", errs[0].Error()))
	default:
		return "", apierrors.NewBadRequest(fmt.Sprintf("Unable to convert to Table as requested: %v", errs))
	}
	if opts.IncludeObject == "" {
		return metav1.IncludeMetadata, nil
	}
	return opts.IncludeObject, nil
}

// checkTableOptions refuses a Table request's bad includeObject before
// anything is read.
func checkTableOptions(c *call) error {
	if c.media.As != "Table" {
		return nil
	}
	_, err := tableOptions(c)
	return err
}

// buildTable renders decoded objects as a meta.k8s.io Table: built-ins
// with columns of their own, single objects and watch events that are not
// a cached item's.
func (h *Handler) buildTable(c *call, objs []map[string]any, rv, cont string, remaining *int64) (*metav1.Table, error) {
	if tp, ok := c.def.Hooks.(registry.TablePrinter); ok {
		return buildTableWith(c, tp.TableColumns(), tp.TableRow, objs, rv, cont, remaining)
	}
	p, err := h.printerFor(c)
	if err != nil {
		return nil, err
	}
	now := h.now()
	return buildTableWith(c, p.headers, func(obj map[string]any) []any { return p.row(obj, now) }, objs, rv, cont, remaining)
}

// buildTableWith renders objects with the given columns and row function.
func buildTableWith(c *call, headers []metav1.TableColumnDefinition, cells func(map[string]any) []any, objs []map[string]any, rv, cont string, remaining *int64) (*metav1.Table, error) {
	include, err := tableOptions(c)
	if err != nil {
		return nil, err
	}
	t := newTable(c, tableHeaders(c, headers), metav1.ListMeta{ResourceVersion: rv, Continue: cont, RemainingItemCount: remaining})
	t.Rows = make([]metav1.TableRow, 0, len(objs))
	for _, obj := range objs {
		row := metav1.TableRow{Cells: cells(obj)}
		switch include {
		case metav1.IncludeObject:
			b, err := json.Marshal(obj)
			if err != nil {
				return nil, apierrors.NewInternalError(err)
			}
			row.Object = runtime.RawExtension{Raw: b}
		case metav1.IncludeMetadata:
			b, err := json.Marshal(partialMetadata(obj, metaVersion(c)))
			if err != nil {
				return nil, apierrors.NewInternalError(err)
			}
			row.Object = runtime.RawExtension{Raw: b}
		}
		t.Rows = append(t.Rows, row)
	}
	return t, nil
}

// tableHeaders is the column definitions a Table of the call carries:
// none once a watch has sent them.
func tableHeaders(c *call, headers []metav1.TableColumnDefinition) []metav1.TableColumnDefinition {
	if c.tableHeadersSent {
		return nil
	}
	return headers
}

// newTable is an empty Table in the version the call asks for.
func newTable(c *call, headers []metav1.TableColumnDefinition, lm metav1.ListMeta) *metav1.Table {
	t := &metav1.Table{ColumnDefinitions: headers, ListMeta: lm}
	t.APIVersion = "meta.k8s.io/" + metaVersion(c)
	t.Kind = "Table"
	return t
}

// partialMetadata is obj as a PartialObjectMetadata.
func partialMetadata(obj map[string]any, version string) map[string]any {
	return map[string]any{
		"kind":       "PartialObjectMetadata",
		"apiVersion": "meta.k8s.io/" + version,
		"metadata":   obj["metadata"],
	}
}
