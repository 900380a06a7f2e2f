package handler

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/crdserver/crdserver/internal/apply"
	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/conversion"
	"github.com/crdserver/crdserver/internal/metacheck"
	"github.com/crdserver/crdserver/internal/registry"
	"github.com/crdserver/crdserver/internal/watchcache"
)

// Objects are map[string]any throughout the request path, with integers as
// int64 and other numbers as float64. Stored values are the object's JSON
// without metadata.resourceVersion: the revision is etcd's, set on read.

// DecodeStored decodes a stored value (for controllers).
func DecodeStored(value []byte) (map[string]any, error) { return decodeStored(value) }

// EncodeStored encodes an object for storage (for controllers).
func EncodeStored(obj map[string]any) ([]byte, error) { return encodeStored(obj) }

// decodeStored decodes a stored value. It uses the request body decoder,
// which yields the same values as k8s.io/apimachinery/pkg/util/json
// (integers that fit as int64, other numbers as float64) in about a third
// of the time; every update decodes the current object.
func decodeStored(value []byte) (map[string]any, error) {
	obj, _, err := codec.Decode(value, "", codec.DecodeOptions{MaxBytes: math.MaxInt64})
	if err != nil {
		return nil, fmt.Errorf("decoding stored object: %w", err)
	}
	if obj == nil {
		return nil, fmt.Errorf("decoding stored object: not an object")
	}
	return obj, nil
}

// decodeStoredFieldsRaw is decodeStored keeping the object's
// managedFields encoded (a codec.Raw) when they are in Marshal's form:
// for an update that only records its own fields, decoding them costs
// more than the recording. Only code that knows the Raw may read the
// object (see doWrite); value must not change while it is in use.
func decodeStoredFieldsRaw(value []byte) (map[string]any, error) {
	return decodeStoredFieldsRawAt(value, [2]int{})
}

// decodeStoredFieldsRawAt is decodeStoredFieldsRaw of a cached object
// whose managedFields the cache found in Marshal's form at value[at[0]:at[1]]
// (watchcache.Item.RawManagedFields; [0, 0] when it did not): they are
// not checked again.
func decodeStoredFieldsRawAt(value []byte, at [2]int) (map[string]any, error) {
	obj, _, err := codec.Decode(value, "", codec.DecodeOptions{MaxBytes: math.MaxInt64, RawManagedFields: true, RawManagedFieldsAt: at, Unchanging: true})
	if err != nil {
		return nil, fmt.Errorf("decoding stored object: %w", err)
	}
	if obj == nil {
		return nil, fmt.Errorf("decoding stored object: not an object")
	}
	return obj, nil
}

// encodeStored encodes obj for storage, without its resourceVersion.
func encodeStored(obj map[string]any) ([]byte, error) {
	enc, err := encodeForStorage(obj)
	return enc.JSON, err
}

// encodeForStorage is encodeStored noting where the resourceVersion goes
// (for an answer or an admission review to set it) and where the
// managedFields are.
func encodeForStorage(obj map[string]any) (codec.Stored, error) {
	md, _ := obj["metadata"].(map[string]any)
	rv, had := md["resourceVersion"]
	if had {
		delete(md, "resourceVersion")
		defer func() { md["resourceVersion"] = rv }()
	}
	st, err := codec.MarshalStored(obj)
	if err != nil {
		return codec.Stored{}, fmt.Errorf("encoding object: %w", err)
	}
	return st, nil
}

// encodeStoredAndAdmitted encodes obj for storage, as encodeStored does,
// and returns how admission webhooks receive it: with its
// resourceVersion, which admitted splices into the stored bytes (byte
// for byte the encoding of obj), or nil for admission to encode obj
// itself. The splice copies the whole object: it is made only when a
// webhook asks for it.
func encodeStoredAndAdmitted(obj map[string]any) (stored codec.Stored, admitted func() []byte, err error) {
	if stored, err = encodeForStorage(obj); err != nil {
		return codec.Stored{}, nil, err
	}
	md, _ := obj["metadata"].(map[string]any)
	switch rv := md["resourceVersion"].(type) {
	case nil:
		if _, had := md["resourceVersion"]; !had {
			return stored, func() []byte { return stored.JSON }, nil
		}
	case string:
		if stored.HasRV {
			return stored, func() []byte { return stored.RV.Set(rv) }, nil
		}
	}
	return stored, nil, nil
}

// setRV sets metadata.resourceVersion.
func setRV(obj map[string]any, rev int64) {
	md := metadata(obj)
	md["resourceVersion"] = rvString(rev)
}

