package codec

import (
	"bytes"
	"net/http"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// protobufMagic starts every Kubernetes protobuf envelope.
var protobufMagic = []byte{0x6b, 0x38, 0x73, 0x00}

// ProtobufPayload returns what follows the envelope's magic prefix in
// body, false when body does not start with it.
func ProtobufPayload(body []byte) ([]byte, bool) {
	return bytes.CutPrefix(body, protobufMagic)
}

// AppendProtobufMagic appends the envelope's magic prefix to dst, for
// callers that write an envelope in parts.
func AppendProtobufMagic(dst []byte) []byte { return append(dst, protobufMagic...) }

// ProtobufEnvelope wraps a protobuf message in Kubernetes' envelope: the
// magic prefix, then a runtime.Unknown naming its apiVersion and kind.
func ProtobufEnvelope(apiVersion, kind string, raw []byte) ([]byte, error) {
	env := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: apiVersion, Kind: kind}, Raw: raw}
	b, err := env.Marshal()
	if err != nil {
		return nil, err
	}
	return append(slices.Clip(protobufMagic), b...), nil
}

// writeProtobufStatus answers st in protobuf, as upstream answers a client
// that prefers protobuf, whatever the resource.
func writeProtobufStatus(w http.ResponseWriter, st *metav1.Status) error {
	raw, err := st.Marshal()
	if err != nil {
		return err
	}
	b, err := ProtobufEnvelope("v1", "Status", raw)
	if err != nil {
		return err
	}
	writeBody(w, int(st.Code), MediaProtobuf, b)
	return nil
}
