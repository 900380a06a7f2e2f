package handler

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/conversion"
	"github.com/crdserver/crdserver/internal/registry"
	"github.com/crdserver/crdserver/internal/watchcache"
)

// listOptions parses and validates the list/watch query parameters.
func listOptions(c *call) (*metainternalversion.ListOptions, error) {
	opts := &metainternalversion.ListOptions{}
	if err := metainternalversionscheme.ParameterCodec.DecodeParameters(c.r.URL.Query(), metav1.SchemeGroupVersion, opts); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	// A watch from "" or "0" with neither sendInitialEvents nor
	// resourceVersionMatch is a streaming list, as upstream defaults it
	// with its WatchList feature on.
	metainternalversion.SetListOptionsDefaults(opts, true)
	if errs := validation.ValidateListOptions(opts, true); len(errs) > 0 {
		return nil, apierrors.NewInvalid(metav1.SchemeGroupVersion.WithKind("ListOptions").GroupKind(), "", errs)
	}
	if fc, ok := c.def.Hooks.(registry.FieldLabelConverter); ok && opts.FieldSelector != nil {
		sel, err := opts.FieldSelector.Transform(func(label, value string) (string, string, error) {
			return fc.ConvertFieldLabel(c.version.Name, label, value)
		})
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		opts.FieldSelector = sel
	}
	if opts.FieldSelector != nil {
		for _, r := range opts.FieldSelector.Requirements() {
			if !selectableField(c, r.Field) {
				return nil, apierrors.NewBadRequest(unknownFieldLabel(c.def, r.Field))
			}
		}
	}
	// A field selector on metadata.name is how clients watch one object.
	if c.info.Name != "" {
		sel := fields.OneTermEqualSelector("metadata.name", c.info.Name)
		if opts.FieldSelector != nil && !opts.FieldSelector.Empty() {
			sel = fields.AndSelectors(opts.FieldSelector, sel)
		}
		opts.FieldSelector = sel
	}
	return opts, nil
}

// unknownFieldLabel words the refusal of a field selector on a field the
// resource does not select by, as upstream's field label conversion does:
// a custom resource's, a built-in's own (registry.FieldLabelRefuser), or
// the default one of the built-ins that select by metadata alone.
func unknownFieldLabel(def *registry.Definition, label string) string {
	if r, ok := def.Hooks.(registry.FieldLabelRefuser); ok {
		return r.RefuseFieldLabel(label)
	}
	if def.Custom() {
		return fmt.Sprintf("field label not supported: %s", label)
	}
	return fmt.Sprintf("%q is not a known field selector: only %q, %q", label, "metadata.name", "metadata.namespace")
}

func selectableField(c *call, f string) bool {
	switch f {
	case "metadata.name":
		return true
	case "metadata.namespace":
		return c.def.Namespaced()
	}
	return slices.Contains(c.version.SelectableFields, f)
}

// list serves a collection from the watch cache.
func (h *Handler) list(c *call) {
	opts, err := listOptions(c)
	if err != nil {
		codec.WriteStatus(c.w, c.r, err)
		return
	}
	res, err := listPage(c, opts)
	if err != nil {
		codec.WriteStatus(c.w, c.r, err)
		return
	}
	h.writeList(c, res)
}

// listPage reads from the watch cache the page of c's objects opts ask
// for. A resourceVersion that does not parse is refused as upstream's
// storage refuses it, unless a continue token gives the revision (then
// any resourceVersion beside it is refused).
func listPage(c *call, opts *metainternalversion.ListOptions) (watchcache.ListResult, error) {
	if opts.Continue == "" {
		if err := listResourceVersionError(opts.ResourceVersion); err != nil {
			return watchcache.ListResult{}, err
		}
	}
	return c.store.Cache.List(c.r.Context(), watchcache.ListOptions{
		Namespace:            c.info.Namespace,
		ResourceVersion:      opts.ResourceVersion,
		ResourceVersionMatch: string(opts.ResourceVersionMatch),
		Limit:                opts.Limit,
		Continue:             opts.Continue,
		Labels:               opts.LabelSelector,
		Fields:               opts.FieldSelector,
	})
}

