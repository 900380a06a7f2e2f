package codec

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// findEach is what Paths.Find replaces: FindPath for each path, a
// repeated one under its first index only, as Find reports it.
func findEach(encoded []byte, paths [][]string) (map[int]string, bool) {
	out := map[int]string{}
	for i, p := range paths {
		if slices.IndexFunc(paths[:i], func(q []string) bool { return slices.Equal(p, q) }) >= 0 {
			continue
		}
		v, found, ok := FindPath(encoded, p)
		if !ok {
			return nil, false
		}
		if found {
			out[i] = string(v)
		}
	}
	return out, true
}

func findAll(t testing.TB, encoded []byte, paths [][]string) (map[int]string, bool) {
	ps, err := NewPaths(paths)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]string{}
	ok := ps.Find(encoded, func(i int, v []byte) {
		if _, again := out[i]; again {
			t.Errorf("path %v found twice", paths[i])
		}
		out[i] = string(v)
	})
	return out, ok
}

func splitPaths(s string) [][]string {
	var out [][]string
	for _, p := range strings.Fields(s) {
		out = append(out, strings.Split(p, "."))
	}
	return out
}

func TestPathsFind(t *testing.T) {
	const obj = `{"a":{"b":{"c":[1,{"d":2}]},"s":"x"},"metadata":{"name":"n","creationTimestamp":"t"},"z":null,"a":{"s":"second"}}`
	for _, tc := range []struct {
		name, paths, in string
		want            map[int]string
		ok              bool
	}{
		{"columns", "metadata.name a.s a.b.c z missing", obj, map[int]string{0: `"n"`, 1: `"x"`, 2: `[1,{"d":2}]`, 3: `null`}, true},
		{"prefix and below", "a a.s a.b", obj, map[int]string{0: `{"b":{"c":[1,{"d":2}]},"s":"x"}`, 1: `"x"`, 2: `{"c":[1,{"d":2}]}`}, true},
		{"through a string or an array", "a.s.t a.b.c.d metadata.name", obj, map[int]string{2: `"n"`}, true},
		{"repeated path", "metadata.name metadata.name", obj, map[int]string{0: `"n"`}, true},
		{"escaped member name", "metadata.name", `{"metad\u0061ta":{"name":"n"}}`, map[int]string{0: `"n"`}, true},
		{"not an object", "a", `[1,2]`, map[int]string{}, true},
		{"scalar", "a", `"a"`, map[int]string{}, true},
		{"empty", "a", `{}`, map[int]string{}, true},
		{"malformed after the members", "a", `{"a":1,"b":}`, nil, false},
		{"malformed inside", "a.b", `{"a":{"b":1,}}`, nil, false},
		{"truncated", "a", `{"a":1`, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			paths := splitPaths(tc.paths)
			got, ok := findAll(t, []byte(tc.in), paths)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if !ok {
				return
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("found %v, want %v", got, tc.want)
			}
			if each, eachOK := findEach([]byte(tc.in), paths); !eachOK || fmt.Sprint(each) != fmt.Sprint(got) {
				t.Errorf("FindPath finds %v (ok %v), Find %v", each, eachOK, got)
			}
		})
	}
}

func TestNewPathsRefuses(t *testing.T) {
	if _, err := NewPaths([][]string{{"a"}, {}}); err == nil {
		t.Error("an empty path was compiled")
	}
	var wide [][]string
	for i := range maxPathMembers + 1 {
		wide = append(wide, []string{"spec", fmt.Sprint("f", i)})
	}
	if _, err := NewPaths(wide[:maxPathMembers]); err != nil {
		t.Errorf("%d members at one level: %v", maxPathMembers, err)
	}
	if _, err := NewPaths(wide); err == nil {
		t.Errorf("%d members at one level were compiled", len(wide))
	}
}

// FuzzPathsFind holds Find to FindPath: where Find reads an object as
// well formed, each path is found, or not, with the value FindPath gives.
func FuzzPathsFind(f *testing.F) {
	f.Add([]byte(`{"metadata":{"name":"n","managedFields":[{"f":1}]},"spec":{"size":"s","replicas":3},"status":{"phase":"p"}}`), "metadata.name spec.size spec.replicas status.phase spec")
	f.Add([]byte(`{"a":{"a":{"a":1}},"a":2}`), "a a.a a.a.a")
	f.Add([]byte(`{"\u0061":[{"b":1}],"c":"\"}"}`), "a a.b c")
	f.Fuzz(func(t *testing.T, encoded []byte, spec string) {
		paths := splitPaths(spec)
		if len(paths) == 0 || len(paths) > 16 {
			return
		}
		ps, err := NewPaths(paths)
		if err != nil {
			return
		}
		got := map[int]string{}
		ok := ps.Find(encoded, func(i int, v []byte) {
			if !bytes.Contains(encoded, v) {
				t.Fatalf("value %q is not encoded's", v)
			}
			got[i] = string(v)
		})
		if !ok {
			return
		}
		want, wantOK := findEach(encoded, paths)
		if !wantOK {
			t.Fatalf("Find read %q as well formed, FindPath did not", encoded)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("Find(%q, %q) = %v, FindPath %v", encoded, spec, got, want)
		}
	})
}

func BenchmarkRowMembers(b *testing.B) {
	obj := []byte(`{"apiVersion":"bench.crdserver.io/v1","kind":"Widget","metadata":{"name":"w","namespace":"lt","uid":"u","resourceVersion":"12","creationTimestamp":"2026-01-01T00:00:00Z","labels":{"a":"b"},"managedFields":[` +
		strings.Repeat(`{"manager":"m","operation":"Update","apiVersion":"v1","time":"2026-01-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{".":{},"f:payload":{},"f:size":{}}}},`, 8) +
		`{"manager":"x"}]},"spec":{"size":"m","replicas":3,"owner":"o","payload":"` + strings.Repeat("p", 2000) + `"},"status":{"readyReplicas":2,"phase":"Ready"}}`)
	paths := splitPaths("metadata.name spec.size spec.replicas status.readyReplicas status.phase spec.owner metadata.creationTimestamp")
	b.Run("FindPath", func(b *testing.B) {
		for b.Loop() {
			if _, ok := findEach(obj, paths); !ok {
				b.Fatal("malformed")
			}
		}
	})
	b.Run("Paths", func(b *testing.B) {
		ps, err := NewPaths(paths)
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if !ps.Find(obj, func(int, []byte) {}) {
				b.Fatal("malformed")
			}
		}
	})
}