// rvString is the resourceVersion of revision rev.
func rvString(rev int64) string { return strconv.FormatInt(rev, 10) }

// metadata returns obj's metadata map, creating it if absent.
func metadata(obj map[string]any) map[string]any {
	md, ok := obj["metadata"].(map[string]any)
	if !ok {
		md = map[string]any{}
		obj["metadata"] = md
	}
	return md
}

func accessor(obj map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: obj}
}

// metaOf is obj's metadata for upstream's metadata validation. It reads
// managedFields without the reflective conversion unstructured uses,
// which would cost an update more than recording them does; validation
// looks at each entry's manager, operation, fieldsType and subresource.
// The entries are read once, on first use: the metadata must not change
// meanwhile.
func metaOf(obj map[string]any) metav1.Object {
	return &fastMeta{Unstructured: accessor(obj)}
}

// metaOfWritten is metaOf for an object whose managedFields entries may
// be the ones w describes: then they are read from w.
func metaOfWritten(obj map[string]any, w *apply.Written) metav1.Object {
	m := &fastMeta{Unstructured: accessor(obj)}
	if w.Holds(metadata(obj)["managedFields"]) {
		m.entries, m.read = w.Entries, true
	}
	return m
}

type fastMeta struct {
	*unstructured.Unstructured
	entries []metav1.ManagedFieldsEntry
	read    bool
	// checked says the labels and annotations were found valid (see
	// metaToValidate): validators are handed none.
	checked bool
}

// metaToValidate is metaOfWritten for apimachinery's metadata validators,
// which check obj's labels and annotations with a regexp each, and twice
// on an update: when metacheck finds them all valid, validators are
// handed none, since they would find nothing wrong with them either.
// Anything else is left to the validators, which word what is wrong.
func metaToValidate(obj map[string]any, w *apply.Written) metav1.Object {
	m := metaOfWritten(obj, w).(*fastMeta)
	m.checked = labelsAndAnnotationsValid(metadata(obj))
	return m
}

// labelsAndAnnotationsValid reports whether md's labels and annotations
// pass apimachinery's checks: valid keys and label values, and
// annotations within their total size. Values that are not strings are
// left to the validators.
func labelsAndAnnotationsValid(md map[string]any) bool {
	labels, _ := md["labels"].(map[string]any)
	for k, v := range labels {
		s, ok := v.(string)
		if !ok || !metacheck.LabelKey(k) || !metacheck.LabelValue(s) {
			return false
		}
	}
	annotations, _ := md["annotations"].(map[string]any)
	size := 0
	for k, v := range annotations {
		s, ok := v.(string)
		if !ok || !metacheck.AnnotationKey(k) {
			return false
		}
		size += len(k) + len(s)
	}
	return size <= apivalidation.TotalAnnotationSizeLimitB
}

// GetLabels returns none once they were checked (see metaToValidate).
func (m *fastMeta) GetLabels() map[string]string {
	if m.checked {
		return nil
	}
	return m.Unstructured.GetLabels()
}

// GetAnnotations returns none once they were checked (see metaToValidate).
func (m *fastMeta) GetAnnotations() map[string]string {
	if m.checked {
		return nil
	}
	return m.Unstructured.GetAnnotations()
}

// GetManagedFields returns the entries' identities; validation does not
// change them.
func (m *fastMeta) GetManagedFields() []metav1.ManagedFieldsEntry {
	if !m.read {
		m.entries, m.read = managedFieldsEntries(m.Object), true
	}
	return m.entries
}

func managedFieldsEntries(obj map[string]any) []metav1.ManagedFieldsEntry {
	if raw, ok := metadata(obj)["managedFields"].(codec.Raw); ok {
		return encodedManagedFields(raw)
	}
	list, _ := metadata(obj)["managedFields"].([]any)
	return apply.EntryIdentities(list)
}

// encodedManagedFields is GetManagedFields on entries kept encoded.
func encodedManagedFields(raw codec.Raw) []metav1.ManagedFieldsEntry {
	var (
		out []metav1.ManagedFieldsEntry
		me  metav1.ManagedFieldsEntry
	)
	codec.EachRawObjectMember(raw, func(k, v []byte) bool {
		switch string(k) {
		case "manager":
			me.Manager, _ = codec.RawString(v)
		case "operation":
			op, _ := codec.RawString(v)
			me.Operation = metav1.ManagedFieldsOperationType(op)
		case "apiVersion":
			me.APIVersion, _ = codec.RawString(v)
		case "fieldsType":
			me.FieldsType, _ = codec.RawString(v)
		case "subresource":
			me.Subresource, _ = codec.RawString(v)
		}
		return true
	}, func([]byte) bool {
		// An element that is not an object reads as an empty entry, as
		// in GetManagedFields.
		out = append(out, me)
		me = metav1.ManagedFieldsEntry{}
		return true
	})
	return out
}

