package codec

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// forgetFieldSets empties the field sets kept and returns a func that
// puts them back.
func forgetFieldSets() (restore func()) {
	fieldSets.mu.Lock()
	saved, size := fieldSets.sets, fieldSets.size
	fieldSets.sets, fieldSets.size = make(map[string][]*FieldSet), 0
	fieldSets.mu.Unlock()
	return func() {
		fieldSets.mu.Lock()
		fieldSets.sets, fieldSets.size = saved, size
		fieldSets.mu.Unlock()
	}
}

// walkMembers is what EachRawObjectMember hands over for a, written out.
func walkMembers(a []byte) string {
	var b strings.Builder
	EachRawObjectMember(a, func(name, value []byte) bool {
		fmt.Fprintf(&b, "m %q %q\n", name, value)
		return true
	}, func(e []byte) bool {
		fmt.Fprintf(&b, "e %q\n", e)
		return true
	})
	return b.String()
}

// rememberFieldSets keeps the field sets of the entries a, when they are
// in Marshal's form, as the watch cache's check of an object's
// managedFields does.
func rememberFieldSets(a []byte) {
	rawManagedFields(a, 0, DefaultMaxDepth, true)
	rawManagedFields(a, 0, DefaultMaxDepth, true) // kept the second time
}

// checkWalkKnown wants walking a to give the same with the field sets
// remembered as with none, after remembering those of each of learn.
func checkWalkKnown(t *testing.T, a []byte, learn ...[]byte) {
	t.Helper()
	restore := forgetFieldSets()
	defer restore()
	want := walkMembers(a)
	for _, l := range learn {
		rememberFieldSets(l)
	}
	if got := walkMembers(a); got != want {
		t.Fatalf("walk of %q with remembered field sets:\n%s\nwant:\n%s", a, got, want)
	}
}

func TestRememberedFieldSets(t *testing.T) {
	mf := storedManagedFields(t)
	f := fieldsV1Of(t, mf)
	restore := forgetFieldSets()
	defer restore()

	walkMembers(mf)
	if KnownFieldSet(f) != nil {
		t.Fatal("a walk keeps a field set")
	}
	rememberFieldSets(mf)
	fs := KnownFieldSet(f)
	if fs == nil {
		t.Fatal("a field set checked in Marshal's form is not kept")
	}
	if KnownFieldSet(f[:len(f)-1]) != nil || KnownFieldSet(append(bytes.Clone(f), ' ')) != nil {
		t.Error("KnownFieldSet finds a field set for other bytes")
	}
	if got := fs.Derived(func(enc []byte) any { return len(enc) }); got != len(f) {
		t.Errorf("Derived = %v, want %d", got, len(f))
	}
	if got := fs.Derived(func([]byte) any { return -1 }); got != len(f) {
		t.Errorf("Derived built again: %v", got)
	}
	checkWalkKnown(t, mf, mf)
}

func TestRememberedFieldSetsDoNotChangeWalks(t *testing.T) {
	mf := storedManagedFields(t)
	// Long enough to be kept.
	known := `[{"fieldsV1":{"f:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa":{}},"manager":"m"}]`
	restore := forgetFieldSets()
	rememberFieldSets([]byte(known))
	if KnownFieldSet(fieldsV1Of(t, []byte(known))) == nil {
		t.Fatal("the field set is not kept")
	}
	restore()
	for _, a := range []string{
		// The remembered set as a prefix of values that are not it.
		`[{"fieldsV1":{"f:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa":{}},"manager":"m"}]`,
		`[{"fieldsV1":{"f:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa":{}}}]`,
		`[{"fieldsV1":{"f:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa":{}}`,
		`[{"fieldsV1":{"f:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa":{}`,
		`[{"fieldsV1":{"f:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa":{},"f:b":{}},"manager":"m"}]`,
		`[{"fieldsV1":{"f:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa":{}}x,"manager":"m"}]`,
		`[{"fieldsV1":{"f:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa":{}}}],[{"fieldsV1":{"f:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa":{}}}]`,
		`[{"other":{"f:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa":{}},"fieldsV1":"s"}]`,
		`[{"fieldsV1":{"f:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa":{}}},{"fieldsV1":{"f:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa":{}}},7,{"fieldsV1":[]}]`,
	} {
		checkWalkKnown(t, []byte(a), []byte(known))
	}
	for _, v := range variedFields(20) {
		checkWalkKnown(t, v, v)
		checkWalkKnown(t, v, mf, v[:len(v)/2])
	}
	checkWalkKnown(t, mf, variedFields(40)...)
}

// fieldsV1Of is the first fieldsV1 value of the encoded entries a.
func fieldsV1Of(t *testing.T, a []byte) []byte {
	t.Helper()
	var f []byte
	EachRawObjectMember(a, func(name, value []byte) bool {
		if string(name) == "fieldsV1" && f == nil {
			f = value
		}
		return true
	}, func([]byte) bool { return true })
	if f == nil {
		t.Fatalf("no fieldsV1 in %q", a)
	}
	return bytes.Clone(f)
}

// FuzzRememberedFieldSets wants a walk to give what it gives with no field
// set remembered, whatever was remembered before, from whatever bytes.
func FuzzRememberedFieldSets(f *testing.F) {
	mf := storedManagedFields(f)
	f.Add(mf, mf)
	long := strings.Repeat("a", 64)
	f.Add([]byte(`[{"fieldsV1":{"f:`+long+`":{}}}]`), []byte(`[{"fieldsV1":{"f:`+long+`":{}},"x":1}]`))
	f.Add([]byte(`[{"fieldsV1":{"f:`+long+`":{"f:b":{}}}}]`), []byte(`[{"fieldsV1":{"f:`+long+`":{}}}]`))
	f.Add([]byte(`[{"fieldsV1":{"f:a":{"\"}":{}}}}]`), []byte(`[{"fieldsV1":{"f:a":{"\"}`))
	f.Fuzz(func(t *testing.T, a, learn []byte) {
		checkWalkKnown(t, a, learn)
	})
}

// TestFieldSetsKeptFromStoredObjectsOnly: a field set is kept once the
// watch cache's indexing found it twice, never from what a client sends.
func TestFieldSetsKeptFromStoredObjectsOnly(t *testing.T) {
	restore := forgetFieldSets()
	defer restore()
	set := `{"f:metadata":{"f:labels":{".":{},"f:` + strings.Repeat("x", 64) + `":{}}}}`
	obj := []byte(`{"metadata":{"managedFields":[{"fieldsType":"FieldsV1","fieldsV1":` + set + `,"manager":"m"}],"name":"a"}}`)
	for range 3 {
		if _, _, err := Decode(obj, "", DecodeOptions{RawManagedFields: true}); err != nil {
			t.Fatal(err)
		}
	}
	if KnownFieldSet([]byte(set)) != nil {
		t.Fatal("a field set a client sent is kept")
	}
	for i := range 2 {
		if KnownFieldSet([]byte(set)) != nil {
			t.Fatalf("kept after %d reads of stored objects", i)
		}
		if _, ok := IndexStored(nil, obj, "1"); !ok {
			t.Fatal("IndexStored failed")
		}
	}
	if KnownFieldSet([]byte(set)) == nil {
		t.Fatal("a field set indexed twice is not kept")
	}
}
