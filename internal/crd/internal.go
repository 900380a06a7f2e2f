package crd

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sort"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Some upstream errors carry spec.versions as their value, rendered as JSON
// of upstream's internal Go types, which have no json tags: keys are Go
// field names, every field appears, and per-version fields shared by all
// versions are absent (lifted to the top). internalVersions reproduces that
// text from the v1 types, whose fields have the same names and order
// (except JSONSchemaProps.Nullable, which the internal type lists right
// after Type).
func internalVersions(versions []apiextensionsv1.CustomResourceDefinitionVersion, sh shared) json.RawMessage {
	l := make([]apiextensionsv1.CustomResourceDefinitionVersion, len(versions))
	for i, v := range versions {
		l[i] = sh.perVersion(v)
	}
	var buf bytes.Buffer
	writeGoJSON(&buf, reflect.ValueOf(l))
	return json.RawMessage(buf.Bytes())
}

var (
	jsonType        = reflect.TypeOf(apiextensionsv1.JSON{})
	schemaPropsType = reflect.TypeOf(apiextensionsv1.JSONSchemaProps{})
)

func writeGoJSON(buf *bytes.Buffer, v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			buf.WriteString("null")
			return
		}
		writeGoJSON(buf, v.Elem())
	case reflect.Struct:
		if v.Type() == jsonType {
			// The internal JSON is the decoded value itself.
			raw := v.Interface().(apiextensionsv1.JSON).Raw
			var x any
			if len(raw) == 0 || json.Unmarshal(raw, &x) != nil {
				buf.WriteString("null")
				return
			}
			writeLeaf(buf, x)
			return
		}
		buf.WriteByte('{')
		first := true
		for _, i := range fieldOrder(v.Type()) {
			f := v.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			if !first {
				buf.WriteByte(',')
			}
			first = false
			writeLeaf(buf, f.Name)
			buf.WriteByte(':')
			writeGoJSON(buf, v.Field(i))
		}
		buf.WriteByte('}')
	case reflect.Map:
		if v.IsNil() {
			buf.WriteString("null")
			return
		}
		keys := make([]string, 0, v.Len())
		for _, k := range v.MapKeys() {
			keys = append(keys, k.String())
		}
		sort.Strings(keys)
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeLeaf(buf, k)
			buf.WriteByte(':')
			writeGoJSON(buf, v.MapIndex(reflect.ValueOf(k).Convert(v.Type().Key())))
		}
		buf.WriteByte('}')
	case reflect.Slice:
		if v.IsNil() {
			buf.WriteString("null")
			return
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			writeLeaf(buf, v.Interface())
			return
		}
		buf.WriteByte('[')
		for i := 0; i < v.Len(); i++ {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeGoJSON(buf, v.Index(i))
		}
		buf.WriteByte(']')
	default:
		writeLeaf(buf, v.Interface())
	}
}

func writeLeaf(buf *bytes.Buffer, x any) {
	b, err := json.Marshal(x)
	if err != nil {
		buf.WriteString("null")
		return
	}
	buf.Write(b)
}

// fieldOrder returns the struct's field indexes in the internal type's order.
func fieldOrder(t reflect.Type) []int {
	idx := make([]int, 0, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		idx = append(idx, i)
	}
	if t != schemaPropsType {
		return idx
	}
	nullable, _ := t.FieldByName("Nullable")
	out := make([]int, 0, len(idx))
	for _, i := range idx {
		if i == nullable.Index[0] {
			continue
		}
		out = append(out, i)
		if t.Field(i).Name == "Type" {
			out = append(out, nullable.Index[0])
		}
	}
	return out
}
