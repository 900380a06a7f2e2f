package watchcache

import (
	"bytes"
	"math/rand"
	"strings"
	"testing"
	"unsafe"

	"k8s.io/apimachinery/pkg/labels"
)

// TestItemSharedParts sets random objects with random parts shared and
// wants every way of reading them to give the bytes set, the shared
// parts held once for all items.
func TestItemSharedParts(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for i := range 2000 {
		b := make([]byte, rng.Intn(600))
		for j := range b {
			b[j] = byte('a' + rng.Intn(3)) // repeats: parts other items share
		}
		var spans [][2]int
		for at := 0; at < len(b); {
			start := at + rng.Intn(100)
			end := start + rng.Intn(150)
			if end > len(b) {
				break
			}
			spans = append(spans, [2]int{start, end})
			at = end
		}
		it := &Item{}
		it.SetJSON(bytes.Clone(b), spans, nil)
		if got := it.JSON(); !bytes.Equal(got, b) {
			t.Fatalf("%d: JSON %q, want %q (spans %v)", i, got, b, spans)
		}
		if it.Len() != len(b) {
			t.Fatalf("%d: Len %d, want %d", i, it.Len(), len(b))
		}
		if h := it.Head(); !bytes.HasPrefix(b, h) {
			t.Fatalf("%d: Head %q is not a prefix of %q", i, h, b)
		}
		var w bytes.Buffer
		if n, err := it.WriteTo(&w); err != nil || n != int64(len(b)) || !bytes.Equal(w.Bytes(), b) {
			t.Fatalf("%d: WriteTo wrote %q (%d, %v), want %q", i, w.Bytes(), n, err, b)
		}
		pieces := it.AppendPieces([][]byte{[]byte("x")})
		if got := bytes.Join(pieces, nil); !bytes.Equal(got, append([]byte("x"), b...)) {
			t.Fatalf("%d: AppendPieces %q", i, pieces)
		}
		if h := it.Head(); len(h) > 0 && !bytes.Equal(pieces[1], h) {
			t.Fatalf("%d: first piece %q, Head %q", i, pieces[1], h)
		}
		if got := it.AppendTo([]byte("x")); !bytes.Equal(got, append([]byte("x"), b...)) {
			t.Fatalf("%d: AppendTo %q", i, got)
		}
		for range 20 {
			start := rng.Intn(len(b) + 1)
			end := start + rng.Intn(len(b)-start+1)
			if got := it.AppendRange([]byte("x"), start, end); !bytes.Equal(got, append([]byte("x"), b[start:end]...)) {
				t.Fatalf("%d: AppendRange %d:%d = %q, want %q", i, start, end, got[1:], b[start:end])
			}
			var w bytes.Buffer
			if n, err := it.WriteRange(&w, start, end); err != nil || n != int64(end-start) || !bytes.Equal(w.Bytes(), b[start:end]) {
				t.Fatalf("%d: WriteRange %d:%d wrote %q (%d, %v), want %q", i, start, end, w.Bytes(), n, err, b[start:end])
			}
		}
		checkMetadataInto(t, i, it, b, spans, rng)
		shared := 0
		for _, sp := range spans {
			if sp[1]-sp[0] >= minShared {
				shared += sp[1] - sp[0]
			}
		}
		if len(it.json) != len(b)-shared {
			t.Fatalf("%d: the item holds %d bytes itself, want %d", i, len(it.json), len(b)-shared)
		}
	}
}

// TestItemSharesOneCopy wants two items with the same part to hold the
// same bytes for it, and an item whose JSON shares nothing to keep the
// buffer it was given.
func TestItemSharesOneCopy(t *testing.T) {
	part := bytes.Repeat([]byte("f"), minShared)
	a, b := &Item{}, &Item{}
	a.SetJSON(append(append([]byte(`{"a":"`), part...), `"}`...), [][2]int{{6, 6 + minShared}}, nil)
	b.SetJSON(append(append([]byte(`{"b":"`), part...), `"}`...), [][2]int{{6, 6 + minShared}}, nil)
	if len(a.shared) != 1 || len(b.shared) != 1 || a.shared[0].part != b.shared[0].part {
		t.Errorf("the items do not share their common part: %v, %v", a.shared, b.shared)
	}
	own := []byte(`{"c":1}`)
	c := &Item{}
	c.SetJSON(own, [][2]int{{1, 4}}, nil)
	if got := c.JSON(); &got[0] != &own[0] {
		t.Error("an item with no part long enough to share copied its buffer")
	}
}

