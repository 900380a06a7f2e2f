package cel

import (
	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	"github.com/crdserver/crdserver/internal/codec"
)

// Objects reach admission expressions with their metadata.managedFields
// possibly still encoded (a codec.Raw, which the handler keeps so that a
// write need not decode and re-encode ~90 small maps). Few expressions
// read managedFields, so the environments of policies, their messages and
// webhooks' match conditions decode a Raw only when an expression reaches
// it, and then to exactly the values decoding the object would have given.

// rawAdapter converts Go values to CEL values as the adapter it wraps
// does, except a codec.Raw, which it decodes first. It converts maps and
// lists itself, so that the values inside them are converted by it too.
// It is used by pointer: a struct handed to the maps it makes would be
// copied to the heap for each.
type rawAdapter struct {
	types.Adapter
}

func (a *rawAdapter) NativeToValue(v any) ref.Val {
	switch v := v.(type) {
	case map[string]any:
		return types.NewStringInterfaceMap(a, v)
	case []any:
		return types.NewDynamicList(a, v)
	case codec.Raw:
		d, err := codec.DecodeRaw(v)
		if err != nil {
			return types.NewErr("decoding managedFields: %v", err)
		}
		return a.NativeToValue(d)
	}
	return a.Adapter.NativeToValue(v)
}

// decodingRaw returns env converting values through a rawAdapter.
func decodingRaw(env *cel.Env) *cel.Env {
	out, err := env.Extend(cel.CustomTypeAdapter(&rawAdapter{env.CELTypeAdapter()}))
	if err != nil {
		panic("cel: decoding encoded values: " + err.Error())
	}
	return out
}
