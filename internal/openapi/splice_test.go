package openapi

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crdserver/crdserver/internal/registry"
)

// oddDefinitions has schemas whose text json.Marshal escapes (HTML
// characters, U+2028, control characters) and one that cannot be decoded.
func oddDefinitions() []*registry.Definition {
	odd := `{"type":"object","description":"a < b && c > d \u2028 \t","properties":{
		"spec":{"type":"object","properties":{"x<y>":{"type":"string","pattern":"^[<>&]+$"},"ünï":{"type":"integer","default":1e21}}}}}`
	return []*registry.Definition{{
		Group: "odd.example.com", Resource: "odds", Singular: "odd", Kind: "Odd", ListKind: "OddList",
		Scope:    registry.Namespaced,
		Versions: []registry.Version{{Name: "v1", Served: true, Storage: true, OpenAPISchema: []byte(odd)}},
	}, {
		Group: "odd.example.com", Resource: "broken", Singular: "broken", Kind: "Broken", ListKind: "BrokenList",
		Scope:    registry.Cluster,
		Versions: []registry.Version{{Name: "v1", Served: true, Storage: true, OpenAPISchema: []byte(`{not json`)}},
	}}
}

// checkAgainstReference compares every document of s, built for t, with
// what the reference (one map, encoded at once) gives.
func checkAgainstReference(t *testing.T, table *registry.Table, s *state) {
	t.Helper()
	byGV := entriesByGV(table)
	if len(byGV) != len(s.gvs) {
		t.Errorf("%d group versions, want %d", len(s.gvs), len(byGV))
	}
	v2 := map[string][2]map[string]any{}
	for gv, entries := range byGV {
		key := gvKey(gv)
		want, paths, defs, err := referenceGV(gv, entries)
		if err != nil {
			t.Fatal(err)
		}
		v2[key] = [2]map[string]any{paths, defs}
		d := s.gvs[key]
		if d == nil {
			t.Errorf("%s missing", key)
			continue
		}
		if !bytes.Equal(d.json, want) {
			t.Errorf("%s differs from the reference at byte %d", key, firstDiff(d.json, want))
		}
		if d.etag != computeETag(want) {
			t.Errorf("%s: ETag is not the hash of its content", key)
		}
	}
	want, err := referenceV2(v2)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.openAPIV2(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.json, want) {
		t.Errorf("/openapi/v2 differs from the reference at byte %d", firstDiff(got.json, want))
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func TestSpliceMatchesReference(t *testing.T) {
	for _, tc := range []struct {
		name string
		defs []*registry.Definition
	}{
		{"fixture", testDefinitions()},
		{"with CRD", withCRD()},
		{"many groups", manyDefinitions(12)},
		{"one group", oneGroupDefinitions(30)},
		{"odd", oddDefinitions()},
		{"empty", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			table := registry.NewTable(1, tc.defs)
			s, err := buildState(table, nil, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			checkAgainstReference(t, table, s)
		})
	}
}

// TestIncrementalSplice changes, adds and deletes resources of a large group
// version and checks after each step that the rebuilt documents equal both a
// build from scratch and the reference, that the changed document's ETag
// changed, and that only the changed resources were rendered again.
func TestIncrementalSplice(t *testing.T) {
	const group = "apis/crds.bench.crdserver.io/v1"
	base := append(oneGroupDefinitions(40), testDefinitions()...)
	withSchema := func(defs []*registry.Definition, i int, schema string) []*registry.Definition {
		defs = slices.Clone(defs)
		d := *defs[i]
		d.Versions = slices.Clone(d.Versions)
		d.Versions[0].OpenAPISchema = []byte(schema)
		defs[i] = &d
		return defs
	}
	added := strings.Replace(crontabV1Schema, `"image": {"type": "string"}`,
		`"image": {"type": "string"}, "added": {"type": "string", "description": "a new field"}`, 1)
	deleted := slices.Delete(slices.Clone(base), 5, 7)
	noStatus := slices.Clone(deleted)
	d := *noStatus[3]
	d.Versions = []registry.Version{d.Versions[0]}
	d.Versions[0].Subresources = registry.Subresources{}
	noStatus[3] = &d
	extra := oneGroupDefinitions(41)[40]
	selectable := slices.Clone(noStatus)
	e := *selectable[9]
	e.Versions = slices.Clone(e.Versions)
	e.Versions[0].SelectableFields = []string{"spec.image"}
	selectable[9] = &e

	steps := []struct {
		name     string
		defs     []*registry.Definition
		rendered int // pieces of the group rendered again
	}{
		{"change a schema", withSchema(base, 17, added), 1},
		{"change it again", withSchema(base, 17, strings.Replace(added, "a new field", "described anew", 1)), 1},
		// Only the previous build's pieces are kept, so the original is
		// rendered again.
		{"change it back", base, 1},
		{"add a resource", append(slices.Clone(base), extra), 1},
		{"delete two", deleted, 0},
		{"drop a subresource", noStatus, 1},
		{"same again", noStatus, 0},
		{"declare a selectable field", selectable, 1},
	}

	table := registry.NewTable(1, base)
	prev, err := buildState(table, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for i, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			table := registry.NewTable(int64(i+2), step.defs)
			s, err := buildState(table, prev, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			fresh, err := buildState(table, nil, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			for key, d := range fresh.gvs {
				if !bytes.Equal(s.gvs[key].json, d.json) {
					t.Errorf("%s: incremental build differs from a build from scratch at byte %d", key, firstDiff(s.gvs[key].json, d.json))
				}
			}
			checkAgainstReference(t, table, s)

			old, cur := prev.gvs[group], s.gvs[group]
			changed := !bytes.Equal(old.json, cur.json)
			if changed == (old.etag == cur.etag) {
				t.Errorf("content changed = %v but ETag changed = %v", changed, old.etag != cur.etag)
			}
			if changed && string(prev.index.json) == string(s.index.json) {
				t.Error("index kept the old hash")
			}
			rendered := 0
			reused := map[*piece]bool{}
			for _, p := range old.byFP {
				reused[p] = true
			}
			for _, p := range cur.byFP {
				if !reused[p] {
					rendered++
				}
			}
			if rendered != step.rendered {
				t.Errorf("rendered %d pieces, want %d", rendered, step.rendered)
			}
			prev = s
		})
	}
}

func TestWriteKey(t *testing.T) {
	for _, k := range []string{"plain", "/apis/g/v1/{name}", "a<b", "q\"uote", "back\\slash", "ü", "\u2028", "\x01", "bad\xff"} {
		var buf bytes.Buffer
		writeKey(&buf, k)
		if want := mustMarshal(k); !bytes.Equal(buf.Bytes(), want) {
			t.Errorf("writeKey(%q) = %s, want %s", k, buf.Bytes(), want)
		}
	}
}