// TestItemCopyJSON: an item set from a buffer its caller reuses keeps
// none of it, whether it shares parts or not, and reads back as set.
func TestItemCopyJSON(t *testing.T) {
	part := bytes.Repeat([]byte("f"), minShared)
	whole := []byte(`{"c":1}`)
	parts := append(append([]byte(`{"a":"`), part...), `"}`...)
	for _, tc := range []struct {
		b     []byte
		spans [][2]int
	}{{whole, nil}, {whole, [][2]int{{1, 4}}}, {parts, [][2]int{{6, 6 + minShared}}}} {
		buf := bytes.Clone(tc.b)
		it := &Item{}
		it.CopyJSON(buf, tc.spans, nil)
		for i := range buf {
			buf[i] = 'x'
		}
		if got := it.JSON(); !bytes.Equal(got, tc.b) {
			t.Errorf("after the buffer changed, JSON %q, want %q", got, tc.b)
		}
	}
}

// TestItemJSONInto reads items kept whole and in parts through one
// buffer, as a first Table list builds its rows: each reads back as JSON
// does, the buffer holds only what was put together in it, and reading
// the next item through it changes none of the items.
func TestItemJSONInto(t *testing.T) {
	part := bytes.Repeat([]byte("f"), minShared)
	whole, parts := []byte(`{"whole":1}`), append(append([]byte(`{"p":"`), part...), `"}`...)
	var items []*Item
	for range 3 {
		a, b := &Item{}, &Item{}
		a.SetJSON(bytes.Clone(whole), nil, nil)
		b.SetJSON(bytes.Clone(parts), [][2]int{{6, 6 + minShared}}, nil)
		items = append(items, a, b)
	}
	buf := new([]byte)
	for i, it := range items {
		got := it.JSONInto(buf)
		if !bytes.Equal(got, it.JSON()) {
			t.Fatalf("item %d: JSONInto %q, JSON %q", i, got, it.JSON())
		}
		if it.shared == nil && len(*buf) > 0 && &(*buf)[0] == &got[0] {
			t.Fatalf("item %d: the buffer holds the item's own bytes", i)
		}
	}
	for i, it := range items {
		want := whole
		if i%2 == 1 {
			want = parts
		}
		if !bytes.Equal(it.JSON(), want) {
			t.Errorf("item %d reads %q after the others were read, want %q", i, it.JSON(), want)
		}
	}
}

// checkMetadataInto sets the item's metadata range at random between
// where its parts start and end (b's bytes, spans shared as SetJSON
// shares them), and wants MetadataInto to give those bytes with each
// shared part in them as {}.
func checkMetadataInto(t *testing.T, i int, it *Item, b []byte, spans [][2]int, rng *rand.Rand) {
	t.Helper()
	var shared [][2]int
	bounds := []int{0, len(b)}
	for _, sp := range spans {
		if sp[1]-sp[0] >= minShared {
			shared = append(shared, sp)
			bounds = append(bounds, sp[0], sp[1])
		}
	}
	it.MetaStart, it.MetaEnd = 0, 0
	var buf []byte
	if md, ok := it.MetadataInto(&buf); ok || md != nil {
		t.Fatalf("%d: MetadataInto with no metadata: %q, %v", i, md, ok)
	}
	if len(b) == 0 {
		return
	}
	start, end := bounds[rng.Intn(len(bounds))], bounds[rng.Intn(len(bounds))]
	if start > end {
		start, end = end, start
	}
	if start == end {
		end = len(b)
	}
	var want []byte
	from := start
	for _, sp := range shared {
		if sp[0] >= start && sp[1] <= end {
			want = append(append(want, b[from:sp[0]]...), "{}"...)
			from = sp[1]
		}
	}
	want = append(want, b[from:end]...)
	it.MetaStart, it.MetaEnd = int32(start), int32(end)
	buf = []byte("stale")
	md, ok := it.MetadataInto(&buf)
	if !ok || !bytes.Equal(md, want) {
		t.Fatalf("%d: MetadataInto [%d,%d) = %q, %v; want %q (spans %v)", i, start, end, md, ok, want, spans)
	}
	if len(shared) == 0 && len(md) > 0 && &md[0] != &it.json[start] {
		t.Fatalf("%d: MetadataInto copied an item that shares nothing", i)
	}
}