// ItemDecoder returns the watch cache decoder for stored objects: it sets
// resourceVersion in the encoded object and extracts what selectors use.
// Stored values are json.Marshal output, so the revision is spliced into
// the bytes; a value in any other form is decoded and encoded again.
//
// def returns the resource's current definition (nil if gone): objects
// stored before its schemas last changed are pruned and defaulted with the
// storage version's schema, as upstream does on every read.
func ItemDecoder(def func() *registry.Definition) watchcache.Decoder {
	return func(key string, value []byte, rev int64) (*watchcache.Item, error) {
		d := def()
		if s := readSchema(d, rev); s != nil {
			it, err := decodeItemWith(key, value, rev, s)
			if err == nil && hasSelectableFields(d) {
				err = addSelectableFields(it, d)
			}
			return it, err
		}
		it, err := indexItem(key, value, rev)
		if err == nil && hasSelectableFields(d) {
			// Read from the item: decoding and encoding the object
			// again to build it would give the same bytes.
			err = addSelectableFields(it, d)
		}
		return it, err
	}
}

// indexItem builds the item of a stored object that needs no pruning or
// defaulting: its revision spliced into its bytes, or, for a value not in
// the stored form, decoded and encoded again.
func indexItem(key string, value []byte, rev int64) (*watchcache.Item, error) {
	buf := indexBuffers.Get().(*[]byte)
	defer func() {
		if cap(*buf) <= maxIndexBuffer {
			indexBuffers.Put(buf)
		}
	}()
	x, ok := codec.IndexStored(*buf, value, rvString(rev))
	if !ok {
		return decodeItem(key, value, rev)
	}
	*buf = x.JSON
	return indexedItem(key, rev, x), nil
}

// indexBuffers hold the objects ItemDecoder indexes while it builds their
// items, which copy what they keep. A buffer grown past maxIndexBuffer
// by a large object is left to the collector.
var indexBuffers = sync.Pool{New: func() any { return new([]byte) }}

const maxIndexBuffer = 64 << 10

// decodeItem is ItemDecoder's reference path: decode, set resourceVersion,
// encode, and read the metadata with the accessors.
func decodeItem(key string, value []byte, rev int64) (*watchcache.Item, error) {
	return decodeItemWith(key, value, rev, nil)
}

// decodeItemWith decodes a stored object, prunes and defaults it with s
// when s is not nil, and builds its item.
func decodeItemWith(key string, value []byte, rev int64, s registry.Schema) (*watchcache.Item, error) {
	obj, b, err := normalized(value, rev, s)
	if err != nil {
		return nil, fmt.Errorf("key %s: %w", key, err)
	}
	// Items live as long as their object: the strings get copies of their
	// own, not slices of the whole decoded document (newItem packs the
	// labels into a string of their own).
	u := accessor(obj)
	m := codec.Meta{Name: strings.Clone(u.GetName()), Namespace: strings.Clone(u.GetNamespace()), Labels: u.GetLabels()}
	return newItem(key, rev, b, m), nil
}

// normalized decodes a stored object, prunes and defaults it with s when s
// is not nil, and encodes it with resourceVersion rev in a buffer of its
// own size (it may outlive the request, in the cache).
func normalized(value []byte, rev int64, s registry.Schema) (map[string]any, []byte, error) {
	obj, err := decodeStored(value)
	if err != nil {
		return nil, nil, err
	}
	if s != nil {
		s.Prune(obj)
		s.Default(obj)
	}
	setRV(obj, rev)
	b, err := codec.AppendMarshal(make([]byte, 0, len(value)+64), obj)
	if err != nil {
		return nil, nil, err
	}
	if cap(b)-len(b) > len(b)/8 {
		b = bytes.Clone(b)
	}
	return obj, b, nil
}

// newItem builds a watch cache item from an encoded object with its
// resourceVersion and the metadata read from it.
func newItem(key string, rev int64, encoded []byte, m codec.Meta) *watchcache.Item {
	start, end, _ := codec.MetadataSpan(encoded)
	return metaItem(key, rev, encoded, m, start, end)
}

// indexedItem is newItem for an object indexed in one scan, in a buffer
// the caller reuses.
func indexedItem(key string, rev int64, x codec.Indexed) *watchcache.Item {
	it := itemAt(key, rev, x.Meta, x.MetaStart, x.MetaEnd)
	it.CopyJSON(x.JSON, x.Shared, x.Meta.Labels)
	if r := x.RawManagedFields; r[1] > 0 {
		it.SetRawManagedFields(r[0], r[1])
	}
	return it
}

