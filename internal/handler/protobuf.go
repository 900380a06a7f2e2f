package handler

import (
	"bytes"
	"fmt"
	"mime"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/crdserver/crdserver/internal/registry"
)

// protobufType is the media type of Kubernetes protobuf bodies.
const protobufType = "application/vnd.kubernetes.protobuf"

// protobufMagic starts every Kubernetes protobuf envelope.
var protobufMagic = []byte{0x6b, 0x38, 0x73, 0x00}

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
	if !bytes.HasPrefix(body, protobufMagic) {
		return nil, apierrors.NewBadRequest("protobuf body does not start with the Kubernetes envelope prefix")
	}
	env := &runtime.Unknown{}
	if err := env.Unmarshal(body[len(protobufMagic):]); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("decoding protobuf envelope: %v", err))
	}
	return env, nil
}

// unmarshalProtobuf decodes an enveloped protobuf body into msg.
func unmarshalProtobuf(body []byte, msg registry.ProtoMessage) error {
	env, err := unwrapProtobuf(body)
	if err != nil {
		return err
	}
	if err := msg.Unmarshal(env.Raw); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("decoding protobuf %s: %v", env.Kind, err))
	}
	return nil
}
