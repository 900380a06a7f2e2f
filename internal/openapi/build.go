package openapi

import (
	"crypto/sha256"
	"crypto/sha512"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	openapiv2 "github.com/google/gnostic-models/openapiv2"
	openapiv3 "github.com/google/gnostic-models/openapiv3"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/registry"
)

// entry is one served version of a definition.
type entry struct {
	def     *registry.Definition
	version *registry.Version
}

// gvKey is the name of a group version in the v3 index: "api/v1" or
// "apis/<group>/<version>".
func gvKey(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "api/" + gv.Version
	}
	return "apis/" + gv.Group + "/" + gv.Version
}

// gvDoc is the OpenAPI of one group version: the v3 document, encoded, and
// the v2 paths and definitions it contributes to /openapi/v2. It is
// immutable once built, except for the protobuf form computed on first use.
type gvDoc struct {
	gv          schema.GroupVersion
	fingerprint [sha256.Size]byte
	json        []byte
	etag        string // unquoted; also the hash in the index
	modified    time.Time

	v2Paths map[string]any
	v2Defs  map[string]any

	pbOnce sync.Once
	pb     []byte
	pbErr  error
}

// protobuf returns the v3 document in the gnostic protobuf encoding.
func (d *gvDoc) protobuf() ([]byte, error) {
	d.pbOnce.Do(func() {
		doc, err := openapiv3.ParseDocument(d.json)
		if err != nil {
			d.pbErr = fmt.Errorf("converting %s to protobuf: %w", gvKey(d.gv), err)
			return
		}
		d.pb, d.pbErr = proto.Marshal(doc)
	})
	return d.pb, d.pbErr
}

// fingerprint hashes everything about entries that shows in their group
// version's documents, so that a registry swap rebuilds only the group
// versions whose definitions changed.
func fingerprint(entries []entry) [sha256.Size]byte {
	h := sha256.New()
	str := func(s string) { writeField(h, []byte(s)) }
	strs := func(ss []string) {
		str(fmt.Sprint(len(ss)))
		for _, s := range ss {
			str(s)
		}
	}
	for _, e := range entries {
		d, v := e.def, e.version
		str(d.Group)
		str(d.Resource)
		str(d.Kind)
		str(d.ListKind)
		str(string(d.Scope))
		str(fmt.Sprint(d.Verbs != nil, isStrategic(d)))
		strs(d.Verbs)
		str(v.Name)
		str(fmt.Sprint(v.Subresources.Status, v.Subresources.Scale != nil))
		str(fmt.Sprint(len(v.Subresources.Other)))
		for _, o := range v.Subresources.Other {
			str(o.Name)
			strs(o.Verbs)
		}
		writeField(h, v.OpenAPISchema)
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// writeField writes b length-prefixed, so that field boundaries are part of
// the hash.
func writeField(h hash.Hash, b []byte) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(b)))
	h.Write(n[:])
	h.Write(b)
}

func computeETag(b []byte) string {
	return fmt.Sprintf("%X", sha512.Sum512(b))
}

// bearerScheme declares bearer-token authentication, as upstream's
// documents do (the same object in v2 securityDefinitions and v3
// securitySchemes).
func bearerScheme() map[string]any {
	return map[string]any{"BearerToken": map[string]any{
		"type":        "apiKey",
		"name":        "authorization",
		"in":          "header",
		"description": "Bearer token authentication",
	}}
}

// buildGV builds the documents of one group version. A resource whose
// schema cannot be decoded is left out (and logged) rather than failing the
// whole group version.
func buildGV(gv schema.GroupVersion, entries []entry, fp [sha256.Size]byte, now time.Time) (*gvDoc, error) {
	paths := map[string]any{}
	v2Paths := map[string]any{}
	local := map[string]map[string]any{} // models built for this group version
	objects := map[string]bool{}         // which local models are objects (for the v2 root rule)
	l := lib()
	for _, e := range entries {
		gvk := gv.WithKind(e.def.Kind)
		obj, err := objectSchema(e.version, gvk)
		if err != nil {
			slog.Warn("leaving a resource out of OpenAPI", "group", gv.Group, "version", gv.Version, "resource", e.def.Resource, "err", err)
			continue
		}
		model := modelName(gvk)
		listGVK := gv.WithKind(e.def.ListKind)
		listModel := modelName(listGVK)
		// Built-ins' models come from the library, pre-encoded.
		if _, ok := l.models[model]; !ok {
			local[model] = obj
			objects[model] = true
		}
		if _, ok := l.models[listModel]; !ok {
			local[listModel] = listSchema(e.def, listGVK, model)
		}
		for _, p := range resourcePaths(e.def, e.version, gvk, model, listModel) {
			paths[p.path] = p.v3(gv)
			v2Paths[p.path] = p.v2(gv)
		}
	}

	// The document holds the models its paths use and everything those
	// refer to.
	schemas := map[string]any{}
	v2Defs := map[string]any{}
	queue := collectRefs(paths, nil)
	for name := range local {
		queue = append(queue, name)
	}
	for len(queue) > 0 {
		name := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		if _, done := schemas[name]; done {
			continue
		}
		if s, ok := local[name]; ok {
			schemas[name] = s
			if objects[name] {
				v2Defs[name] = objectSchemaV2(s)
			} else {
				v2Defs[name] = toV2(s)
			}
			queue = collectRefs(s, queue)
			continue
		}
		if raw, ok := l.v3[name]; ok {
			schemas[name] = raw
			v2Defs[name] = l.v2[name]
			queue = append(queue, l.refs[name]...)
			continue
		}
		slog.Warn("OpenAPI reference to an unknown model", "model", name, "groupVersion", gv.String())
	}

	v3 := map[string]any{
		"openapi": "3.0.0",
		"info":    map[string]any{"title": "Kubernetes", "version": "unversioned"},
		"paths":   paths,
		"components": map[string]any{
			"schemas":         schemas,
			"securitySchemes": bearerScheme(),
		},
	}
	b, err := json.Marshal(v3)
	if err != nil {
		return nil, fmt.Errorf("encoding OpenAPI v3 of %s: %w", gv, err)
	}

	return &gvDoc{
		gv:          gv,
		fingerprint: fp,
		json:        b,
		etag:        computeETag(b),
		modified:    now,
		v2Paths:     v2Paths,
		v2Defs:      v2Defs,
	}, nil
}

