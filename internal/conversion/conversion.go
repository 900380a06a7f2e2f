// Package conversion moves custom resources between the versions of their
// definition: the None strategy rewrites apiVersion (in the encoded bytes,
// without decoding, when the two versions share a schema), the Webhook
// strategy sends ConversionReviews. Converted objects are pruned and
// defaulted with the target version's schema.
//
// The handler converts at two places of every request: a request object
// to the storage version before it is stored, and stored objects to the
// request's version before they are answered (get, list, watch, and the
// current object an update starts from).
package conversion

import (
	"bytes"
	"context"
	"fmt"
	"math"

	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/registry"
)

// Object is one encoded object to convert: JSON as the server stores it
// (json.Marshal output, so apiVersion comes first).
type Object struct {
	JSON []byte
	// Cached, when JSON is nil, holds the object instead: a cached
	// object that may keep its bytes in parts. They are put together only
	// where a converter needs them whole, not when a kept conversion
	// answers for the object (a warm list of 10,000 objects would
	// otherwise copy 35 MB to use none of it).
	Cached Encoded
	// Key and Revision name a stored object at one revision: its
	// conversions are kept and reused while it is unchanged. Key "" marks
	// an object that is not stored (a request's), never reused.
	Key      string
	Revision int64
}

// Encoded is an object kept encoded (a watch cache item).
type Encoded interface {
	// Head returns the object's first bytes without copying: its
	// apiVersion when the object starts with it.
	Head() []byte
	// JSON returns the whole object.
	JSON() []byte
	// AppendPieces appends the pieces JSON is made of, in order, to dst,
	// without copying them: what a review sends and an answer is
	// compared with. They must not be modified.
	AppendPieces(dst [][]byte) [][]byte
}

// Bytes returns the whole encoded object.
func (o Object) Bytes() []byte {
	if o.JSON == nil && o.Cached != nil {
		return o.Cached.JSON()
	}
	return o.JSON
}

// headAPIVersion returns the apiVersion the object starts with, read
// without putting it together (APIVersion).
func (o Object) headAPIVersion() (string, bool) {
	head := o.JSON
	if head == nil && o.Cached != nil {
		head = o.Cached.Head()
	}
	return APIVersion(head)
}

// apiVersion returns the object's apiVersion, decoding it only when it
// does not start with it.
func (o Object) apiVersion() (string, error) {
	if av, ok := o.headAPIVersion(); ok {
		return av, nil
	}
	return apiVersionOf(o.Bytes())
}

// Converter converts a definition's objects to one of its versions.
// Implementations are built once per definition and safe for concurrent
// use.
type Converter interface {
	// Convert returns objs converted to apiVersion to ("group/version"),
	// in order. Objects already at to come back as they are (the same
	// slice); the others in new slices. Either every object converts or
	// the error says why none did.
	Convert(ctx context.Context, to string, objs []Object) ([][]byte, error)
}

// EachConverter is a Converter that hands results over as they come:
// ConvertEach converts objs as Convert does, calling each with every
// object's result in order, each as soon as it and those before it are
// converted, so that the caller can use the first while later ones still
// convert. The first error (the converter's or each's) ends it, after
// each may have seen some of the objects.
//
// Pending reports whether converting objs to to would wait for a
// conversion (some object is neither at to nor converted already): when
// none would, handing results over as they come buys nothing.
type EachConverter interface {
	Converter
	ConvertEach(ctx context.Context, to string, objs []Object, each func(i int, b []byte) error) error
	Pending(to string, objs []Object) bool
}

var _ EachConverter = (*Webhook)(nil)

// Func adapts a function to Converter.
type Func func(ctx context.Context, to string, objs []Object) ([][]byte, error)

func (f Func) Convert(ctx context.Context, to string, objs []Object) ([][]byte, error) {
	return f(ctx, to, objs)
}

var _ Converter = Func(nil)

