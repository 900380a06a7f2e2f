package builtin

import (
	"hash/maphash"
	"reflect"
	"sync"

	"github.com/crdserver/crdserver/internal/codec"
)

// A built-in write trims its object through the Go type more than once:
// its Default, then its PrepareForCreate or PrepareForUpdate, which trim
// again in case admission or a hook changed it in between. Usually nothing
// did, and the second trim decoded and converted the object for nothing:
// for a Namespace update, a tenth of the server's CPU. Typed.rewrite
// therefore notes what each rewrite leaves (the members trim replaces, as
// encoded), and a trim finding its object noted returns at once: the typed
// form is a fixed point of the round trip.
//
// What is noted is a hash of the encoding (two 64-bit hashes with
// different seeds, and the length), with the Go type: holding the
// encodings themselves would cost as much memory as the objects.

// trimmedForms is every Typed's record of the forms its rewrites left.
var trimmedForms = newTrimmedSet(4096)

// trimmedForm identifies the members other than apiVersion, kind and
// metadata of an object in the typed form of t.
type trimmedForm struct {
	t      reflect.Type
	h1, h2 uint64
	n      int
}

// trimmedSet is a bounded set of trimmedForms: when full it starts again,
// which only costs the next trims of the forgotten forms their work.
type trimmedSet struct {
	seed1, seed2 maphash.Seed
	max          int

	mu    sync.Mutex
	forms map[trimmedForm]struct{}
}

func newTrimmedSet(max int) *trimmedSet {
	return &trimmedSet{seed1: maphash.MakeSeed(), seed2: maphash.MakeSeed(), max: max}
}

// form identifies obj's members other than apiVersion, kind and metadata
// (those trim replaces) as a T; ok is false when they do not encode.
func (s *trimmedSet) form(t reflect.Type, obj map[string]any) (f trimmedForm, ok bool) {
	rest := make(map[string]any, len(obj))
	for k, v := range obj {
		switch k {
		case "apiVersion", "kind", "metadata":
		default:
			rest[k] = v
		}
	}
	enc, err := codec.Marshal(rest)
	if err != nil {
		return trimmedForm{}, false
	}
	return trimmedForm{t: t, h1: maphash.Bytes(s.seed1, enc), h2: maphash.Bytes(s.seed2, enc), n: len(enc)}, true
}

func (s *trimmedSet) has(f trimmedForm) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.forms[f]
	return ok
}

func (s *trimmedSet) add(f trimmedForm) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.forms == nil || len(s.forms) >= s.max {
		s.forms = make(map[trimmedForm]struct{})
	}
	s.forms[f] = struct{}{}
}