// TestItemSkipsBadSpans gives SetJSON spans out of order, overlapping and
// out of the object: it shares none of those, and reads back what it was
// given.
func TestItemSkipsBadSpans(t *testing.T) {
	b := bytes.Repeat([]byte("0123456789"), 30)
	it := &Item{}
	it.SetJSON(bytes.Clone(b), [][2]int{{100, 200}, {150, 250}, {50, 120}, {250, 400}, {-1, 80}, {200, 264}}, nil)
	if got := it.JSON(); !bytes.Equal(got, b) {
		t.Fatalf("JSON %q, want %q", got, b)
	}
	if len(it.shared) != 2 {
		t.Errorf("shared %d parts, want 2 ([100,200) and [200,264))", len(it.shared))
	}
}

// TestItemLabels sets labels with the object kept whole, copied, and in
// one or two parts: each item reads them back as set and its JSON is
// unchanged by them, the buffer it was given reused after.
func TestItemLabels(t *testing.T) {
	part := bytes.Repeat([]byte("f"), minShared)
	whole := []byte(`{"c":1}`)
	one := append(append([]byte(`{"a":"`), part...), `"}`...)
	two := append(append(append(append([]byte(`{"a":"`), part...), `","b":"`...), part...), `"}`...)
	set := labels.Set{"app": "x", "tier": "", strings.Repeat("k", 200): "v"}
	for _, tc := range []struct {
		name  string
		b     []byte
		spans [][2]int
		copy  bool
		parts int
	}{
		{"whole", whole, nil, false, 0},
		{"whole copied", whole, nil, true, 0},
		{"one part", one, [][2]int{{6, 6 + minShared}}, false, 1},
		{"one part copied", one, [][2]int{{6, 6 + minShared}}, true, 1},
		{"two parts", two, [][2]int{{6, 6 + minShared}, {13 + minShared, 13 + 2*minShared}}, true, 2},
	} {
		for _, l := range []labels.Set{nil, set} {
			buf := bytes.Clone(tc.b)
			it := &Item{}
			if tc.copy {
				it.CopyJSON(buf, tc.spans, l)
				for i := range buf {
					buf[i] = 'x'
				}
			} else {
				it.SetJSON(buf, tc.spans, l)
			}
			if got := it.JSON(); !bytes.Equal(got, tc.b) {
				t.Errorf("%s, labels %v: JSON %q, want %q", tc.name, l, got, tc.b)
			}
			if got := it.Labels.Set(); !labels.Equals(got, l) {
				t.Errorf("%s: labels %v, want %v", tc.name, got, l)
			}
			if len(it.shared) != tc.parts {
				t.Errorf("%s: %d parts shared, want %d", tc.name, len(it.shared), tc.parts)
			}
		}
	}
}

// TestItemAllocations: an object with one shared part and labels, the
// common case of the cache, costs the item one buffer of its own (and
// the sorted keys while packing): its part is held in the item, its
// labels after its bytes.
func TestItemAllocations(t *testing.T) {
	part := bytes.Repeat([]byte("f"), minShared)
	b := append(append([]byte(`{"a":"`), part...), `"}`...)
	spans := [][2]int{{6, 6 + minShared}}
	set := labels.Set{"app": "x", "tier": "frontend"}
	it := &Item{}
	it.CopyJSON(b, spans, set) // the part is known from here on
	if n := testing.AllocsPerRun(100, func() { it.CopyJSON(b, spans, set) }); n > 2 {
		t.Errorf("CopyJSON: %v allocations, want at most 2 (own bytes with labels, sorted keys)", n)
	}
}

// TestItemOwnString finds strings in the item's own bytes and not in its
// shared parts.
func TestItemOwnString(t *testing.T) {
	part := bytes.Repeat([]byte("f"), minShared)
	b := append(append([]byte(`{"a":"`), part...), `","uid":"u-1"}`...)
	it := &Item{}
	it.CopyJSON(b, [][2]int{{6, 6 + minShared}}, nil)
	for _, tc := range []struct {
		s     string
		found bool
	}{{"u-1", true}, {`"uid"`, true}, {string(part), false}, {"", false}, {"u-2", false}} {
		got, ok := it.OwnString(tc.s)
		if got != tc.s || ok != tc.found {
			t.Errorf("OwnString(%q) = %q, %v; want it, %v", tc.s, got, ok, tc.found)
		}
		if ok {
			p := uintptr(unsafe.Pointer(unsafe.StringData(got)))
			if start := uintptr(unsafe.Pointer(&it.json[0])); p < start || p+uintptr(len(got)) > start+uintptr(len(it.json)) {
				t.Errorf("OwnString(%q) is not in the item's own bytes", tc.s)
			}
		}
	}
}