// For returns def's converter: the one built for it (Definition.Converter),
// a built-in's own conversion between Go types (Typed), or None.
func For(def *registry.Definition) Converter {
	if c, ok := def.Converter.(Converter); ok {
		return c
	}
	if vc, ok := def.Hooks.(registry.VersionConverter); ok {
		return Typed{Def: def, VC: vc}
	}
	return None{Def: def}
}

// ConvertObject converts one decoded object to apiVersion to. With None
// and versions that share a schema only apiVersion changes, in place;
// otherwise the object is encoded, converted and decoded again.
func ConvertObject(ctx context.Context, c Converter, obj map[string]any, to string) (map[string]any, error) {
	from, _ := obj["apiVersion"].(string)
	if from == to {
		return obj, nil
	}
	if n, ok := c.(None); ok && n.sameSchema(from, to) {
		obj["apiVersion"] = to
		return obj, nil
	}
	b, err := codec.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding object: %w", err)
	}
	out, err := c.Convert(ctx, to, []Object{{JSON: b}})
	if err != nil {
		return nil, err
	}
	return Decode(out[0])
}

// Decode decodes an encoded object as the handler does (integers as
// int64).
func Decode(b []byte) (map[string]any, error) {
	obj, _, err := codec.Decode(b, "", codec.DecodeOptions{MaxBytes: math.MaxInt64})
	if err != nil {
		return nil, fmt.Errorf("decoding converted object: %w", err)
	}
	if obj == nil {
		return nil, fmt.Errorf("decoding converted object: not an object")
	}
	return obj, nil
}

const avPrefix = `{"apiVersion":"`

// APIVersion reads the apiVersion an encoded object starts with; ok is
// false when it does not start with one (or the value has escapes), and
// the caller must decode it.
func APIVersion(b []byte) (av string, ok bool) {
	if !bytes.HasPrefix(b, []byte(avPrefix)) {
		return "", false
	}
	rest := b[len(avPrefix):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 || bytes.IndexByte(rest[:end], '\\') >= 0 {
		return "", false
	}
	return string(rest[:end]), true
}

// SetAPIVersion returns a copy of an encoded object with apiVersion to;
// ok is false when the object does not start with its apiVersion.
func SetAPIVersion(b []byte, to string) ([]byte, bool) {
	if !bytes.HasPrefix(b, []byte(avPrefix)) {
		return nil, false
	}
	rest := b[len(avPrefix):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 || bytes.IndexByte(rest[:end], '\\') >= 0 {
		return nil, false
	}
	out := make([]byte, 0, len(b)-end+len(to))
	out = append(out, avPrefix...)
	out = append(out, to...)
	return append(out, rest[end:]...), true
}

// apiVersionOf is APIVersion, decoding when the bytes are in another form.
func apiVersionOf(b []byte) (string, error) {
	if av, ok := APIVersion(b); ok {
		return av, nil
	}
	obj, err := Decode(b)
	if err != nil {
		return "", err
	}
	av, _ := obj["apiVersion"].(string)
	return av, nil
}

// finish prunes and defaults a converted object with s, the target
// version's schema (nil: neither), and encodes it.
func finish(obj map[string]any, s registry.Schema) ([]byte, error) {
	if s != nil {
		s.Prune(obj)
		s.Default(obj)
	}
	b, err := codec.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding converted object: %w", err)
	}
	return b, nil
}

// versionOf returns the version named by apiVersion av of def's group.
func versionOf(def *registry.Definition, av string) *registry.Version {
	v := av
	if def.Group != "" {
		if len(av) <= len(def.Group) || av[:len(def.Group)] != def.Group || av[len(def.Group)] != '/' {
			return nil
		}
		v = av[len(def.Group)+1:]
	}
	for i := range def.Versions {
		if def.Versions[i].Name == v {
			return &def.Versions[i]
		}
	}
	return nil
}

// targetSchema is the schema objects converted to av are pruned and
// defaulted with, nil when there is none.
func targetSchema(def *registry.Definition, av string) registry.Schema {
	if v := versionOf(def, av); v != nil {
		s, _ := v.Schema.(registry.Schema)
		return s
	}
	return nil
}
