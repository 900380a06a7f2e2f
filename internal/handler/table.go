package handler

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metatable "k8s.io/apimachinery/pkg/api/meta/table"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/jsonpath"

	"github.com/crdserver/crdserver/internal/registry"
)

// printer renders objects of one version as Table rows. Compiled once per
// served version and shared.
type printer struct {
	headers []metav1.TableColumnDefinition
	paths   []*jsonpath.JSONPath
}

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
		jp := jsonpath.New(col.Name)
		if err := jp.Parse(fmt.Sprintf("{%s}", col.JSONPath)); err != nil {
			return nil, fmt.Errorf("printer column %q: %w", col.Name, err)
		}
		jp.AllowMissingKeys(true)
		p.paths = append(p.paths, jp)
		p.headers = append(p.headers, metav1.TableColumnDefinition{
			Name: col.Name, Type: col.Type, Format: col.Format,
			Description: desc, Priority: col.Priority,
		})
	}
	return p, nil
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

// row renders one object's cells.
func (p *printer) row(obj map[string]any, buf *bytes.Buffer) []any {
	cells := make([]any, 1, 1+len(p.paths))
	name, _ := metadata(obj)["name"].(string)
	cells[0] = name
	for i, jp := range p.paths {
		results, err := jp.FindResults(obj)
		if err != nil || len(results) == 0 || len(results[0]) == 0 {
			cells = append(cells, nil)
			continue
		}
		v := results[0][0].Interface()
		if p.headers[i+1].Type == "string" {
			buf.Reset()
			if err := jp.PrintResults(buf, []reflect.Value{reflect.ValueOf(v)}); err != nil {
				cells = append(cells, nil)
				continue
			}
			cells = append(cells, buf.String())
			continue
		}
		cells = append(cells, cellValue(p.headers[i+1].Type, v))
	}
	return cells
}

// cellValue keeps a value only when it has the column's type; dates become
// ages, as kubectl shows them.
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
			t, err := time.Parse(time.RFC3339, s)
			if err != nil {
				return "<invalid>"
			}
			return metatable.ConvertToHumanReadableDateType(metav1.NewTime(t))
		}
	}
	return nil
}

// tableOptions reads includeObject (None, Metadata (default), Object).
func tableOptions(c *call) (string, error) {
	inc := c.r.URL.Query().Get("includeObject")
	switch inc {
	case "":
		return "Metadata", nil
	case "None", "Metadata", "Object":
		return inc, nil
	}
	return "", apierrors.NewBadRequest(fmt.Sprintf("unable to parse query parameter includeObject: %q is not a valid value", inc))
}

// buildTable renders objects as a meta.k8s.io Table.
func (h *Handler) buildTable(c *call, objs []map[string]any, rv, cont string, remaining *int64) (*metav1.Table, error) {
	if tp, ok := c.def.Hooks.(registry.TablePrinter); ok {
		return buildTableWith(c, tp.TableColumns(), tp.TableRow, objs, rv, cont, remaining)
	}
	p, err := h.printerFor(c)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	return buildTableWith(c, p.headers, func(obj map[string]any) []any { return p.row(obj, &buf) }, objs, rv, cont, remaining)
}

// buildTableWith renders objects with the given columns and row function.
func buildTableWith(c *call, headers []metav1.TableColumnDefinition, cells func(map[string]any) []any, objs []map[string]any, rv, cont string, remaining *int64) (*metav1.Table, error) {
	include, err := tableOptions(c)
	if err != nil {
		return nil, err
	}
	t := &metav1.Table{ColumnDefinitions: headers}
	t.APIVersion = "meta.k8s.io/" + metaVersion(c)
	t.Kind = "Table"
	t.ResourceVersion, t.Continue, t.RemainingItemCount = rv, cont, remaining
	if c.r.URL.Query().Get("noHeaders") == "true" {
		t.ColumnDefinitions = nil
	}
	t.Rows = make([]metav1.TableRow, 0, len(objs))
	for _, obj := range objs {
		row := metav1.TableRow{Cells: cells(obj)}
		switch include {
		case "Object":
			b, err := json.Marshal(obj)
			if err != nil {
				return nil, apierrors.NewInternalError(err)
			}
			row.Object = runtime.RawExtension{Raw: b}
		case "Metadata":
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

// partialMetadata is obj as a PartialObjectMetadata.
func partialMetadata(obj map[string]any, version string) map[string]any {
	return map[string]any{
		"kind":       "PartialObjectMetadata",
		"apiVersion": "meta.k8s.io/" + version,
		"metadata":   obj["metadata"],
	}
}
