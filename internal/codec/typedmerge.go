package codec

import (
	"encoding/json"
	"reflect"
	"strings"
)

// A key given twice in a JSON object is decoded by upstream's typed
// decoder (encoding/json's rules) into the value the first one left, not
// into a new one: when the key is a struct field, the second object adds
// to the first's struct fields, map keys and list items instead of
// replacing them. Bodies of resources with a Go type are decoded so here
// (DecodeOptions.GoType); elsewhere the last value wins, as upstream's
// unstructured decoding has it.

var jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()

// redecode is the value a duplicate key ends with: next decoded into
// prev, both values of the key in the object at path (ending with the
// key) of a body of type root.
func redecode(root reflect.Type, path []pathElem, prev, next any) any {
	t, ok := structFieldType(root, path)
	if !ok {
		return next
	}
	return decodeInto(t, prev, next)
}

// structFieldType is the Go type at path in a value of type root, when
// the path's last step is a struct's field: the one kind of value
// encoding/json decodes a repeated key into rather than afresh (a map's
// values are new each time).
func structFieldType(root reflect.Type, path []pathElem) (reflect.Type, bool) {
	t := root
	inStruct := false
	for _, e := range path {
		t = deref(t)
		if t == nil || decodesItself(t) {
			return nil, false
		}
		inStruct = false
		switch {
		case e.idx >= 0:
			if t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
				return nil, false
			}
			t = t.Elem()
		case t.Kind() == reflect.Map:
			t = t.Elem()
		case t.Kind() == reflect.Struct:
			if t = jsonField(t, e.key); t == nil {
				return nil, false
			}
			inStruct = true
		default:
			return nil, false
		}
	}
	return t, inStruct
}

// decodeInto is next decoded as encoding/json decodes it into prev, a
// value of type t it decoded before: struct fields are decoded into, map
// keys added, list items decoded into up to the new length; whatever else
// is replaced.
func decodeInto(t reflect.Type, prev, next any) any {
	isPtr := t.Kind() == reflect.Pointer
	t = deref(t)
	if t == nil || decodesItself(t) {
		return next
	}
	if next == nil {
		if !isPtr && t.Kind() == reflect.Struct {
			return prev // null leaves a struct as it is
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		dst, ok1 := prev.(map[string]any)
		src, ok2 := next.(map[string]any)
		if !ok1 || !ok2 {
			return next
		}
		for k, v := range src {
			// A map's values are new; a struct's fields are decoded into.
			if old, ok := dst[k]; ok && t.Kind() == reflect.Struct {
				if ft := jsonField(t, k); ft != nil {
					v = decodeInto(ft, old, v)
				}
			}
			dst[k] = v
		}
		return dst
	case reflect.Slice, reflect.Array:
		dst, ok1 := prev.([]any)
		src, ok2 := next.([]any)
		if !ok1 || !ok2 {
			return next
		}
		for i := range src {
			if i < len(dst) {
				src[i] = decodeInto(t.Elem(), dst[i], src[i])
			}
		}
		return src
	}
	return next
}

// deref is t without its pointers; nil for an interface type, whose
// values encoding/json makes anew.
func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Interface {
		return nil
	}
	return t
}

// decodesItself reports whether values of t decode themselves (a
// RawExtension, a Time): they are replaced whole.
func decodesItself(t reflect.Type) bool {
	return reflect.PointerTo(t).Implements(jsonUnmarshaler)
}

// jsonField is the type of t's field encoding/json decodes the JSON key
// into (fields of embedded structs without a name of their own included,
// the shallowest first), or nil.
func jsonField(t reflect.Type, key string) reflect.Type {
	level := []reflect.Type{t}
	for len(level) > 0 {
		var next []reflect.Type
		for _, st := range level {
			for i := range st.NumField() {
				f := st.Field(i)
				name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
				if name == "-" {
					continue
				}
				if f.Anonymous && name == "" {
					if et := deref(f.Type); et != nil && et.Kind() == reflect.Struct {
						next = append(next, et)
						continue
					}
				}
				if !f.IsExported() {
					continue
				}
				if name == "" {
					name = f.Name
				}
				if name == key {
					return f.Type
				}
			}
		}
		level = next
	}
	return nil
}
