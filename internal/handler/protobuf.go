package handler

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/registry"
	"github.com/crdserver/crdserver/internal/watchcache"
)

// protobufType is the media type of Kubernetes protobuf bodies.
const protobufType = "application/vnd.kubernetes.protobuf"

// isProtobuf reports whether a request body is protobuf.
func isProtobuf(contentType string) bool {
	mt, _, _ := mime.ParseMediaType(contentType)
	return mt == protobufType
}

// decodeProtobuf decodes a protobuf body of a built-in with a Go type into
// the unstructured form the rest of the request path uses; hooks are the
// request version's typed hooks.
func decodeProtobuf(hooks any, body []byte) (map[string]any, error) {
	pb, ok := hooks.(registry.Protobuf)
	if !ok {
		return nil, nil
	}
	msg := pb.NewProtobuf()
	env, err := unwrapProtobuf(body)
	if err != nil {
		return nil, err
	}
	if err := msg.Unmarshal(env.Raw); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("decoding protobuf %s: %v", env.Kind, err))
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(msg)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("converting protobuf %s: %v", env.Kind, err))
	}
	if env.APIVersion != "" {
		obj["apiVersion"] = env.APIVersion
	}
	if env.Kind != "" {
		obj["kind"] = env.Kind
	}
	dropNulls(obj)
	return obj, nil
}

// dropNulls removes the null fields a Go struct's zero values encode to
// (creationTimestamp: null, spec: {} ...), which a JSON client would not
// have sent.
func dropNulls(m map[string]any) {
	for k, v := range m {
		switch x := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			dropNulls(x)
		}
	}
}

// unwrapProtobuf reads the Kubernetes protobuf envelope.
func unwrapProtobuf(body []byte) (*runtime.Unknown, error) {
	payload, ok := codec.ProtobufPayload(body)
	if !ok {
		return nil, apierrors.NewBadRequest("protobuf body does not start with the Kubernetes envelope prefix")
	}
	env := &runtime.Unknown{}
	if err := env.Unmarshal(payload); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("decoding protobuf envelope: %v", err))
	}
	return env, nil
}

// protoMarshaler is what generated Kubernetes types implement besides
// registry.ProtoMessage.
type protoMarshaler interface {
	Marshal() ([]byte, error)
}

// protobufHooks returns the request version's typed hooks when the
// resource has a protobuf form to answer in, else nil.
func protobufHooks(c *call) registry.Protobuf {
	if !goTyped(c.def) {
		return nil
	}
	pb, ok := typedHooks(c).(registry.Protobuf)
	if !ok {
		return nil
	}
	if _, ok := pb.NewProtobuf().(protoMarshaler); !ok {
		return nil
	}
	return pb
}

// protobufMessage encodes one JSON object of the resource as its Go
// type's protobuf message, without the envelope.
func protobufMessage(c *call, jsonBytes []byte) ([]byte, error) {
	// Negotiation chose protobuf only for resources protobufHooks accepts.
	msg := typedHooks(c).(registry.Protobuf).NewProtobuf()
	if err := json.Unmarshal(jsonBytes, msg); err != nil {
		return nil, fmt.Errorf("decoding %s for protobuf: %w", c.def.Kind, err)
	}
	return msg.(protoMarshaler).Marshal()
}

// protobufObject is a JSON object of the resource (or a Status) in
// protobuf with its envelope.
func protobufObject(c *call, jsonBytes []byte) ([]byte, error) {
	var tm metav1.TypeMeta
	if err := json.Unmarshal(jsonBytes, &tm); err != nil {
		return nil, err
	}
	var raw []byte
	var err error
	switch {
	case tm.Kind == "Status":
		var st metav1.Status
		if err = json.Unmarshal(jsonBytes, &st); err == nil {
			raw, err = st.Marshal()
		}
	case c.media.As != "":
		// Negotiation offers protobuf in no other form than the
		// metadata ones: the object is a PartialObjectMetadata.
		md, _, _ := codec.FindPath(jsonBytes, []string{"metadata"})
		raw, err = partialMetadataProtobuf(nil, md)
	default:
		raw, err = protobufMessage(c, jsonBytes)
	}
	if err != nil {
		return nil, err
	}
	return codec.ProtobufEnvelope(tm.APIVersion, tm.Kind, raw)
}

// writeProtobuf answers one JSON object of the resource in protobuf.
func writeProtobuf(c *call, status int, jsonBytes []byte) {
	b, err := protobufObject(c, jsonBytes)
	writeProtobufBody(c, status, b, err)
}

// writeProtobufBody answers b, an enveloped protobuf message, or the
// error that made it.
func writeProtobufBody(c *call, status int, b []byte, err error) {
	if err != nil {
		codec.WriteStatus(c.w, c.r, apierrors.NewInternalError(err))
		return
	}
	c.w.Header().Set("Content-Type", codec.MediaProtobuf)
	c.w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	c.w.WriteHeader(status)
	c.w.Write(b)
}

