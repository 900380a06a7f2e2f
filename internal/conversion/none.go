package conversion

import (
	"bytes"
	"context"

	"github.com/crdserver/crdserver/internal/registry"
)

// None is the None strategy: only apiVersion changes. Between versions
// that share a schema that is a rewrite of the encoded bytes; otherwise
// the object is pruned and defaulted with the target version's schema, as
// the CRD documentation describes.
type None struct {
	Def *registry.Definition
}

var _ Converter = None{}

func (n None) Convert(_ context.Context, to string, objs []Object) ([][]byte, error) {
	out := make([][]byte, len(objs))
	for i, o := range objs {
		b, err := n.convert(o.Bytes(), to)
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

func (n None) convert(b []byte, to string) ([]byte, error) {
	from, ok := APIVersion(b)
	if ok && from == to {
		return b, nil
	}
	if ok && n.sameSchema(from, to) {
		out, _ := SetAPIVersion(b, to)
		return out, nil
	}
	obj, err := Decode(b)
	if err != nil {
		return nil, err
	}
	from, _ = obj["apiVersion"].(string)
	obj["apiVersion"] = to
	var s registry.Schema
	if !n.sameSchema(from, to) {
		s = targetSchema(n.Def, to)
	}
	return finish(obj, s)
}

// sameSchema reports whether apiVersions from and to are versions of the
// definition with the same schema (or both none): an object valid in one
// is then valid in the other and needs no pruning or defaulting.
func (n None) sameSchema(from, to string) bool {
	if n.Def == nil {
		return true
	}
	f, t := versionOf(n.Def, from), versionOf(n.Def, to)
	if f == nil || t == nil {
		return false
	}
	return f == t || bytes.Equal(f.OpenAPISchema, t.OpenAPISchema)
}

// Rewrite is None's fast path for a writer that streams objects: when b
// only needs its apiVersion changed to to, it returns the bytes after the
// apiVersion's value (from its closing quote), which follow
// `{"apiVersion":"` + to; ok is false when b needs Convert.
func (n None) Rewrite(b []byte, to string) (rest []byte, ok bool) {
	if !bytes.HasPrefix(b, []byte(avPrefix)) {
		return nil, false
	}
	r := b[len(avPrefix):]
	end := bytes.IndexByte(r, '"')
	if end < 0 || bytes.IndexByte(r[:end], '\\') >= 0 || !n.sameSchema(string(r[:end]), to) {
		return nil, false
	}
	return r[end:], true
}