// writeList sends a page of cached items. Items are converted to the
// request's version first, all of them before anything is written, so
// that a conversion that fails is an error Status (a gzipped list is
// compressed while they convert, but held until they all have); items
// already in it (and in plain JSON) are spliced in unchanged.
func (h *Handler) writeList(c *call, res watchcache.ListResult) {
	rv := strconv.FormatInt(res.ResourceVersion, 10)
	lm := metav1.ListMeta{ResourceVersion: rv, Continue: res.Continue, RemainingItemCount: res.RemainingItemCount}
	l, objs, idx := byVersion(c, res.Items)
	if len(objs) > 0 && h.writeConvertingGzipped(c, lm, l, objs, idx) {
		return
	}
	if err := convertListed(c, l, objs, idx); err != nil {
		codec.WriteStatus(c.w, c.r, err)
		return
	}
	h.writeListAs(c, lm, l)
}

// writeListAs answers listed objects, encoded in the request's version, in
// the form the client asked for.
func (h *Handler) writeListAs(c *call, lm metav1.ListMeta, l listed) {
	switch c.media.As {
	case "":
		h.writeObjectList(c, lm, l)
	case "Table":
		h.writeTableList(c, lm, l)
	case "PartialObjectMetadataList":
		h.writeMetadataList(c, lm, l)
	case "PartialObjectMetadata":
		codec.WriteStatus(c.w, c.r, statusError(http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable,
			fmt.Sprintf("you requested PartialObjectMetadata, but the requested object is a list (%s)", listGoType(c.def))))
	default:
		codec.WriteStatus(c.w, c.r, notAcceptable(c.media.As))
	}
}

// listGoType names the Go type of a list of def's objects inside upstream's
// server, as its refusal of a list as PartialObjectMetadata quotes it.
func listGoType(def *registry.Definition) string {
	if def.Custom() {
		return "*unstructured.UnstructuredList"
	}
	return "*" + internalPackage(def.Group) + "." + def.ListKind
}

// writeObjectList sends the items as the resource's list kind.
func (h *Handler) writeObjectList(c *call, lm metav1.ListMeta, l listed) {
	if c.media.Type == codec.MediaProtobuf {
		b, err := protobufList(c, lm, l)
		writeProtobufBody(c, http.StatusOK, b, err)
		return
	}
	head := objectListHead(c, lm)
	if !c.def.Custom() {
		// Upstream's typed lists write their items without apiVersion
		// and kind (its unstructured lists of custom resources keep them).
		h.writeItems(c, head, l.len(), func(w listWriter, i int) {
			item := l.at(i).bytes()
			segs, ok := codec.WithoutTypeMeta(item)
			if !ok {
				w.Write(item)
				return
			}
			for _, s := range segs {
				w.Write(s)
			}
		})
		return
	}
	h.writeItems(c, head, l.len(), func(w listWriter, i int) {
		l.at(i).writeTo(w)
	})
}

// objectListHead is a JSON list of c's resource up to its items' opening
// bracket.
func objectListHead(c *call, lm metav1.ListMeta) []byte {
	md := listMeta(lm)
	if c.def.Custom() {
		// An unstructured list always carries continue, empty or not.
		md["continue"] = lm.Continue
	}
	head, _ := json.Marshal(map[string]any{
		"kind": c.def.ListKind, "apiVersion": c.apiVersion(), "metadata": md,
	})
	return append(head[:len(head)-1:len(head)-1], `,"items":[`...)
}

