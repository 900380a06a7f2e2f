package conversion

import (
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/registry"
)

// TestResultCacheAnswers: entries that are parts of a webhook's answer
// count the answer once, go all together to make room, and free it when
// the last of them is replaced.
func TestResultCacheAnswers(t *testing.T) {
	c := resultCache{max: 150, m: map[cacheKey]cached{}}
	key := func(s string, i int) cacheKey { return cacheKey{"/" + s + strconv.Itoa(i), "g/v2"} }
	a, b := &answer{size: 100}, &answer{size: 100}
	for i := range 3 {
		c.put(key("a", i), 1, []byte("aaaa"), a)
	}
	if c.size != 100 || len(c.m) != 3 {
		t.Fatalf("one answer's 3 parts: size %d, %d entries; want 100, 3", c.size, len(c.m))
	}
	for i := range 3 {
		c.put(key("b", i), 1, []byte("bbbb"), b)
	}
	// The second answer does not fit beside the first: one of them went
	// whole, and only its memory is freed.
	if c.size != 100 || len(c.m) != 3 {
		t.Fatalf("two answers in room for one: size %d, %d entries; want 100, 3", c.size, len(c.m))
	}
	kept := a
	if a.refs == 0 {
		kept = b
	}
	if kept.refs != 3 || a.refs+b.refs != 3 {
		t.Fatalf("refs %d and %d, want 3 and 0", a.refs, b.refs)
	}
	// Replaced one by one with objects of their own, the kept answer is
	// freed with its last part.
	name := "a"
	if kept == b {
		name = "b"
	}
	for i := range 3 {
		if c.size != 100+10*i {
			t.Fatalf("after %d replaced: size %d, want %d", i, c.size, 100+10*i)
		}
		c.put(key(name, i), 2, []byte("0123456789"), nil)
	}
	if c.size != 30 || kept.refs != 0 {
		t.Fatalf("all replaced: size %d, refs %d; want 30, 0", c.size, kept.refs)
	}
	// An older revision does not replace a newer one.
	c.put(key(name, 0), 1, []byte("old"), kept)
	if got, _ := c.get(key(name, 0), 2); string(got) != "0123456789" || c.size != 30 || kept.refs != 0 {
		t.Fatalf("an older revision replaced a newer one: %q, size %d", got, c.size)
	}
}

// TestResultCacheOwn: entries of their own count their length; past the
// bound, arbitrary ones go.
func TestResultCacheOwn(t *testing.T) {
	c := resultCache{max: 25, m: map[cacheKey]cached{}}
	for i := range 5 {
		c.put(cacheKey{strconv.Itoa(i), "g/v2"}, 1, []byte("0123456789"), nil)
	}
	if c.size > 25 || c.size != 10*len(c.m) || len(c.m) != 2 {
		t.Fatalf("size %d with %d entries, want 20 with 2", c.size, len(c.m))
	}
}

// TestResultsFromRawShared: an answer whose objects are all taken as they
// came gives them as parts of it (shared); when one is not, none of the
// results is part of the answer, so that a cache counts each alone.
func TestResultsFromRawShared(t *testing.T) {
	defaulted := func(c string) string { return strings.Replace(c, `"junk":1,`, `"size":"m",`, 1) }
	objs := []Object{{JSON: thing("a"), Key: "/a", Revision: 7}, {JSON: thing("b"), Key: "/b", Revision: 7}}
	w := &Webhook{review: "v1", def: &registry.Definition{Group: quickGroup, Kind: "Thing", ListKind: "ThingList"}}
	toGV := schema.GroupVersion{Group: quickGroup, Version: "v2"}
	within := func(b, in []byte) bool {
		return len(b) > 0 && uintptr(unsafe.Pointer(&b[0])) >= uintptr(unsafe.Pointer(&in[0])) &&
			uintptr(unsafe.Pointer(&b[0])) < uintptr(unsafe.Pointer(&in[0]))+uintptr(len(in))
	}
	for _, tc := range []struct {
		name   string
		second func(string) string
		shared bool
	}{
		{"both as they came", nil, true},
		{"the second's label changed", func(c string) string { return strings.Replace(c, `{"a":"b"}`, `{"a":"c"}`, 1) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			second := defaulted(string(converted("b", nil)))
			if tc.second != nil {
				second = tc.second(second)
			}
			answer := []byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{"uid":"u1","result":{"status":"Success"},"convertedObjects":[` +
				defaulted(string(converted("a", nil))) + `,` + second + `]}}`)
			raws, ok := w.quickReview("u1", answer, 2, junkSchema{}, nil)
			if !ok {
				t.Fatal("quickReview declined")
			}
			out, shared, ok, err := w.resultsFromRaw(raws, quickGroup+"/v2", objs, []int{0, 1}, toGV, junkSchema{}, toGV.WithKind("ThingList"), false)
			if !ok || err != nil || shared != tc.shared {
				t.Fatalf("resultsFromRaw: shared %v, ok %v, %v; want shared %v", shared, ok, err, tc.shared)
			}
			for j, b := range out {
				if within(b, answer) != tc.shared {
					t.Errorf("result %d part of the answer: %v, want %v", j, within(b, answer), tc.shared)
				}
			}
			if want := defaulted(string(converted("a", nil))); string(out[0]) != want {
				t.Errorf("first result %s, want %s", out[0], want)
			}
		})
	}
}

// BenchmarkCachePut fills a cache with the 10,000 results of a cold list,
// 500 to an answer, as the reviews of the list land.
func BenchmarkCachePut(b *testing.B) {
	keys := make([]cacheKey, 10000)
	for i := range keys {
		keys[i] = cacheKey{"ns/widget-" + strconv.Itoa(i), "bench.crdserver.io/v2"}
	}
	json := make([]byte, 2500)
	b.ReportAllocs()
	for b.Loop() {
		c := resultCache{max: 64 << 20, m: map[cacheKey]cached{}}
		var ans *answer
		for i, k := range keys {
			if i%500 == 0 {
				ans = &answer{size: 500 * len(json)}
			}
			c.put(k, 1, json, ans)
		}
	}
}
