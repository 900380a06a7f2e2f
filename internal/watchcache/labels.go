package watchcache

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"unsafe"

	"k8s.io/apimachinery/pkg/labels"
)

// Labels are an item's labels as label selectors read them. The cache
// holds one per object, so they are packed into a single string (each
// label's key and value, in key order, each after its length as a
// uvarint) rather than kept as a map: a map of four labels costs about
// 500 bytes in a dozen allocations, the packed form one allocation of
// about the size of the text. A lookup scans the labels (objects carry
// few) up to the first key past the one sought. The zero value has no
// labels. Selectors match a *Labels: a Labels value would be copied to
// the heap to become a labels.Labels interface, once per item matched.
type Labels struct{ packed string }

var _ labels.Labels = (*Labels)(nil)

// NewLabels packs m. The result shares no memory with m.
func NewLabels(m map[string]string) Labels {
	if len(m) == 0 {
		return Labels{}
	}
	keys, n := labelKeys(m)
	// Exactly n: the packed string is this one allocation.
	b := appendLabels(make([]byte, 0, n), keys, m)
	return Labels{packed: unsafe.String(unsafe.SliceData(b), len(b))}
}

// labelKeys returns m's keys sorted and the length of m packed.
func labelKeys(m map[string]string) ([]string, int) {
	if len(m) == 0 {
		return nil, 0
	}
	keys := make([]string, 0, len(m))
	n := 0
	for k, v := range m {
		keys = append(keys, k)
		n += sizedLen(k) + sizedLen(v)
	}
	slices.Sort(keys)
	return keys, n
}

// appendLabels appends m packed to dst, keys being its keys sorted.
func appendLabels(dst []byte, keys []string, m map[string]string) []byte {
	for _, k := range keys {
		dst = appendString(dst, k)
		dst = appendString(dst, m[k])
	}
	return dst
}

// sizedLen is what writeString writes for s.
func sizedLen(s string) int { return (bits.Len64(uint64(len(s))|1)+6)/7 + len(s) }

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// All calls yield with each label in key order until it returns false.
func (l Labels) All(yield func(key, value string) bool) {
	for s := l.packed; s != ""; {
		var k, v string
		k, s = nextString(s)
		v, s = nextString(s)
		if !yield(k, v) {
			return
		}
	}
}

// nextString splits one length-prefixed string off the front of s.
func nextString(s string) (string, string) {
	n, w := uvarint(s)
	return s[w : w+n], s[w+n:]
}

// uvarint decodes the length at the front of s (written by
// writeString, so well formed) and returns it and its width.
func uvarint(s string) (int, int) {
	var n uint64
	var shift uint
	for i := 0; ; i++ {
		c := s[i]
		n |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return int(n), i + 1
		}
		shift += 7
	}
}

// Lookup implements labels.Labels.
func (l Labels) Lookup(key string) (value string, ok bool) {
	l.All(func(k, v string) bool {
		if k == key {
			value, ok = v, true
		}
		return !ok && k < key // keys are sorted: stop once past key
	})
	return value, ok
}

// Has implements labels.Labels.
func (l Labels) Has(key string) bool {
	_, ok := l.Lookup(key)
	return ok
}

// Get implements labels.Labels.
func (l Labels) Get(key string) string {
	v, _ := l.Lookup(key)
	return v
}

// Len returns the number of labels.
func (l Labels) Len() int {
	n := 0
	for range l.All {
		n++
	}
	return n
}

// Set returns the labels as a new map (nil when there are none).
func (l Labels) Set() labels.Set {
	if l.packed == "" {
		return nil
	}
	m := labels.Set{}
	for k, v := range l.All {
		m[k] = v
	}
	return m
}

// size is the heap the labels hold, for the window's estimates.
func (l Labels) size() int { return len(l.packed) }

// String formats the labels as a selector would match them, "k=v,k2=v2".
func (l Labels) String() string { return l.Set().String() }
