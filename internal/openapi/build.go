package openapi

import (
	"crypto/sha256"
	"crypto/sha512"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash"
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

// gvDoc is the OpenAPI of one group version: the v3 document, encoded, the
// pieces it was spliced from, and the v2 paths and definitions it
// contributes to /openapi/v2. It is immutable once built, except for the v2
// parts and the protobuf form, computed on first use.
type gvDoc struct {
	gv          schema.GroupVersion
	fingerprint [sha256.Size]byte
	json        []byte
	etag        string // unquoted; also the hash in the index
	modified    time.Time

	// pieces are what each resource version contributes, in entry order,
	// and byFP the same by entry fingerprint, for the next build of this
	// group version to reuse. libModels are the library models the
	// document holds.
	pieces    []*piece
	byFP      map[[sha256.Size]byte]*piece
	libModels []string

	// The v2 paths and definitions of the group version, spliced on first
	// use.
	v2Once  sync.Once
	v2Paths map[string]json.RawMessage
	v2Defs  map[string]json.RawMessage
	v2Err   error

	pbOnce sync.Once
	pb     []byte
	pbErr  error
}

// v2 returns the v2 paths and definitions the group version contributes to
// /openapi/v2.
func (d *gvDoc) v2() (paths, defs map[string]json.RawMessage, err error) {
	d.v2Once.Do(func() {
		d.v2Paths, d.v2Defs, d.v2Err = spliceV2Parts(d.pieces, d.libModels)
	})
	return d.v2Paths, d.v2Defs, d.v2Err
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

// entryFingerprint hashes everything about e that shows in its group
// version's documents, so that a registry swap rebuilds only the group
// versions whose definitions changed, and in them only the resources that
// changed.
func entryFingerprint(e entry) [sha256.Size]byte {
	h := sha256.New()
	str := func(s string) { writeField(h, []byte(s)) }
	strs := func(ss []string) {
		str(fmt.Sprint(len(ss)))
		for _, s := range ss {
			str(s)
		}
	}
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
	strs(v.SelectableFields)
	writeField(h, v.OpenAPISchema)
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

// buildGV builds the documents of one group version from its entries and
// their fingerprints, taking the pieces of entries that did not change from
// old (nil when the group version is new).
func buildGV(gv schema.GroupVersion, entries []entry, fps [][sha256.Size]byte, old *gvDoc, now time.Time) (*gvDoc, error) {
	byFP := make(map[[sha256.Size]byte]*piece, len(entries))
	pieces := make([]*piece, len(entries))
	for i, e := range entries {
		p := byFP[fps[i]]
		if p == nil && old != nil {
			p = old.byFP[fps[i]]
		}
		if p == nil {
			var err error
			if p, err = newPiece(gv, e); err != nil {
				return nil, err
			}
		}
		byFP[fps[i]] = p
		pieces[i] = p
	}
	b, libModels := splice(gv, pieces)
	return &gvDoc{
		gv:          gv,
		fingerprint: gvFingerprint(fps),
		json:        b,
		etag:        computeETag(b),
		modified:    now,
		pieces:      pieces,
		byFP:        byFP,
		libModels:   libModels,
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

// entriesByGV groups the served versions of t's definitions by group
// version, each group in the table's order (by resource).
func entriesByGV(t *registry.Table) map[schema.GroupVersion][]entry {
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
	return byGV
}

// buildState builds the documents of t, reusing the group versions of prev
// whose definitions did not change.
func buildState(t *registry.Table, prev *state, now time.Time) (*state, error) {
	byGV := entriesByGV(t)
	s := &state{generation: t.Generation, gvs: make(map[string]*gvDoc, len(byGV))}
	for gv, entries := range byGV {
		// Definitions come sorted by resource, so the fingerprint is stable.
		fps := make([][sha256.Size]byte, len(entries))
		for i, e := range entries {
			fps[i] = entryFingerprint(e)
		}
		key := gvKey(gv)
		var old *gvDoc
		if prev != nil {
			old = prev.gvs[key]
		}
		if old != nil && old.fingerprint == gvFingerprint(fps) {
			s.gvs[key] = old
			continue
		}
		d, err := buildGV(gv, entries, fps, old, now)
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

// openAPIV2 merges every group version into the /openapi/v2 document,
// splicing their encoded paths and definitions (a later group version's
// key replaces an earlier one's, in key order).
func (s *state) openAPIV2(now time.Time) (*blob, error) {
	s.v2Once.Do(func() {
		paths := map[string]json.RawMessage{}
		defs := map[string]json.RawMessage{}
		keys := make([]string, 0, len(s.gvs))
		for k := range s.gvs {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			ps, ds, err := s.gvs[k].v2()
			if err != nil {
				s.v2Err = err
				return
			}
			for p, item := range ps {
				paths[p] = item
			}
			for name, def := range ds {
				defs[name] = def
			}
		}
		b := spliceV2(paths, defs)
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
