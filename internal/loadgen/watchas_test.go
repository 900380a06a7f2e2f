package loadgen

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// marshaler is a generated protobuf message.
type marshaler interface{ Marshal() ([]byte, error) }

// protobufFrame is one frame of a protobuf watch, as kube-apiserver
// writes it: the length, then a WatchEvent around an envelope of obj.
func protobufFrame(t *testing.T, typ watch.EventType, apiVersion, kind string, obj marshaler) []byte {
	t.Helper()
	raw, err := obj.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	env, err := (&runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: apiVersion, Kind: kind}, Raw: raw}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return protobufEventFrame(t, typ, append([]byte("k8s\x00"), env...))
}

// protobufEventFrame is a frame of a WatchEvent whose object is raw.
func protobufEventFrame(t *testing.T, typ watch.EventType, raw []byte) []byte {
	t.Helper()
	ev, err := (&metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: raw}}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(ev))), ev...)
}

// partial is the PartialObjectMetadata of a widget with annotations.
func partial(annotations map[string]string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Name: "bench-1", Namespace: "bench-x", ResourceVersion: "1234",
		Labels: map[string]string{LabelRun: "x"}, Annotations: annotations,
	}}
}

func TestProtobufEvents(t *testing.T) {
	status := &metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old resource version: 5 (9)"}
	var stream []byte
	for _, f := range [][]byte{
		protobufFrame(t, watch.Modified, "meta.k8s.io/v1", "PartialObjectMetadata", partial(map[string]string{annotationSeq: "42", "other": "x"})),
		protobufFrame(t, watch.Bookmark, "meta.k8s.io/v1", "PartialObjectMetadata", &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "1240"}}),
		// The annotations of the first event must not linger.
		protobufFrame(t, watch.Modified, "meta.k8s.io/v1", "PartialObjectMetadata", partial(map[string]string{"other": "y"})),
		protobufFrame(t, watch.Added, "meta.k8s.io/v1", "PartialObjectMetadata", partial(map[string]string{annotationSeq: "43"})),
		protobufFrame(t, watch.Error, "v1", "Status", status),
		// A whole Widget, not what a metadata watch asked for.
		protobufFrame(t, watch.Modified, "bench.crdserver.io/v1", "Widget", partial(nil)),
		protobufEventFrame(t, watch.Modified, []byte(`{"kind":"PartialObjectMetadata"}`)),
		protobufFrame(t, watch.Modified, "meta.k8s.io/v1", "PartialObjectMetadata", partial(map[string]string{annotationSeq: "44"})),
	} {
		stream = append(stream, f...)
	}
	p := &protobufEvents{rd: bufio.NewReader(bytes.NewReader(stream))}
	checkEvents(t, p.next, []wantEvent{
		{typ: watch.Modified, seq: 42},
		{typ: watch.Bookmark, seq: -1},
		{typ: watch.Modified, seq: -1},
		{typ: watch.Added, seq: 43},
		{typ: watch.Error, seq: -1, wantErr: "watch error event: 410 Expired: too old resource version: 5 (9)"},
		{typ: watch.Error, seq: -1, wantErr: "object is bench.crdserver.io/v1 Widget, want meta.k8s.io/v1 PartialObjectMetadata"},
		{typ: watch.Error, seq: -1, wantErr: "not a protobuf envelope"},
		{typ: watch.Modified, seq: 44},
	})
}

// TestProtobufEventsTruncated cuts a frame at every length: a stream that
// ends inside a frame is an error, a frame whose message is cut short an
// ERROR event, and nothing panics.
func TestProtobufEventsTruncated(t *testing.T) {
	full := protobufFrame(t, watch.Modified, "meta.k8s.io/v1", "PartialObjectMetadata", partial(map[string]string{annotationSeq: "42"}))
	for n := 1; n < len(full); n++ {
		p := &protobufEvents{rd: bytes.NewReader(full[:n])}
		if _, err := p.next(); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("stream cut after %d of %d bytes: %v, want io.ErrUnexpectedEOF", n, len(full), err)
		}
		if n < 4 {
			continue
		}
		// The same bytes, framed with their own length.
		short := append(binary.BigEndian.AppendUint32(nil, uint32(n-4)), full[4:n]...)
		p = &protobufEvents{rd: bytes.NewReader(short)}
		ev, err := p.next()
		if err != nil {
			t.Errorf("frame of %d bytes: %v", n-4, err)
			continue
		}
		if ev.typ != watch.Error || ev.err == nil {
			t.Errorf("frame cut to %d of %d bytes: type %s seq %d err %v, want an ERROR event", n-4, len(full)-4, ev.typ, ev.seq, ev.err)
		}
	}
	p := &protobufEvents{rd: bytes.NewReader([]byte{0xff, 0xff, 0xff, 0xff})}
	if _, err := p.next(); err == nil || !strings.Contains(err.Error(), "over the limit") {
		t.Errorf("frame of 4 GiB: %v, want an error", err)
	}
}

func TestRawWatchMetadataJSON(t *testing.T) {
	stream := `{"type":"MODIFIED","object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"a","annotations":{"` + annotationSeq + `":"7"}}}}
{"type":"BOOKMARK","object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"9"}}}
{"type":"MODIFIED","object":{"apiVersion":"bench.crdserver.io/v1","kind":"Widget","metadata":{"name":"a","annotations":{"` + annotationSeq + `":"8"}}}}
{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","code":410,"message":"too old"}}
`
	w := &rawWatch{rd: bufio.NewReader(strings.NewReader(stream)), kind: []byte(`"kind":"PartialObjectMetadata"`)}
	checkEvents(t, w.next, []wantEvent{
		{typ: watch.Modified, seq: 7},
		{typ: watch.Bookmark, seq: -1},
		{typ: watch.Error, seq: -1, wantErr: `without "kind":"PartialObjectMetadata"`},
		{typ: watch.Error, seq: -1, wantErr: "too old"},
	})
}

// wantEvent is an event a watch reader should return: its type, its
// update number, and a part of its error's text ("": none).
type wantEvent struct {
	typ     watch.EventType
	seq     int64
	wantErr string
}

// checkEvents reads want's events with next, then the end of the stream.
func checkEvents(t *testing.T, next func() (watchEvent, error), want []wantEvent) {
	t.Helper()
	for i, w := range want {
		ev, err := next()
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if ev.typ != w.typ || ev.seq != w.seq {
			t.Errorf("event %d: type %s seq %d, want %s %d", i, ev.typ, ev.seq, w.typ, w.seq)
		}
		switch {
		case w.wantErr == "" && ev.err != nil:
			t.Errorf("event %d: error %v", i, ev.err)
		case w.wantErr != "" && (ev.err == nil || !strings.Contains(ev.err.Error(), w.wantErr)):
			t.Errorf("event %d: error %v, want one with %q", i, ev.err, w.wantErr)
		}
	}
	if _, err := next(); err != io.EOF {
		t.Errorf("after the last event: %v, want io.EOF", err)
	}
}