// writeTableList sends the items as a Table. With the version's compiled
// columns, each row's cells are encoded once per object revision and kept
// with its cache item; the rows go out as they are written, with the
// object, its metadata or neither, as includeObject says. Built-ins with
// columns of their own decode each object.
func (h *Handler) writeTableList(c *call, lm metav1.ListMeta, l listed) {
	include, err := tableOptions(c)
	if err != nil {
		codec.WriteStatus(c.w, c.r, err)
		return
	}
	if _, ok := c.def.Hooks.(registry.TablePrinter); ok {
		objs := make([]map[string]any, 0, l.len())
		for i := range l.len() {
			obj, err := decodeStored(l.at(i).bytes())
			if err != nil {
				codec.WriteStatus(c.w, c.r, apierrors.NewInternalError(err))
				return
			}
			objs = append(objs, obj)
		}
		if ts, ok := c.def.Hooks.(registry.TableListSorter); ok {
			ts.SortTableList(objs)
		}
		var t *metav1.Table
		if lp, ok := c.def.Hooks.(registry.ListTablePrinter); ok {
			t, err = buildTableWith(c, lp.(registry.TablePrinter).TableColumns(), lp.TableListRow(objs), objs, lm.ResourceVersion, lm.Continue, lm.RemainingItemCount)
		} else {
			t, err = h.buildTable(c, objs, lm.ResourceVersion, lm.Continue, lm.RemainingItemCount)
		}
		if err != nil {
			codec.WriteStatus(c.w, c.r, err)
			return
		}
		codec.WriteObject(c.w, http.StatusOK, c.media, t)
		return
	}
	p, err := h.printerFor(c)
	if err != nil {
		codec.WriteStatus(c.w, c.r, err)
		return
	}
	// Every row, and metadata, before the first byte: a failure is a Status.
	rows := make([]*encodedRow, l.len())
	for i := range rows {
		if rows[i], err = p.rowOf(l.item(i), l.at(i)); err != nil {
			codec.WriteStatus(c.w, c.r, apierrors.NewInternalError(err))
			return
		}
	}
	var metas listedMeta
	if include == metav1.IncludeMetadata {
		if metas, err = metadataOf(l); err != nil {
			codec.WriteStatus(c.w, c.r, apierrors.NewInternalError(err))
			return
		}
	}
	head, err := tableHead(c, p.headers, lm)
	if err != nil {
		codec.WriteStatus(c.w, c.r, apierrors.NewInternalError(err))
		return
	}
	now := h.now()
	pm := partialMetadataHead(c)
	var scratch []byte
	h.writeItems(c, head, len(rows), func(w listWriter, i int) {
		var md encodedMeta
		if include == metav1.IncludeMetadata {
			md = metas.at(i)
		}
		scratch = writeTableRow(w, scratch, rows[i], now, include, pm, l.at(i), md)
	})
}

// writeTableRow writes one row: its cells at now and, as include says,
// the object (obj), its metadata (md) as a PartialObjectMetadata whose
// head pm is, or null. scratch is a buffer for the cells, returned for
// the next row.
func writeTableRow(w listWriter, scratch []byte, r *encodedRow, now time.Time, include metav1.IncludeObjectPolicy, pm string, obj listItem, md encodedMeta) []byte {
	w.WriteString(`{"cells":`)
	scratch = r.appendCells(scratch[:0], now)
	w.Write(scratch)
	w.WriteString(`,"object":`)
	switch include {
	case metav1.IncludeObject:
		obj.writeTo(w)
	case metav1.IncludeMetadata:
		w.WriteString(pm)
		md.writeTo(w)
		w.WriteByte('}')
	default:
		w.WriteString("null")
	}
	w.WriteByte('}')
	return scratch
}

// tableHead is a Table's JSON up to its first row: `{…,"rows":[`.
func tableHead(c *call, headers []metav1.TableColumnDefinition, lm metav1.ListMeta) ([]byte, error) {
	t := newTable(c, headers, lm)
	t.Rows = []metav1.TableRow{}
	b, err := json.Marshal(t)
	if err != nil {
		return nil, err
	}
	const empty = `"rows":[]}`
	if !bytes.HasSuffix(b, []byte(empty)) {
		return nil, fmt.Errorf("a Table encodes as %q, not ending with its rows", b)
	}
	return b[:len(b)-2], nil
}

