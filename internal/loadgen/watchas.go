package loadgen

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// Forms the watch workload's watchers ask for (Config.WatchAs), so that
// the server's cost per event is measured for each kind of watcher:
// whole objects in JSON, as the dynamic client and most informers ask;
// PartialObjectMetadata in JSON; PartialObjectMetadata in protobuf, as
// client-go's metadata client asks for it (controller-runtime's metadata
// informers, the garbage collector).
const (
	WatchAsJSON             = "json"
	WatchAsMetadata         = "metadata"
	WatchAsMetadataProtobuf = "metadata-protobuf"
)

// watchAccept is the raw client's Accept header for each form. The
// protobuf one is client-go's metadata client's: it falls back to
// metadata in JSON, then to whole objects.
var watchAccept = map[string]string{
	WatchAsJSON:             "application/json",
	WatchAsMetadata:         "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
	WatchAsMetadataProtobuf: "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json",
}

// mediaProtobuf is Kubernetes' protobuf media type; a watch in it
// answers with the parameter stream=watch.
const mediaProtobuf = "application/vnd.kubernetes.protobuf"

// protobufMagic starts every Kubernetes protobuf envelope. It is written
// out here rather than taken from the server's codec, so that the load
// generator reads the wire as any client does.
var protobufMagic = []byte("k8s\x00")

// maxProtobufFrame bounds a watch frame's length, as client-go's
// decoder bounds what it reads (16 MiB): a longer one means a stream
// out of step, not an event.
const maxProtobufFrame = 16 << 20

// protobufEvents reads a watch stream in protobuf: each frame is a
// 4-byte big-endian length, then a metav1.WatchEvent whose object is an
// envelope (protobufMagic, then a runtime.Unknown) around a
// metav1.PartialObjectMetadata, or around a metav1.Status for an ERROR
// event. The frame buffer and the messages are reused from one event to
// the next; a protobufEvents is not safe for concurrent use.
type protobufEvents struct {
	rd    io.Reader
	frame []byte
	ev    metav1.WatchEvent
	env   runtime.Unknown
	meta  metav1.PartialObjectMetadata
}

// next reads the next frame and returns its event. A frame that does not
// decode is an ERROR event saying why, and the stream goes on with the
// next frame; err is set once the stream has ended (io.EOF between
// frames) or broken, a frame cut short among them.
func (p *protobufEvents) next() (watchEvent, error) {
	var head [4]byte
	if _, err := io.ReadFull(p.rd, head[:]); err != nil {
		return watchEvent{}, err
	}
	n := binary.BigEndian.Uint32(head[:])
	if n > maxProtobufFrame {
		return watchEvent{}, fmt.Errorf("watch frame of %d bytes, over the limit of %d", n, maxProtobufFrame)
	}
	p.frame = slices.Grow(p.frame[:0], int(n))[:n]
	if _, err := io.ReadFull(p.rd, p.frame); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return watchEvent{}, fmt.Errorf("reading a watch frame of %d bytes: %w", n, err)
	}
	ev, err := p.decode(p.frame)
	if err != nil {
		return watchEvent{typ: watch.Error, seq: -1, err: err}, nil
	}
	return ev, nil
}

// decode reads one frame's WatchEvent: its type, and the update number
// of its PartialObjectMetadata (-1 when it carries none), or for an
// ERROR event its Status as the event's error.
func (p *protobufEvents) decode(frame []byte) (watchEvent, error) {
	// Unmarshal sets only the fields present and appends bytes to the
	// buffers it finds: empty them, keeping their room.
	p.ev = metav1.WatchEvent{Object: runtime.RawExtension{Raw: p.ev.Object.Raw[:0]}}
	if err := p.ev.Unmarshal(frame); err != nil {
		return watchEvent{}, fmt.Errorf("decoding a watch event: %w", err)
	}
	typ := watch.EventType(p.ev.Type)
	payload, ok := bytes.CutPrefix(p.ev.Object.Raw, protobufMagic)
	if !ok {
		return watchEvent{}, fmt.Errorf("%s watch event: object is not a protobuf envelope", typ)
	}
	p.env = runtime.Unknown{Raw: p.env.Raw[:0]}
	if err := p.env.Unmarshal(payload); err != nil {
		return watchEvent{}, fmt.Errorf("%s watch event: decoding the envelope: %w", typ, err)
	}
	switch {
	case typ == watch.Error && p.env.Kind == "Status":
		var st metav1.Status
		if err := st.Unmarshal(p.env.Raw); err != nil {
			return watchEvent{}, fmt.Errorf("ERROR watch event: decoding its Status: %w", err)
		}
		return watchEvent{typ: typ, seq: -1, err: fmt.Errorf("watch error event: %d %s: %s", st.Code, st.Reason, st.Message)}, nil
	case typ == watch.Error || p.env.Kind != "PartialObjectMetadata" || p.env.APIVersion != "meta.k8s.io/v1":
		return watchEvent{}, fmt.Errorf("%s watch event: object is %s %s, want meta.k8s.io/v1 PartialObjectMetadata", typ, p.env.APIVersion, p.env.Kind)
	}
	// The annotation map is kept for the next event, emptied.
	ann := p.meta.Annotations
	clear(ann)
	p.meta = metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Annotations: ann}}
	if err := p.meta.Unmarshal(p.env.Raw); err != nil {
		return watchEvent{}, fmt.Errorf("%s watch event: decoding its PartialObjectMetadata: %w", typ, err)
	}
	seq := int64(-1)
	if s, ok := p.meta.Annotations[annotationSeq]; ok {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			seq = n
		}
	}
	return watchEvent{typ: typ, seq: seq}, nil
}
