package openapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A group version's documents are spliced from pieces, one per served
// resource version, each already encoded. With hundreds of CRDs in one
// group version, re-encoding the whole document after one of them changed
// is what a client would wait for (about half a second for 500 CRDs,
// BenchmarkRebuildOneOf500); re-rendering the one that changed and copying
// the others' bytes costs a few milliseconds. The spliced bytes are what
// json.Marshal of the whole document gives (reference_test.go holds that
// oracle): objects with their keys sorted, HTML characters escaped.

// piece is what one served resource version contributes to its group
// version's documents. It is immutable (but for its v2 form, rendered on
// first use: only /openapi/v2 needs it) and is reused by later builds for as
// long as its entry's fingerprint stays the same.
type piece struct {
	gv     schema.GroupVersion
	entry  entry
	paths  []rawPair // v3 path items by path
	models []rawPair // the models built for the resource (not the library's)
	// refs are the model names that paths and models refer to, without
	// duplicates.
	refs []string

	v2Once   sync.Once
	v2Paths  []rawPair
	v2Models []rawPair
	v2Err    error
}

// rawPair is one key of a document object with its value, encoded.
type rawPair struct {
	key string
	raw json.RawMessage
}

// newPiece renders and encodes what e contributes to gv's v3 document. A
// resource whose schema cannot be decoded contributes nothing (and is
// logged) rather than failing the whole group version.
func newPiece(gv schema.GroupVersion, e entry) (*piece, error) {
	// The piece keeps what rendering its v2 form reads, not the compiled
	// schemas (which a later definition with the same fingerprint
	// replaces).
	def, version := *e.def, *e.version
	def.Versions, version.Schema = nil, nil
	p := &piece{gv: gv, entry: entry{&def, &version}}
	var err error
	var refs []string
	p.paths, p.models, err = render(gv, e, false, func(v any) { refs = collectRefs(v, refs) })
	if err != nil {
		return nil, err
	}
	slices.Sort(refs)
	p.refs = slices.Compact(refs)
	return p, nil
}

// v2 returns the piece's paths and models in the v2 form.
func (p *piece) v2() (paths, models []rawPair, err error) {
	p.v2Once.Do(func() {
		p.v2Paths, p.v2Models, p.v2Err = render(p.gv, p.entry, true, func(any) {})
	})
	return p.v2Paths, p.v2Models, p.v2Err
}

// render encodes the paths and models e contributes to gv's v3 document or,
// with v2 set, to the v2 one, calling seen with each v3 value it encodes.
func render(gv schema.GroupVersion, e entry, v2 bool, seen func(any)) (paths, models []rawPair, err error) {
	gvk := gv.WithKind(e.def.Kind)
	obj, err := objectSchema(e.version, gvk)
	if err != nil {
		if !v2 {
			slog.Warn("leaving a resource out of OpenAPI", "group", gv.Group, "version", gv.Version, "resource", e.def.Resource, "err", err)
		}
		return nil, nil, nil
	}
	encode := func(to []rawPair, key string, v3 any, toV2 func() (any, error)) ([]rawPair, error) {
		v := v3
		if v2 {
			if v, err = toV2(); err != nil {
				return nil, err
			}
		} else {
			seen(v3)
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("encoding OpenAPI of %s: %w", gvk, err)
		}
		return append(to, rawPair{key: key, raw: b}), nil
	}
	l := lib()
	model := modelName(gvk)
	listGVK := gv.WithKind(e.def.ListKind)
	listModel := modelName(listGVK)
	// Built-ins' models come from the library, pre-encoded.
	if _, ok := l.models[model]; !ok {
		if models, err = encode(models, model, obj, func() (any, error) { return objectSchemaV2(e.version, gvk) }); err != nil {
			return nil, nil, err
		}
	}
	// Only list operations answer with a list: a resource that is only
	// created (the reviews) has no list model, as upstream's have none.
	if _, ok := l.models[listModel]; !ok && serves(e.def, "list") {
		list := listSchema(e.def, e.version, listGVK, model)
		if models, err = encode(models, listModel, list, func() (any, error) { return toV2(list), nil }); err != nil {
			return nil, nil, err
		}
	}
	for _, item := range resourcePaths(e.def, e.version, gvk, model, listModel) {
		var v3 any
		if !v2 {
			v3 = item.v3(gv)
		}
		if paths, err = encode(paths, item.path, v3, func() (any, error) { return item.v2(gv), nil }); err != nil {
			return nil, nil, err
		}
	}
	return paths, models, nil
}