// protobufList is a list of the resource in protobuf: every Kubernetes list
// message is its ListMeta (field 1) and its items (field 2).
func protobufList(c *call, lm metav1.ListMeta, l listed) ([]byte, error) {
	md, err := lm.Marshal()
	if err != nil {
		return nil, err
	}
	raw := protowire.AppendTag(nil, 1, protowire.BytesType)
	raw = protowire.AppendBytes(raw, md)
	for i := range l.len() {
		m, err := protobufMessage(c, l.at(i).bytes())
		if err != nil {
			return nil, err
		}
		raw = protowire.AppendTag(raw, 2, protowire.BytesType)
		raw = protowire.AppendBytes(raw, m)
	}
	return codec.ProtobufEnvelope(c.apiVersion(), c.def.ListKind, raw)
}

// protobufListBuffered is the size of metadata (as JSON) up to which a
// protobuf metadata list is encoded once into a buffer; a larger one is
// encoded twice, first to learn its length, which the envelope states
// before the items, then as it is written, so that an unpaged list of
// tens of thousands of objects never holds its megabytes at once. Paged
// lists (informers ask for 500 objects) stay well under it.
const protobufListBuffered = 4 << 20

// writeProtobufMetadataList writes a meta.k8s.io/v1
// PartialObjectMetadataList in protobuf, of the listed objects' encoded
// metadata, to w, after calling start with its length: the envelope and
// the list up to its items, then the items, never copied into the
// envelope as marshalling the whole list would. start is called only when
// every item has encoded. The items carry no kind or apiVersion: protobuf
// has no place for them, and clients compare them with what a get of each
// returns.
func writeProtobufMetadataList(w io.Writer, start func(n int), lm metav1.ListMeta, metas listedMeta, bufferUpTo int) error {
	size := 0
	for i := range metas.len() {
		size += metas.at(i).len()
	}
	var buf, om, items []byte
	// each appends the items to out, handing out to flush (when set)
	// whenever it holds 32 KB or more.
	each := func(out []byte, flush func([]byte) ([]byte, error)) ([]byte, error) {
		for i := range metas.len() {
			buf = metas.at(i).appendTo(buf[:0])
			var err error
			if om, err = objectMetaProtobuf(om[:0], buf); err != nil {
				return nil, err
			}
			// Item (field 2): a PartialObjectMetadata, whose field 1 is om.
			out = protowire.AppendTag(out, 2, protowire.BytesType)
			out = protowire.AppendVarint(out, uint64(protowire.SizeTag(1)+protowire.SizeBytes(len(om))))
			out = protowire.AppendTag(out, 1, protowire.BytesType)
			out = protowire.AppendBytes(out, om)
			if flush != nil && len(out) >= 32<<10 {
				if out, err = flush(out); err != nil {
					return nil, err
				}
			}
		}
		return out, nil
	}
	itemsLen := 0
	buffered := size <= bufferUpTo
	if buffered {
		// Protobuf is smaller than its JSON, but for tags.
		var err error
		if items, err = each(make([]byte, 0, size+size/8), nil); err != nil {
			return err
		}
		itemsLen = len(items)
	} else {
		// The first pass counts.
		count := func(b []byte) ([]byte, error) { itemsLen += len(b); return b[:0], nil }
		rest, err := each(make([]byte, 0, 64<<10), count)
		if err != nil {
			return err
		}
		itemsLen += len(rest)
	}
	head, err := protobufMetadataListHead(lm, itemsLen)
	if err != nil {
		return err
	}
	start(len(head) + itemsLen)
	if _, err := w.Write(head); err != nil {
		return err
	}
	if buffered {
		_, err := w.Write(items)
		return err
	}
	written := 0
	write := func(b []byte) ([]byte, error) {
		written += len(b)
		_, err := w.Write(b)
		return b[:0], err
	}
	rest, err := each(make([]byte, 0, 64<<10), write)
	if err == nil {
		_, err = write(rest)
	}
	if err == nil && written != itemsLen {
		// The same metadata encodes alike: this would be a bug.
		err = fmt.Errorf("metadata list items encoded to %d bytes, then %d", itemsLen, written)
	}
	return err
}