// state is everything served for one registry generation.
type state struct {
	generation int64
	gvs        map[string]*gvDoc // by gvKey
	index      *blob

	v2Once sync.Once
	v2     *blob
	v2Err  error
}

// blob is an encoded document with its entity tag (unquoted) and the time it
// last changed.
type blob struct {
	json     []byte
	etag     string
	modified time.Time

	pbOnce sync.Once
	pb     []byte
	pbErr  error
}

// protobufV2 returns a v2 document in the gnostic protobuf encoding, which
// client-go's OpenAPISchema asks for.
func (b *blob) protobufV2() ([]byte, error) {
	b.pbOnce.Do(func() {
		doc, err := openapiv2.ParseDocument(b.json)
		if err != nil {
			b.pbErr = fmt.Errorf("converting OpenAPI v2 to protobuf: %w", err)
			return
		}
		b.pb, b.pbErr = proto.Marshal(doc)
	})
	return b.pb, b.pbErr
}

// buildState builds the documents of t, reusing the group versions of prev
// whose definitions did not change.
func buildState(t *registry.Table, prev *state, now time.Time) (*state, error) {
	byGV := map[schema.GroupVersion][]entry{}
	for _, def := range t.Definitions() {
		for i := range def.Versions {
			v := &def.Versions[i]
			if !v.Served {
				continue
			}
			gv := schema.GroupVersion{Group: def.Group, Version: v.Name}
			byGV[gv] = append(byGV[gv], entry{def, v})
		}
	}
	s := &state{generation: t.Generation, gvs: make(map[string]*gvDoc, len(byGV))}
	for gv, entries := range byGV {
		// Definitions come sorted by resource, so the fingerprint is stable.
		fp := fingerprint(entries)
		key := gvKey(gv)
		if prev != nil {
			if old, ok := prev.gvs[key]; ok && old.fingerprint == fp {
				s.gvs[key] = old
				continue
			}
		}
		d, err := buildGV(gv, entries, fp, now)
		if err != nil {
			return nil, err
		}
		s.gvs[key] = d
	}

	index := map[string]any{}
	for key, d := range s.gvs {
		index[key] = map[string]any{"serverRelativeURL": "/openapi/v3/" + key + "?hash=" + d.etag}
	}
	b, err := json.Marshal(map[string]any{"paths": index})
	if err != nil {
		return nil, fmt.Errorf("encoding the OpenAPI v3 index: %w", err)
	}
	if prev != nil && string(prev.index.json) == string(b) {
		s.index = prev.index
	} else {
		s.index = &blob{json: b, etag: computeETag(b), modified: now}
	}
	return s, nil
}

// openAPIV2 merges every group version into the /openapi/v2 document.
func (s *state) openAPIV2(now time.Time) (*blob, error) {
	s.v2Once.Do(func() {
		paths := map[string]any{}
		defs := map[string]any{}
		keys := make([]string, 0, len(s.gvs))
		for k := range s.gvs {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			d := s.gvs[k]
			for p, item := range d.v2Paths {
				paths[p] = item
			}
			for name, def := range d.v2Defs {
				defs[name] = def
			}
		}
		doc := map[string]any{
			"swagger":             "2.0",
			"info":                map[string]any{"title": "Kubernetes", "version": "unversioned"},
			"paths":               paths,
			"definitions":         defs,
			"securityDefinitions": bearerScheme(),
			"security":            []any{map[string]any{"BearerToken": []any{}}},
		}
		b, err := json.Marshal(doc)
		if err != nil {
			s.v2Err = fmt.Errorf("encoding OpenAPI v2: %w", err)
			return
		}
		s.v2 = &blob{json: b, etag: computeETag(b), modified: now}
	})
	return s.v2, s.v2Err
}

// keyOf splits a v3 document path ("apis/g/v", "api/v1") into a gvKey,
// reporting false for anything else.
func keyOf(rest string) (string, bool) {
	parts := strings.Split(rest, "/")
	switch {
	case len(parts) == 2 && parts[0] == "api" && parts[1] != "":
		return rest, true
	case len(parts) == 3 && parts[0] == "apis" && parts[1] != "" && parts[2] != "":
		return rest, true
	}
	return "", false
}