// metaItem is newItem with where metadata is, encoded[mdStart:mdEnd]
// (mdEnd 0: not known). Field selectors read metadata.name and
// metadata.namespace from the item itself: Fields holds the selectable
// fields only.
func metaItem(key string, rev int64, encoded []byte, m codec.Meta, mdStart, mdEnd int) *watchcache.Item {
	it := itemAt(key, rev, m, mdStart, mdEnd)
	var shared [][2]int
	if mdEnd > 0 {
		// The field sets of managedFields are kept once for every object
		// that has them.
		shared = codec.FieldsV1Spans(encoded, mdStart, mdEnd)
	}
	it.SetJSON(encoded, shared, m.Labels)
	if mdEnd > 0 {
		if r := codec.RawManagedFieldsSpan(encoded, mdStart, mdEnd); r[1] > 0 {
			it.SetRawManagedFields(r[0], r[1])
		}
	}
	return it
}

// itemAt is the item of key at rev with the metadata m, whose object and
// labels, yet to be set, has its metadata at [mdStart, mdEnd).
func itemAt(key string, rev int64, m codec.Meta, mdStart, mdEnd int) *watchcache.Item {
	return &watchcache.Item{
		Key:       key,
		Revision:  rev,
		Namespace: inKey(key, m.Namespace, len(m.Name)+1),
		Name:      inKey(key, m.Name, 0),
		MetaStart: int32(mdStart),
		MetaEnd:   int32(mdEnd),
	}
}

// inKey returns s as the part of key that ends end bytes before key's end
// and follows a "/" (keys end in "<namespace>/<name>"), sharing key's
// bytes; s itself when key does not have it there. An item then holds one
// string for its key, name and namespace.
func inKey(key, s string, end int) string {
	i := len(key) - end - len(s)
	if s == "" || i < 1 || key[i-1] != '/' || key[i:len(key)-end] != s {
		return s
	}
	return key[i : len(key)-end]
}

// servesStored reports whether the answer to c is an object encoded as it
// is stored, with its revision spliced in: the plain object (JSON or YAML;
// not a Table or metadata form, not a subresource's view such as a Scale)
// in the version it is stored in. Encoding the decoded object writes the
// same bytes. A step that writeObject adds for such answers (conversion,
// pruning or defaulting on read) must turn this off where it applies.
func servesStored(c *call, encoded []byte) bool {
	return c.media.As == "" && c.present == nil && inVersion(c, encoded)
}

// writeStored answers with obj, just stored at key as data (its encoding
// without resourceVersion) at revision rev: data with the revision
// spliced in and converted to the request's version (a conversion kept
// for the watch events and reads of that revision) when the answer is the
// plain object, obj encoded otherwise.
func (h *Handler) writeStored(c *call, status int, key string, obj map[string]any, enc codec.Stored, rev int64) {
	if c.media.As == "" && c.present == nil && enc.HasRV {
		h.writeSpliced(c, status, key, obj, enc, rev)
		return
	}
	setRV(obj, rev)
	h.writeObject(c, status, obj)
}

// writeSpliced is writeStored for data whose resourceVersion splice was
// found already. An answer in JSON or YAML in the version stored, which
// every converter returns as it is (conversion.Converter), is written
// from the stored bytes and the member apart (RVSplice.Parts), without
// putting the object together for JSON or asking the converter.
func (h *Handler) writeSpliced(c *call, status int, key string, obj map[string]any, enc codec.Stored, rev int64) {
	if c.media.As != "" || c.present != nil {
		setRV(obj, rev)
		h.writeObject(c, status, obj)
		return
	}
	if c.media.Type != codec.MediaProtobuf && inVersion(c, enc.JSON) {
		codec.WriteRawParts(c.w, status, c.media, enc.RV.Parts(rvString(rev)))
		return
	}
	writeConverted(c, status, key, enc.RV.Set(rvString(rev)), rev)
}

// writeConverted answers with encoded, the object stored at key at
// revision rev (with its resourceVersion), converted to the request's
// version.
func writeConverted(c *call, status int, key string, encoded []byte, rev int64) {
	out, err := c.conv().FromStored(c.r.Context(), []conversion.Object{{JSON: encoded, Key: key, Revision: rev}})
	if err != nil {
		codec.WriteStatus(c.w, c.r, err)
		return
	}
	writeRaw(c, status, out[0])
}