// partialMetadataHead starts a PartialObjectMetadata of the call's
// version, up to its metadata.
func partialMetadataHead(c *call) string {
	if metaVersion(c) == "v1beta1" {
		return `{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1beta1","metadata":`
	}
	return `{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":`
}

// writeMetadataList sends the items as a PartialObjectMetadataList, their
// metadata cut from their encoded form, as it is written.
func (h *Handler) writeMetadataList(c *call, lm metav1.ListMeta, l listed) {
	metas, err := metadataOf(l)
	if err != nil {
		codec.WriteStatus(c.w, c.r, apierrors.NewInternalError(err))
		return
	}
	if c.media.Type == codec.MediaProtobuf {
		started := false
		err := writeProtobufMetadataList(c.w, func(n int) {
			started = true
			c.w.Header().Set("Content-Type", codec.MediaProtobuf)
			c.w.Header().Set("Content-Length", strconv.Itoa(n))
			c.w.WriteHeader(http.StatusOK)
		}, lm, metas, protobufListBuffered)
		if err != nil && !started {
			codec.WriteStatus(c.w, c.r, apierrors.NewInternalError(err))
		}
		return
	}
	md, err := json.Marshal(lm)
	if err != nil {
		codec.WriteStatus(c.w, c.r, apierrors.NewInternalError(err))
		return
	}
	head := []byte(`{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/` + metaVersion(c) + `","metadata":`)
	head = append(append(head, md...), `,"items":[`...)
	pm := partialMetadataHead(c)
	h.writeItems(c, head, metas.len(), func(w listWriter, i int) {
		w.WriteString(pm)
		metas.at(i).writeTo(w)
		w.WriteByte('}')
	})
}

// encodedMeta is an object's encoded metadata: the cached item's bytes
// from start to end when item is set, else b.
type encodedMeta struct {
	item       *watchcache.Item
	start, end int
	b          []byte
}

// len is the length of the encoded metadata.
func (m encodedMeta) len() int {
	if m.item == nil {
		return len(m.b)
	}
	return m.end - m.start
}

// appendTo appends the encoded metadata to dst.
func (m encodedMeta) appendTo(dst []byte) []byte {
	if m.item == nil {
		return append(dst, m.b...)
	}
	return m.item.AppendRange(dst, m.start, m.end)
}

func (m encodedMeta) writeTo(w listWriter) {
	if m.item == nil {
		w.Write(m.b)
		return
	}
	m.item.WriteRange(w, m.start, m.end)
}

// listedMeta are the encoded metadata of a list's objects: the cache
// items' own (l) when every object is its cache item as it is and each
// item knows where its metadata is (the usual list, which then holds
// nothing per object), else each one's (all).
type listedMeta struct {
	l   listed
	all []encodedMeta
}

func (m listedMeta) len() int {
	if m.all != nil {
		return len(m.all)
	}
	return m.l.len()
}

// at is object i's metadata.
func (m listedMeta) at(i int) encodedMeta {
	if m.all != nil {
		return m.all[i]
	}
	it := m.l.items[i]
	return encodedMeta{item: it, start: int(it.MetaStart), end: int(it.MetaEnd)}
}

// metadataOf returns the encoded metadata of each listed item: the cached
// bytes where the item has them (conversion by None changes only
// apiVersion), of the converted object otherwise.
func metadataOf(l listed) (listedMeta, error) {
	if l.encoded == nil && !slices.ContainsFunc(l.items, func(it *watchcache.Item) bool { return it.MetaEnd <= 0 }) {
		return listedMeta{l: l}, nil
	}
	out := make([]encodedMeta, l.len())
	for i := range out {
		var ok bool
		enc := l.at(i)
		if it := l.item(i); it != nil && enc.item == it {
			out[i], ok = cutMetadata(it, nil)
		} else {
			out[i], ok = cutMetadata(nil, enc.bytes())
		}
		if ok {
			continue
		}
		b := enc.bytes()
		obj, err := decodeStored(b)
		if err != nil {
			return listedMeta{}, err
		}
		if out[i].b, err = codec.Marshal(obj["metadata"]); err != nil {
			return listedMeta{}, err
		}
	}
	return listedMeta{all: out}, nil
}

