package codec

import (
	"encoding/json"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
)

// IncludeObject is a Table request's includeObject parameter: what each row
// carries besides its cells.
type IncludeObject string

const (
	IncludeNone     IncludeObject = "None"
	IncludeMetadata IncludeObject = "Metadata" // the default
	IncludeFull     IncludeObject = "Object"
)

// ParseIncludeObject reads the includeObject query parameter ("" means
// Metadata). Other values are upstream's 400.
func ParseIncludeObject(v string) (IncludeObject, error) {
	switch IncludeObject(v) {
	case "":
		return IncludeMetadata, nil
	case IncludeNone, IncludeMetadata, IncludeFull:
		return IncludeObject(v), nil
	}
	return "", apierrors.NewBadRequest(fmt.Sprintf("unrecognized includeObject value: %q", v))
}

// NameColumn and AgeColumn are the columns every custom resource's Table
// has when its version defines no printer columns (Age is then the only
// extra one), described as upstream describes them.
var (
	NameColumn = metav1.TableColumnDefinition{
		Name: "Name", Type: "string", Format: "name",
		Description: metav1.ObjectMeta{}.SwaggerDoc()["name"],
	}
	AgeColumn = metav1.TableColumnDefinition{
		Name: "Age", Type: "date",
		Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"],
	}
)

// AgeCell renders a date cell as kube-apiserver does, relative to now:
// "5m12s", "3d", "<unknown>" for a missing time, "<invalid>" for one that
// does not parse.
func AgeCell(timestamp string, now time.Time) string {
	if timestamp == "" {
		return "<unknown>"
	}
	t, err := time.Parse(time.RFC3339, timestamp)
	if err != nil {
		return "<invalid>"
	}
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t))
}

// TableRow is one object's row before encoding.
type TableRow struct {
	Cells  []any
	Object map[string]any
}

// metaVersion is the meta.k8s.io version a conversion asked for: v1beta1 when
// named, v1 otherwise.
func metaVersion(mt MediaType) string {
	if mt.Version == "v1beta1" {
		return "v1beta1"
	}
	return "v1"
}

// NewTable builds the meta.k8s.io Table of rows in the version mt asks for.
// Each row carries its whole object, its PartialObjectMetadata, or nothing,
// as include says. list holds the list's resourceVersion, continue token
// and remaining count ("" for a single object).
func NewTable(mt MediaType, columns []metav1.TableColumnDefinition, rows []TableRow, include IncludeObject, list metav1.ListMeta) (*metav1.Table, error) {
	v := metaVersion(mt)
	t := &metav1.Table{
		TypeMeta:          metav1.TypeMeta{Kind: "Table", APIVersion: metav1.GroupName + "/" + v},
		ListMeta:          list,
		ColumnDefinitions: columns,
		Rows:              make([]metav1.TableRow, len(rows)),
	}
	for i, r := range rows {
		t.Rows[i].Cells = r.Cells
		var obj any
		switch include {
		case IncludeFull:
			obj = r.Object
		case IncludeMetadata, "":
			obj = PartialObjectMetadata(r.Object, v)
		case IncludeNone:
			continue
		default:
			return nil, apierrors.NewBadRequest(fmt.Sprintf("unrecognized includeObject value: %q", include))
		}
		b, err := json.Marshal(obj)
		if err != nil {
			return nil, fmt.Errorf("encoding table row %d: %w", i, err)
		}
		t.Rows[i].Object = runtime.RawExtension{Raw: b}
	}
	return t, nil
}

// PartialObjectMetadata is obj reduced to its metadata, as
// meta.k8s.io/<version> PartialObjectMetadata ("" means v1).
func PartialObjectMetadata(obj map[string]any, version string) map[string]any {
	if version == "" {
		version = "v1"
	}
	md, ok := obj["metadata"].(map[string]any)
	if !ok {
		md = map[string]any{}
	}
	return map[string]any{
		"kind":       "PartialObjectMetadata",
		"apiVersion": metav1.GroupName + "/" + version,
		"metadata":   md,
	}
}

// PartialObjectMetadataList is a list of objects reduced to their metadata,
// as meta.k8s.io/<version> PartialObjectMetadataList; every item carries its
// own kind and apiVersion, as upstream's do.
func PartialObjectMetadataList(objs []map[string]any, version string, list metav1.ListMeta) map[string]any {
	if version == "" {
		version = "v1"
	}
	items := make([]any, len(objs))
	for i, o := range objs {
		items[i] = PartialObjectMetadata(o, version)
	}
	md := map[string]any{}
	if list.ResourceVersion != "" {
		md["resourceVersion"] = list.ResourceVersion
	}
	if list.Continue != "" {
		md["continue"] = list.Continue
	}
	if list.RemainingItemCount != nil {
		md["remainingItemCount"] = *list.RemainingItemCount
	}
	return map[string]any{
		"kind":       "PartialObjectMetadataList",
		"apiVersion": metav1.GroupName + "/" + version,
		"metadata":   md,
		"items":      items,
	}
}