// splice is the v3 document of a group version made of pieces (in entry
// order: a later piece's key replaces an earlier one's, as assignments to
// one map would), with the names of the library models it holds.
func splice(gv schema.GroupVersion, pieces []*piece) (v3 []byte, libModels []string) {
	l := lib()
	paths := map[string]json.RawMessage{}
	schemas := map[string]json.RawMessage{}
	for _, p := range pieces {
		for _, kv := range p.paths {
			paths[kv.key] = kv.raw
		}
		for _, kv := range p.models {
			schemas[kv.key] = kv.raw
		}
	}
	// The document holds the resources' models and the library models
	// they and the paths refer to, transitively.
	var queue []string
	for _, p := range pieces {
		queue = append(queue, p.refs...)
	}
	for len(queue) > 0 {
		name := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		if _, done := schemas[name]; done {
			continue
		}
		if raw, ok := l.v3[name]; ok {
			schemas[name] = raw
			libModels = append(libModels, name)
			queue = append(queue, l.refs[name]...)
			continue
		}
		slog.Warn("OpenAPI reference to an unknown model", "model", name, "groupVersion", gv.String())
	}
	// DeleteOptions alone differs from one document to the next.
	if _, ok := schemas[deleteOptionsModel]; ok {
		builtin := slices.ContainsFunc(pieces, func(p *piece) bool { return !p.entry.def.Custom() })
		schemas[deleteOptionsModel] = deleteOptionsV3(gv, builtin)
	}

	var buf bytes.Buffer
	buf.Grow(rawSize(paths) + rawSize(schemas) + 512)
	buf.WriteString(`{"components":{"schemas":`)
	writeObject(&buf, schemas)
	buf.WriteString(`,"securitySchemes":`)
	buf.Write(bearerJSON)
	buf.WriteString(`},"info":`)
	buf.Write(infoJSON)
	buf.WriteString(`,"openapi":"3.0.0","paths":`)
	writeObject(&buf, paths)
	buf.WriteByte('}')
	return buf.Bytes(), libModels
}

// spliceV2Parts returns the v2 paths and definitions the pieces of a group
// version contribute to /openapi/v2, with the same keys as its v3 document
// has paths and schemas.
func spliceV2Parts(pieces []*piece, libModels []string) (paths, defs map[string]json.RawMessage, err error) {
	l := lib()
	paths = map[string]json.RawMessage{}
	defs = make(map[string]json.RawMessage, len(libModels))
	for _, name := range libModels {
		defs[name] = l.v2[name]
	}
	for _, p := range pieces {
		ps, ms, err := p.v2()
		if err != nil {
			return nil, nil, err
		}
		for _, kv := range ps {
			paths[kv.key] = kv.raw
		}
		for _, kv := range ms {
			defs[kv.key] = kv.raw
		}
	}
	return paths, defs, nil
}

// spliceV2 is the /openapi/v2 document with the given paths and
// definitions.
func spliceV2(paths, defs map[string]json.RawMessage) []byte {
	var buf bytes.Buffer
	buf.Grow(rawSize(paths) + rawSize(defs) + 512)
	buf.WriteString(`{"definitions":`)
	writeObject(&buf, defs)
	buf.WriteString(`,"info":`)
	buf.Write(infoJSON)
	buf.WriteString(`,"paths":`)
	writeObject(&buf, paths)
	buf.WriteString(`,"security":[{"BearerToken":[]}],"securityDefinitions":`)
	buf.Write(bearerJSON)
	buf.WriteString(`,"swagger":"2.0"}`)
	return buf.Bytes()
}

// The constant parts of the documents, encoded once.
var (
	infoJSON   = mustMarshal(map[string]any{"title": "Kubernetes", "version": "unversioned"})
	bearerJSON = mustMarshal(bearerScheme())
)

func mustMarshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("openapi: %v", err))
	}
	return b
}

func rawSize(m map[string]json.RawMessage) int {
	n := 2
	for k, v := range m {
		n += len(k) + len(v) + 4
	}
	return n
}

// writeObject writes m as a JSON object with its keys sorted, as
// json.Marshal writes a map. The values are already compact JSON.
func writeObject(buf *bytes.Buffer, m map[string]json.RawMessage) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	buf.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			buf.WriteByte(',')
		}
		writeKey(buf, k)
		buf.WriteByte(':')
		buf.Write(m[k])
	}
	buf.WriteByte('}')
}

// writeKey writes s as a JSON string the way json.Marshal does: plain
// printable ASCII as it is, anything else through the encoder (which
// escapes control and HTML characters and replaces invalid UTF-8).
func writeKey(buf *bytes.Buffer, s string) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			buf.Write(mustMarshal(s))
			return
		}
	}
	buf.WriteByte('"')
	buf.WriteString(s)
	buf.WriteByte('"')
}

// gvFingerprint combines the fingerprints of a group version's entries, in
// order.
func gvFingerprint(fps [][sha256.Size]byte) [sha256.Size]byte {
	h := sha256.New()
	for _, fp := range fps {
		h.Write(fp[:])
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}
