package builtin

import (
	"fmt"
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	sigsjson "sigs.k8s.io/json"

	"github.com/crdserver/crdserver/internal/codec"
)

// Typed checks and trims built-in objects against their Go type, as
// upstream's typed decoding does: fields of the wrong JSON type are
// refused, unknown fields are reported (fieldValidation) and dropped.
// Kind and Version word the errors.
type Typed[T any] struct {
	Kind, Version string
}

// Decode decodes obj strictly into a new T, returning the strict-decoding
// complaints (unknown and duplicate fields) apart from the error, which
// reads as upstream's decoding error.
func (ty Typed[T]) Decode(obj map[string]any) (*T, []error, error) {
	data, err := codec.Marshal(obj)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding %s: %w", ty.Kind, err)
	}
	t := new(T)
	strict, err := sigsjson.UnmarshalStrict(data, t)
	if err != nil {
		return nil, nil, fmt.Errorf("%s in version %q cannot be handled as a %s: %w", ty.Kind, ty.Version, ty.Kind, err)
	}
	return t, strict, nil
}

// CheckType implements registry.TypeChecker.
func (ty Typed[T]) CheckType(obj map[string]any) error {
	_, _, err := ty.Decode(obj)
	return err
}

// UnknownFields implements registry.UnknownFielder.
func (ty Typed[T]) UnknownFields(obj map[string]any) []string {
	_, strict, err := ty.Decode(obj)
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(strict))
	for _, e := range strict {
		out = append(out, e.Error())
	}
	return out
}

// StrictErrors implements registry.StrictDecoder.
func (ty Typed[T]) StrictErrors(body []byte) (problems []string, decoded bool) {
	strict, err := sigsjson.UnmarshalStrict(body, new(T))
	if err != nil {
		return nil, false // CheckType refuses the body in upstream's words
	}
	out := make([]string, 0, len(strict))
	for _, e := range strict {
		out = append(out, e.Error())
	}
	return out, true
}

// ZeroObject implements registry.Zeroer: T's zero value as upstream's
// encoding of a new T has it, built once per type.
func (ty Typed[T]) ZeroObject() map[string]any {
	t := reflect.TypeFor[T]()
	if z, ok := zeroObjects.Load(t); ok {
		return z.(map[string]any)
	}
	z, err := runtime.DefaultUnstructuredConverter.ToUnstructured(new(T))
	if err != nil {
		z = map[string]any{} // T's zero value always converts
	}
	zeroObjects.Store(t, z)
	return z
}

// zeroObjects caches ZeroObject by T's reflect.Type; the objects are
// shared and never modified.
var zeroObjects sync.Map

// trim replaces obj's fields other than apiVersion, kind and metadata by
// their typed form, as upstream's typed decoding and encoding leave them:
// what the Go type does not have is dropped, and a struct field that is
// not a pointer is always there, {} when empty (an events.k8s.io Event's
// deprecatedSource, a Deployment's status). Metadata is the handler's
// (already normalized).
func (ty Typed[T]) trim(obj map[string]any) { ty.rewrite(obj, nil) }

// Default implements registry.Defaulter for a Go type without defaults of
// its own: the round trip through T alone, which upstream's decoding
// makes before its field manager records the writer's fields.
func (ty Typed[T]) Default(obj map[string]any) { ty.trim(obj) }

// rewrite is trim with f applied to the typed form first (defaulting in
// Go, as upstream's generated defaulters do).
func (ty Typed[T]) rewrite(obj map[string]any, f func(*T)) {
	typ := reflect.TypeFor[T]()
	if f == nil {
		if form, ok := trimmedForms.form(typ, obj); ok && trimmedForms.has(form) {
			return // a rewrite left it so (trimmed.go)
		}
	}
	t, _, err := ty.Decode(obj)
	if err != nil {
		return // CheckType refused it before this runs
	}
	if f != nil {
		f(t)
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(t)
	if err != nil {
		return
	}
	for k := range obj {
		switch k {
		case "apiVersion", "kind", "metadata":
		default:
			delete(obj, k)
		}
	}
	for k, v := range u {
		switch k {
		case "apiVersion", "kind", "metadata":
		default:
			obj[k] = v
		}
	}
	if form, ok := trimmedForms.form(typ, obj); ok {
		trimmedForms.add(form)
	}
}