// protobufMetadataListHead is a protobuf PartialObjectMetadataList's
// envelope and list up to items of itemsLen bytes.
func protobufMetadataListHead(lm metav1.ListMeta, itemsLen int) ([]byte, error) {
	md, err := lm.Marshal()
	if err != nil {
		return nil, err
	}
	list := protowire.AppendTag(nil, 1, protowire.BytesType)
	list = protowire.AppendBytes(list, md)
	// The envelope: its type (field 1), then its raw message (field 2),
	// whose bytes are the list: list, then the items.
	typ := protowire.AppendTag(nil, 1, protowire.BytesType)
	typ = protowire.AppendString(typ, metav1.SchemeGroupVersion.String())
	typ = protowire.AppendTag(typ, 2, protowire.BytesType)
	typ = protowire.AppendString(typ, "PartialObjectMetadataList")
	head := codec.AppendProtobufMagic(nil)
	head = protowire.AppendTag(head, 1, protowire.BytesType)
	head = protowire.AppendBytes(head, typ)
	head = protowire.AppendTag(head, 2, protowire.BytesType)
	head = protowire.AppendVarint(head, uint64(len(list)+itemsLen))
	return append(head, list...), nil
}

// partialMetadataProtobuf appends the PartialObjectMetadata message (its
// field 1, the ObjectMeta) of an object's encoded metadata to dst.
func partialMetadataProtobuf(dst, metadata []byte) ([]byte, error) {
	om, err := objectMetaProtobuf(nil, metadata)
	if err != nil {
		return nil, err
	}
	dst = protowire.AppendTag(dst, 1, protowire.BytesType)
	return protowire.AppendBytes(dst, om), nil
}

// objectMetaProtobuf appends the ObjectMeta message of an object's encoded
// metadata to dst.
func objectMetaProtobuf(dst, metadata []byte) ([]byte, error) {
	if om, ok := codec.AppendObjectMetaProtobuf(dst, metadata); ok {
		return om, nil
	}
	// Not as stored: the Go type's decoding reads it, or says what is
	// wrong.
	var meta metav1.ObjectMeta
	if len(metadata) > 0 {
		if err := utiljson.Unmarshal(metadata, &meta); err != nil {
			return nil, fmt.Errorf("decoding metadata for protobuf: %w", err)
		}
	}
	om, err := meta.Marshal()
	if err != nil {
		return nil, err
	}
	return append(dst, om...), nil
}

// protobufWatchEvent reads a JSON watch frame ({"type":…,"object":…}) as
// the type and the object in protobuf, with its envelope.
func protobufWatchEvent(c *call, jsonFrame []byte) (typ string, obj []byte, err error) {
	var ev struct {
		Type   string          `json:"type"`
		Object json.RawMessage `json:"object"`
	}
	if err := json.Unmarshal(jsonFrame, &ev); err != nil {
		return "", nil, err
	}
	obj, err = protobufObject(c, ev.Object)
	return ev.Type, obj, err
}

// appendWatchEventFrame appends upstream's protobuf watch frame of an
// event of type typ about obj, an enveloped protobuf message: the length
// of a WatchEvent (4 bytes, big-endian), then the WatchEvent, whose
// object's raw bytes (field 2's field 1) are obj. Only obj is copied.
func appendWatchEventFrame(buf *bytes.Buffer, typ string, obj []byte) {
	raw := 0
	if obj != nil {
		raw = protowire.SizeTag(1) + protowire.SizeBytes(len(obj))
	}
	n := protowire.SizeTag(1) + protowire.SizeBytes(len(typ)) + protowire.SizeTag(2) + protowire.SizeBytes(raw)
	var scratch [64]byte
	head := binary.BigEndian.AppendUint32(scratch[:0], uint32(n))
	head = protowire.AppendTag(head, 1, protowire.BytesType)
	head = protowire.AppendString(head, typ)
	head = protowire.AppendTag(head, 2, protowire.BytesType)
	head = protowire.AppendVarint(head, uint64(raw))
	if obj != nil {
		head = protowire.AppendTag(head, 1, protowire.BytesType)
		head = protowire.AppendVarint(head, uint64(len(obj)))
	}
	buf.Write(head)
	buf.Write(obj)
}

// writeRaw answers a JSON-encoded object of the resource in the negotiated
// form.
func writeRaw(c *call, status int, jsonBytes []byte) {
	if c.media.Type == codec.MediaProtobuf {
		writeProtobuf(c, status, jsonBytes)
		return
	}
	codec.WriteRaw(c.w, status, c.media, jsonBytes)
}

// writeItem is writeRaw of a cached object, written as the cache holds
// it when it goes out as it is.
func writeItem(c *call, status int, it *watchcache.Item) {
	if c.media.Type == codec.MediaProtobuf {
		writeProtobuf(c, status, it.JSON())
		return
	}
	codec.WriteRawParts(c.w, status, c.media, it)
}

// writeObj answers an object of the resource (or a Status) in the
// negotiated form.
func writeObj(c *call, status int, obj any) {
	if c.media.Type == codec.MediaProtobuf {
		b, err := codec.Marshal(obj)
		if err != nil {
			codec.WriteStatus(c.w, c.r, apierrors.NewInternalError(err))
			return
		}
		writeProtobuf(c, status, b)
		return
	}
	codec.WriteObject(c.w, status, c.media, obj)
}