// cutMetadata is the encoded metadata of a cached item (it, when set),
// whose metadata is where the item says, else of the encoded object b,
// found without decoding it. false when it cannot be found so: decoding
// the object then says why.
func cutMetadata(it *watchcache.Item, b []byte) (encodedMeta, bool) {
	if it != nil {
		if it.MetaEnd > 0 {
			return encodedMeta{item: it, start: int(it.MetaStart), end: int(it.MetaEnd)}, true
		}
		b = it.JSON()
	}
	start, end, ok := codec.MetadataSpan(b)
	if !ok {
		return encodedMeta{}, false
	}
	return encodedMeta{b: b[start:end]}, true
}

// listed are a list's objects in the request's version: their cache
// items (items[i] nil, or items nil, for objects that are none, as a
// delete collection answers with objects as deleted) and, unless every
// object is its cache item as it is (encoded nil: the usual list, which
// then holds nothing per object but the items), each one's listItem.
type listed struct {
	items   []*watchcache.Item
	encoded []listItem
}

// len is the number of objects.
func (l listed) len() int {
	if l.encoded != nil {
		return len(l.encoded)
	}
	return len(l.items)
}

// item is object i's cache item, or nil.
func (l listed) item(i int) *watchcache.Item {
	if l.items == nil {
		return nil
	}
	return l.items[i]
}

// at is object i in the request's version.
func (l listed) at(i int) listItem {
	if l.encoded == nil {
		return listItem{item: l.items[i]}
	}
	return l.encoded[i]
}

// listItem is one item of a list in the request's version: head, then the
// cached item's bytes from offset from when item is set (the object is
// cached in the request's version, or in another that None conversion
// changes only the apiVersion of: head is then `{"apiVersion":"<request's>`
// and from where the stored apiVersion's closing quote is), else body, an
// object converted for the request.
type listItem struct {
	head []byte
	item *watchcache.Item
	from int
	body []byte
}

// asCached reports whether the item is the cached object as it is.
func (li listItem) asCached(it *watchcache.Item) bool {
	return li.item == it && li.head == nil
}

// writeTo writes the item to w.
func (li listItem) writeTo(w listWriter) {
	w.Write(li.head)
	if li.item == nil {
		w.Write(li.body)
		return
	}
	li.item.WriteRange(w, li.from, li.item.Len())
}

// bytes returns the item as one slice (a copy unless it is a converted
// object, or a cached one held in one piece).
func (li listItem) bytes() []byte {
	switch {
	case li.item == nil:
		return li.body
	case li.head == nil && li.from == 0:
		return li.item.JSON()
	}
	return li.item.AppendRange(append(make([]byte, 0, len(li.head)+li.item.Len()-li.from), li.head...), li.from, li.item.Len())
}

// inRequestVersion returns the items in the request's version: the cached
// bytes of those already in it, apiVersion rewritten on the fly for None
// conversion between versions of one schema, converted ones (in one call
// to the converter, which batches) of the others.
func inRequestVersion(c *call, items []*watchcache.Item) (listed, error) {
	l, objs, idx := byVersion(c, items)
	if err := convertListed(c, l, objs, idx); err != nil {
		return listed{}, err
	}
	return l, nil
}

// convertListed converts objs, items idx of l (byVersion), into l.
func convertListed(c *call, l listed, objs []conversion.Object, idx []int) error {
	if len(objs) == 0 {
		return nil
	}
	converted, err := c.conv().FromStored(c.r.Context(), objs)
	if err != nil {
		return err
	}
	for j, i := range idx {
		l.encoded[i].body = converted[j]
	}
	return nil
}

