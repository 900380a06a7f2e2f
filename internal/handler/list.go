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
				return nil, apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s", r.Field))
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
	if err == nil && opts.Continue == "" {
		// With a continue token the token's revision counts, and a
		// resourceVersion is refused whatever it is.
		err = listResourceVersionError(opts.ResourceVersion)
	}
	if err != nil {
		codec.WriteStatus(c.w, c.r, err)
		return
	}
	res, err := c.store.Cache.List(c.r.Context(), watchcache.ListOptions{
		Namespace:            c.info.Namespace,
		ResourceVersion:      opts.ResourceVersion,
		ResourceVersionMatch: string(opts.ResourceVersionMatch),
		Limit:                opts.Limit,
		Continue:             opts.Continue,
		Labels:               opts.LabelSelector,
		Fields:               opts.FieldSelector,
	})
	if err != nil {
		codec.WriteStatus(c.w, c.r, err)
		return
	}
	h.writeList(c, res)
}

// writeList sends a page of cached items. Items are converted to the
// request's version first, all of them before anything is written, so
// that a conversion that fails is an error Status; items already in it
// (and in plain JSON) are spliced in unchanged.
func (h *Handler) writeList(c *call, res watchcache.ListResult) {
	rv := strconv.FormatInt(res.ResourceVersion, 10)
	encoded, err := inRequestVersion(c, res.Items)
	if err != nil {
		codec.WriteStatus(c.w, c.r, err)
		return
	}
	switch c.media.As {
	case "":
	case "Table", "PartialObjectMetadataList":
		objs := make([]map[string]any, 0, len(res.Items))
		for _, it := range encoded {
			obj, err := decodeStored(it.bytes())
			if err != nil {
				codec.WriteStatus(c.w, c.r, apierrors.NewInternalError(err))
				return
			}
			objs = append(objs, obj)
		}
		if c.media.As == "Table" {
			t, err := h.buildTable(c, objs, rv, res.Continue, res.RemainingItemCount)
			if err != nil {
				codec.WriteStatus(c.w, c.r, err)
				return
			}
			codec.WriteObject(c.w, http.StatusOK, c.media, t)
			return
		}
		items := make([]any, 0, len(objs))
		for _, o := range objs {
			items = append(items, partialMetadata(o, metaVersion(c)))
		}
		codec.WriteObject(c.w, http.StatusOK, c.media, map[string]any{
			"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/" + metaVersion(c),
			"metadata": listMeta(rv, res), "items": items,
		})
		return
	default:
		codec.WriteStatus(c.w, c.r, notAcceptable(c.media.As))
		return
	}

	md := listMeta(rv, res)
	if c.def.Custom() {
		// An unstructured list always carries continue, empty or not.
		md["continue"] = res.Continue
	}
	head, _ := json.Marshal(map[string]any{
		"kind": c.def.ListKind, "apiVersion": c.apiVersion(), "metadata": md,
	})
	if c.media.Type == codec.MediaJSON && !c.media.Pretty {
		h.streamList(c, head, encoded)
		return
	}
	var buf bytes.Buffer
	size := len(head) + 16
	for _, it := range encoded {
		size += len(it.head) + len(it.body) + 1
	}
	buf.Grow(size)
	if err := appendList(&buf, head, encoded); err != nil {
		codec.WriteStatus(c.w, c.r, apierrors.NewInternalError(err))
		return
	}
	codec.WriteRaw(c.w, http.StatusOK, c.media, buf.Bytes())
}

// listItem is one item of a list in the request's version: head, then
// body. head is set when only the item's apiVersion changes (None
// conversion): it is `{"apiVersion":"<request's>`, and body the cached
// bytes from the stored apiVersion's closing quote, so no item is copied.
type listItem struct{ head, body []byte }

// bytes returns the item as one slice (a copy when it has a head).
func (it listItem) bytes() []byte {
	if it.head == nil {
		return it.body
	}
	return append(append(make([]byte, 0, len(it.head)+len(it.body)), it.head...), it.body...)
}

// inRequestVersion returns the items in the request's version: the cached
// bytes of those already in it, apiVersion rewritten on the fly for None
// conversion between versions of one schema, converted ones (in one call
// to the converter, which batches) of the others.
func inRequestVersion(c *call, items []*watchcache.Item) ([]listItem, error) {
	out := make([]listItem, len(items))
	var objs []conversion.Object
	var idx []int
	none, isNone := conversion.For(c.def).(conversion.None)
	var head []byte
	for i, it := range items {
		if inVersion(c, it.JSON) {
			out[i].body = it.JSON
			continue
		}
		if isNone {
			if rest, ok := none.Rewrite(it.JSON, c.apiVersion()); ok {
				if head == nil {
					head = []byte(`{"apiVersion":"` + c.apiVersion())
				}
				out[i] = listItem{head: head, body: rest}
				continue
			}
		}
		idx = append(idx, i)
		objs = append(objs, conversion.Object{JSON: it.JSON, Key: it.Key, Revision: it.Revision})
	}
	if len(objs) == 0 {
		return out, nil
	}
	converted, err := convertStored(c, objs)
	if err != nil {
		return nil, err
	}
	for j, i := range idx {
		out[i].body = converted[j]
	}
	return out, nil
}

// listWriters buffer streamed lists on their way to the connection.
var listWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 64<<10) }}

// streamList writes a JSON list as it goes instead of assembling it first:
// a list of 10,000 objects is tens of megabytes that would otherwise be
// copied once more, and allocated, for every request. The items are
// already in memory and converted, so only the connection can fail.
func (h *Handler) streamList(c *call, head []byte, items []listItem) {
	c.w.Header().Set("Content-Type", codec.MediaJSON)
	c.w.WriteHeader(http.StatusOK)
	bw := listWriters.Get().(*bufio.Writer)
	bw.Reset(c.w)
	defer func() {
		bw.Reset(nil)
		listWriters.Put(bw)
	}()
	err := appendList(bw, head, items)
	if err == nil {
		bw.WriteByte('\n')
		err = bw.Flush()
	}
	if err != nil {
		// The client went away; nothing to tell it.
		h.log.Debug("streaming a list", "resource", c.gr(), "err", err)
	}
}

// appendList writes the list with head's kind, apiVersion and metadata,
// and the encoded items.
func appendList(w interface {
	io.Writer
	io.ByteWriter
	io.StringWriter
}, head []byte, items []listItem) error {
	w.Write(head[:len(head)-1])
	if _, err := w.WriteString(`,"items":[`); err != nil {
		return err
	}
	for i, it := range items {
		if i > 0 {
			w.WriteByte(',')
		}
		w.Write(it.head)
		if _, err := w.Write(it.body); err != nil {
			return err // the connection failed
		}
	}
	_, err := w.WriteString("]}")
	return err
}

func listMeta(rv string, res watchcache.ListResult) map[string]any {
	m := map[string]any{"resourceVersion": rv}
	if res.Continue != "" {
		m["continue"] = res.Continue
	}
	if res.RemainingItemCount != nil {
		m["remainingItemCount"] = *res.RemainingItemCount
	}
	return m
}
