package apply

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/crdserver/crdserver/internal/codec"
)

// randomFieldSet is a field set of random shape: maps of keys, some
// owning themselves ("."), some escaped, some list keys.
func randomFieldSet(rng *rand.Rand, depth int) map[string]any {
	m := map[string]any{}
	if rng.IntN(3) == 0 {
		m["."] = map[string]any{}
	}
	names := []string{"f:a", "f:b", "f:ab", "f:b.c", `f:q"x`, `k:{"name":"a"}`, `v:"x"`, "i:0", "f:z", `f:\`, "f:é"}
	for range rng.IntN(5) {
		k := names[rng.IntN(len(names))]
		if depth < 4 && rng.IntN(2) == 0 {
			m[k] = randomFieldSet(rng, depth+1)
		} else {
			m[k] = map[string]any{}
		}
	}
	return m
}

// memberPaths are the paths of every member of the encoded object f, and
// of members it does not have, as encoded keys.
func memberPaths(f []byte, prefix [][]byte, out *[][][]byte) {
	codec.EachRawMember(f, func(name, value []byte) bool {
		p := append(append([][]byte(nil), prefix...), name)
		*out = append(*out, p, append(append([][]byte(nil), prefix...), []byte("f:missing")))
		if len(value) > 0 && value[0] == '{' {
			memberPaths(value, p, out)
		}
		return true
	})
}

func encodedKeys(keys [][]byte) encodedKeyPath {
	plain := true
	for _, k := range keys {
		plain = plain && bytes.IndexByte(k, '\\') < 0
	}
	return encodedKeyPath{enc: keys, plain: plain}
}

// checkOwnedIndex wants the index of f, when it makes one, to answer as
// hasEncodedMember does for every path in f and some that are not.
func checkOwnedIndex(t *testing.T, f []byte, wantIndex bool) {
	t.Helper()
	idx, _ := buildOwnedIndex(f).(ownedIndex)
	if (idx != nil) != wantIndex {
		t.Fatalf("index of %s: %v, want one: %v", f, idx != nil, wantIndex)
	}
	if idx == nil {
		return
	}
	var paths [][][]byte
	memberPaths(f, nil, &paths)
	paths = append(paths, nil, [][]byte{[]byte(".")}, [][]byte{[]byte("f:a"), []byte(".")})
	for _, keys := range paths {
		p := encodedKeys(keys)
		if got, want := idx.has(p), hasEncodedMember(f, p); got != want {
			t.Fatalf("%s owns %q: index says %v, the search %v", f, keys, got, want)
		}
	}
}

func TestOwnedIndexAgreesWithSearch(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		f, err := codec.Marshal(randomFieldSet(rng, 0))
		if err != nil {
			t.Fatal(err)
		}
		// Marshal escapes quotes and backslashes in keys, which the
		// index leaves to the search.
		checkOwnedIndex(t, f, !bytes.Contains(f, []byte(`\`)))
	}
	for _, c := range []struct {
		f         string
		wantIndex bool
	}{
		{`{"f:a":{},"f:b":{".":{},"f:c":{}}}`, true},
		{`{}`, true},
		// Out of order or repeated: the search may stop early or take
		// the first, which an index would not.
		{`{"f:b":{},"f:a":{}}`, false},
		{`{"f:a":{"f:y":{},"f:x":{}}}`, false},
		{`{"f:a":{},"f:a":{"f:x":{}}}`, false},
		{`{"f:a":{"\u0041":{}}}`, false},
		{"{\"f:a\":{\"x\x01\":{}}}", false},
		// Values that are not maps are no paths.
		{`{"f:a":1,"f:b":{"f:c":"x"}}`, true},
	} {
		checkOwnedIndex(t, []byte(c.f), c.wantIndex)
	}
}

// TestOwnedInRemembered: an update's field set seen before is looked up
// in its index.
func TestOwnedInRemembered(t *testing.T) {
	f := []byte(`{"f:metadata":{"f:labels":{".":{},"f:app.kubernetes.io/name":{}}},"f:spec":{"f:replicas":{}}}`)
	// The watch cache's indexing of objects checks their managedFields'
	// form, which keeps a field set found twice.
	obj := []byte(`{"metadata":{"managedFields":[{"fieldsType":"FieldsV1","fieldsV1":` + string(f) + `,"manager":"m"}],"name":"a"}}`)
	for range 2 {
		if _, ok := codec.IndexStored(nil, obj, "1"); !ok {
			t.Fatal("IndexStored failed")
		}
	}
	idx := ownedIn(f)
	if idx == nil {
		t.Fatal("no index for a field set seen before")
	}
	for _, c := range []struct {
		keys []string
		want bool
	}{
		{[]string{"f:spec", "f:replicas"}, true},
		{[]string{"f:metadata", "f:labels"}, true},
		{[]string{"f:metadata", "f:labels", "f:app.kubernetes.io/name"}, true},
		{[]string{"f:metadata"}, false},
		{[]string{"f:spec", "f:paused"}, false},
	} {
		var keys [][]byte
		for _, k := range c.keys {
			keys = append(keys, []byte(k))
		}
		if got := idx.has(encodedKeys(keys)); got != c.want {
			t.Errorf("owns %v: %v, want %v", c.keys, got, c.want)
		}
	}
}

// FuzzOwnedIndex wants any index made, from any bytes, to answer as the
// search does.
func FuzzOwnedIndex(f *testing.F) {
	f.Add([]byte(`{"f:a":{},"f:b":{".":{},"f:c":{}}}`))
	f.Add([]byte(`{"f:metadata":{"f:labels":{".":{},"f:x":{}}},"f:spec":{"f:replicas":{}}}`))
	f.Add([]byte(`{"f:b":{},"f:a":{"k:{\"name\":\"a\"}":{".":{}}}}`))
	f.Fuzz(func(t *testing.T, fs []byte) {
		// Field sets reach both as compact JSON (remembered ones are
		// checked well-formed; the search trusts Marshal's form).
		var compact bytes.Buffer
		if json.Compact(&compact, fs) != nil || !bytes.Equal(compact.Bytes(), fs) {
			return
		}
		idx, _ := buildOwnedIndex(fs).(ownedIndex)
		if idx == nil {
			return
		}
		var paths [][][]byte
		memberPaths(fs, nil, &paths)
		for _, keys := range paths {
			p := encodedKeys(keys)
			if got, want := idx.has(p), hasEncodedMember(fs, p); got != want {
				t.Fatalf("%q owns %q: index says %v, the search %v", fs, keys, got, want)
			}
		}
	})
}