// withRV returns an encoded object (json.Marshal output, as stored) with
// metadata.resourceVersion set to rev, spliced into the bytes when they
// have the expected form and by decoding and encoding again otherwise.
func withRV(encoded []byte, rev int64) ([]byte, error) {
	if b, ok := codec.SetResourceVersion(encoded, rvString(rev)); ok {
		return b, nil
	}
	obj, err := decodeStored(encoded)
	if err != nil {
		return nil, err
	}
	setRV(obj, rev)
	b, err := codec.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding object: %w", err)
	}
	return b, nil
}

// readSchema returns the schema a stored object at rev must be read with:
// the storage version's, when the object may predate it; nil otherwise.
func readSchema(def *registry.Definition, rev int64) registry.Schema {
	if def == nil || rev > def.SchemaRevision {
		return nil
	}
	sv := def.StorageVersion()
	if sv == nil {
		return nil
	}
	s, _ := sv.Schema.(registry.Schema)
	return s
}

func hasSelectableFields(d *registry.Definition) bool {
	return d != nil && len(d.SelectableFields()) > 0
}

// addSelectableFields stores the values of the definition's selectable
// fields in the item, as field selectors compare them: strings as they
// are, integers and booleans in their text form, absent fields empty;
// computed fields as the definition's FieldComputer gives them.
func addSelectableFields(it *watchcache.Item, d *registry.Definition) error {
	if _, computes := d.Hooks.(registry.FieldComputer); !computes && scanSelectableFields(it, d.SelectableFields()) {
		return nil
	}
	obj, err := decodeStored(it.JSON())
	if err != nil {
		return err
	}
	var computed map[string]string
	if fc, ok := d.Hooks.(registry.FieldComputer); ok {
		computed = fc.ComputedFields(obj)
	}
	if it.Fields == nil {
		it.Fields = make(fields.Set, len(d.SelectableFields()))
	}
	for _, p := range d.SelectableFields() {
		if v, ok := computed[p]; ok {
			it.Fields[p] = strings.Clone(v)
			continue
		}
		var s string
		switch v := nested(obj, strings.Split(p, ".")...).(type) {
		case string:
			s = strings.Clone(v) // not a slice of the decoded document
		case int64:
			s = strconv.FormatInt(v, 10)
		case bool:
			s = strconv.FormatBool(v)
		}
		it.Fields[p] = s
	}
	return nil
}

// scanSelectableFields is addSelectableFields for fields that are all
// members of the object, read in one scan of its encoding instead of
// decoding it: false (nothing stored) when the encoding is malformed or
// a field holds a number that is not a plain integer, which decoding
// words as it does.
func scanSelectableFields(it *watchcache.Item, selectable []string) bool {
	ps, err := selectablePaths(selectable)
	if err != nil {
		return false
	}
	values := make([]string, len(selectable))
	plain := true
	ok := ps.Find(it.JSON(), func(i int, v []byte) {
		switch {
		case v[0] == '"':
			s, _ := codec.StringValue(v)
			values[i] = strings.Clone(s)
		case string(v) == "true" || string(v) == "false":
			values[i] = string(v)
		case v[0] == '-' || '0' <= v[0] && v[0] <= '9':
			n, err := strconv.ParseInt(string(v), 10, 64)
			if err != nil {
				plain = false
				return
			}
			values[i] = strconv.FormatInt(n, 10)
		}
	})
	if !ok || !plain {
		return false
	}
	if it.Fields == nil {
		it.Fields = make(fields.Set, len(selectable))
	}
	for i, p := range selectable {
		it.Fields[p] = values[i]
	}
	return true
}

// selectablePaths are the member paths of selectable fields, built once
// for each set of them (a definition's; there are few).
func selectablePaths(selectable []string) (*codec.Paths, error) {
	key := strings.Join(selectable, "\x00")
	if ps, ok := selectablePathSets.Load(key); ok {
		return ps.(*codec.Paths), nil
	}
	paths := make([][]string, len(selectable))
	for i, p := range selectable {
		paths[i] = strings.Split(p, ".")
	}
	ps, err := codec.NewPaths(paths)
	if err != nil {
		return nil, err
	}
	selectablePathSets.Store(key, ps)
	return ps, nil
}

var selectablePathSets sync.Map // strings.Join(fields, "\x00") → *codec.Paths

// ttl is how long def's objects live after each write (registry.Expiring),
// 0 for as long as they are not deleted. Every write passes it on, as
// upstream attaches a lease on every write: one without would keep the
// object for good.
func ttl(def *registry.Definition) time.Duration {
	if e, ok := def.Hooks.(registry.Expiring); ok {
		return e.TTL()
	}
	return 0
}
