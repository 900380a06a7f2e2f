package handler

import (
	"encoding/json"

	"github.com/crdserver/crdserver/internal/registry"
)

// ProtobufJSON decodes a protobuf body (a request's, or a response's) of
// def at version into JSON, for the audit log, which records objects as
// JSON whatever the client spoke. ok is false when def has no protobuf
// form or the body does not decode.
func ProtobufJSON(def *registry.Definition, version string, body []byte) (_ []byte, ok bool) {
	hooks := def.Hooks
	if vt, ok := def.Hooks.(registry.VersionTyped); ok {
		hooks = vt.TypedIn(version)
	}
	obj, err := decodeProtobuf(hooks, body)
	if err != nil || obj == nil {
		return nil, false
	}
	data, err := json.Marshal(obj)
	return data, err == nil
}