// byVersion returns the items in the request's version but for those a
// converter must convert: objs, which are items idx, whose body in l is
// left for their conversions.
func byVersion(c *call, items []*watchcache.Item) (l listed, objs []conversion.Object, idx []int) {
	var out []listItem // made at the first object not as cached
	none, isNone := conversion.For(c.def).(conversion.None)
	var head []byte
	for i, it := range items {
		// The apiVersion comes first, in the item's head.
		first := it.Head()
		if inVersion(c, first) {
			if out != nil {
				out[i].item = it
			}
			continue
		}
		if out == nil {
			out = make([]listItem, len(items))
			for j := range i {
				out[j].item = items[j]
			}
		}
		if isNone {
			if rest, ok := none.Rewrite(first, c.apiVersion()); ok {
				if head == nil {
					head = []byte(`{"apiVersion":"` + c.apiVersion())
				}
				out[i] = listItem{head: head, item: it, from: len(first) - len(rest)}
				continue
			}
		}
		idx = append(idx, i)
		objs = append(objs, conversion.Object{Cached: it, Key: it.Key, Revision: it.Revision})
	}
	return listed{items: items, encoded: out}, objs, idx
}

// listWriters buffer streamed lists on their way to the connection.
var listWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 64<<10) }}

// listWriter is where a list's items are written: the connection's
// buffer, or the whole answer's. Its errors are sticky (bufio.Writer), so
// items are written without checking each write, and writeItems checks
// once at the end.
type listWriter interface {
	io.Writer
	io.ByteWriter
	io.StringWriter
}

// writeItems sends a list answer: head (up to its items' opening
// bracket), the n items that item writes, comma-separated, and "]}".
// JSON is written to the connection as it goes instead of being
// assembled first: a list of 10,000 objects is tens of megabytes that
// would otherwise be copied once more, and allocated, for every request.
// Indented JSON is indented on its way (and ends without a newline, as
// upstream's). The items are in memory already, so only the connection
// can fail. YAML is assembled and then converted.
func (h *Handler) writeItems(c *call, head []byte, n int, item func(w listWriter, i int)) {
	writeAll := func(w listWriter) {
		w.Write(head)
		for i := range n {
			if i > 0 {
				w.WriteByte(',')
			}
			item(w, i)
		}
		w.WriteString("]}")
	}
	if c.media.Type != codec.MediaJSON {
		var buf bytes.Buffer
		writeAll(&buf)
		codec.WriteRaw(c.w, http.StatusOK, c.media, buf.Bytes())
		return
	}
	c.w.Header().Set("Content-Type", codec.MediaJSON)
	c.w.WriteHeader(http.StatusOK)
	bw := listWriters.Get().(*bufio.Writer)
	bw.Reset(c.w)
	defer func() {
		bw.Reset(nil)
		listWriters.Put(bw)
	}()
	if c.media.Pretty {
		writeAll(codec.NewIndenter(bw))
	} else {
		writeAll(bw)
		bw.WriteByte('\n')
	}
	if err := bw.Flush(); err != nil {
		// The client went away; nothing to tell it.
		h.log.Debug("streaming a list", "resource", c.gr(), "err", err)
	}
}

// listMeta is a list's metadata as the unstructured lists of custom
// resources write it.
func listMeta(lm metav1.ListMeta) map[string]any {
	// A stored list always has a resourceVersion; a computed one
	// (componentstatuses) has none, and upstream leaves it out.
	m := map[string]any{}
	if lm.ResourceVersion != "" {
		m["resourceVersion"] = lm.ResourceVersion
	}
	if lm.Continue != "" {
		m["continue"] = lm.Continue
	}
	if lm.RemainingItemCount != nil {
		m["remainingItemCount"] = *lm.RemainingItemCount
	}
	return m
}
