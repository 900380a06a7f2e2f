package codec

import (
	"hash/maphash"
	"slices"
	"sync"
)

// Field sets seen before. The fieldsV1 values of managedFields are most
// of an object's metadata, and objects one manager writes alike carry the
// same bytes there (the watch cache keeps one copy of them for all such
// objects, see watchcache.Item.SetJSON). Every write of such an object
// reads them several times: the cache's indexing checks their form
// (rawCanon), and walks over the entries (EachRawObjectMember: the
// cache's FieldsV1Spans, metadata validation, pruning's member check, the
// field manager's entry reader) skip them. Once one is found in
// Marshal's form, in stored objects, twice, it is kept: later reads take bytes that start with it at
// the cost of a compare, and readers may keep what they derive from it
// with it (KnownFieldSet, FieldSet.Derived).

// fieldSets are the field sets rawCanon found twice in Marshal's form with
// the bound rawManagedFieldsDepth-2 on their nesting (that of an entry's
// fieldsV1 in a Raw).
var fieldSets = fieldSetCache{sets: make(map[string][]*FieldSet)}

const (
	// A field set shorter than minFieldSet is checked each time, which
	// costs less than looking it up; one longer than maxFieldSet is
	// checked each time too, so as not to keep it. minFieldSet is also
	// how many of its first bytes find a field set.
	minFieldSet = 64
	maxFieldSet = 16 << 10
	// maxFieldSetBytes bounds the bytes fieldSets keeps: when a field
	// set would take it over, the cache starts again, empty. What readers
	// derive from the field sets is not counted; it is bounded by their
	// own limits (an ownership index is built for field sets of at most
	// 8 KiB, see apply.ownedIn).
	maxFieldSetBytes = 1 << 20
	// maxFieldSetsAlike bounds the field sets kept with the same first
	// minFieldSet bytes: the oldest goes first.
	maxFieldSetsAlike = 8
	// A field set is kept the second time it is found among the last
	// seenFieldSets not kept, so that objects whose field sets are all
	// different (keys of their own) do not fill the cache and empty it
	// again and again.
	seenFieldSets = 16
)

// FieldSet is an encoded field set (a fieldsV1 value) in Marshal's form,
// seen before. It is never modified once made.
type FieldSet struct {
	enc     string
	derived sync.Once
	value   any
}

// Derived returns what build derives from the field set's bytes, building
// it on the first call and keeping it for every later one. Every caller
// must pass the same build (one reader of field sets keeps its form
// here). build must not keep or modify enc.
func (fs *FieldSet) Derived(build func(enc []byte) any) any {
	fs.derived.Do(func() { fs.value = build([]byte(fs.enc)) })
	return fs.value
}

// KnownFieldSet returns the field set kept whose bytes are v, or nil.
func KnownFieldSet(v []byte) *FieldSet {
	if fs := fieldSets.find(v); fs != nil && len(fs.enc) == len(v) {
		return fs
	}
	return nil
}

// skipFieldSet returns the offset after the value at b[i], a fieldsV1
// value: as skipRaw does, but for a field set kept at the cost of a
// compare. Bytes that start with a field set kept hold that field set:
// it is a whole value in Marshal's form, and skipRaw ends a value where
// its bytes balance, which depends on no byte after them.
func skipFieldSet(b []byte, i int) int {
	if fs := fieldSets.find(b[i:]); fs != nil {
		return i + len(fs.enc)
	}
	return skipRaw(b, i)
}

// fieldSetCache is a set of byte strings, of at most maxFieldSetBytes in
// all, found by their first minFieldSet bytes, so that finding one that
// starts some bytes does not need where it would end.
type fieldSetCache struct {
	mu   sync.RWMutex // guards sets, size and seen
	sets map[string][]*FieldSet
	size int
	// seen are hashes of the last field sets found once.
	seen  [seenFieldSets]uint64
	seenN int
}

var fieldSetSeed = maphash.MakeSeed()

// find returns the field set b starts with, nil for none.
func (fc *fieldSetCache) find(b []byte) *FieldSet {
	if len(b) < minFieldSet {
		return nil
	}
	fc.mu.RLock()
	defer fc.mu.RUnlock()
	for _, fs := range fc.sets[string(b[:minFieldSet])] {
		if len(fs.enc) <= len(b) && string(b[:len(fs.enc)]) == fs.enc {
			return fs
		}
	}
	return nil
}

// reset empties the cache.
func (fc *fieldSetCache) reset() {
	fc.mu.Lock()
	clear(fc.sets)
	fc.size = 0
	fc.seen = [seenFieldSets]uint64{}
	fc.mu.Unlock()
}

// add keeps b, a field set rawCanon found in Marshal's form.
func (fc *fieldSetCache) add(b []byte) {
	if len(b) < minFieldSet || len(b) > maxFieldSet {
		return
	}
	fc.mu.Lock()
	defer fc.mu.Unlock()
	k := string(b[:minFieldSet])
	alike := fc.sets[k]
	for _, fs := range alike {
		if fs.enc == string(b) {
			return
		}
	}
	h := maphash.Bytes(fieldSetSeed, b)
	i := slices.Index(fc.seen[:], h)
	if i < 0 || h == 0 {
		fc.seen[fc.seenN%seenFieldSets] = h
		fc.seenN++
		return
	}
	fc.seen[i] = 0
	if fc.size+len(b) > maxFieldSetBytes {
		clear(fc.sets) // as reset does, under the lock held
		fc.size, alike = 0, nil
	}
	if len(alike) == maxFieldSetsAlike {
		fc.size -= len(alike[0].enc)
		alike = append(alike[:0:0], alike[1:]...)
	}
	fc.sets[k] = append(alike, &FieldSet{enc: string(b)})
	fc.size += len(b)
}
