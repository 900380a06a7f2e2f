package main

import (
	"bytes"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// rawText is an answer's body as sent, for a "raw" line: whitespace,
// escapes and numbers as they are, with only what two servers never
// agree on masked (see rawMasks) and each object's members sorted by
// key (see sortMembers), since built-in objects are written in Go struct
// order by one server and in key order by the other.
func rawText(b []byte) string {
	b = sortMembers(b)
	for _, m := range rawMasks {
		b = m.re.ReplaceAll(b, []byte(m.with))
	}
	return strconv.Quote(string(b))
}

// rawMasks are the values a raw comparison leaves out: times, uids,
// resourceVersions, the port a server listens on (in /api's
// serverAddress), Table cells that are ages, and the build a /version
// names.
var rawMasks = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})"`), `"-"`},
	{uidText, "-"},
	{regexp.MustCompile(`(resourceVersion"?: ?)"[0-9]*"`), `$1"-"`},
	{regexp.MustCompile(`(127\.0\.0\.1|localhost):[0-9]+`), "$1:-"},
	{regexp.MustCompile(`"[0-9]+[smhdy]([0-9]+[smh])?"`), `"-"`},
	{regexp.MustCompile(`("(gitVersion|gitCommit|gitTreeState|goVersion)": ?)"[^"]*"`), `$1"-"`},
}

// sortMembers returns b, one JSON value or several one after another (a
// watch's events), with the members of each object in the order of their
// keys' text. Every member keeps its text byte for byte, whitespace
// inside it included, and the text between members is kept: an encoder
// that writes the same separator between all members of an object (as
// every one does) gives the text it would have written with sorted keys.
// An object whose separators differ keeps its order, so that the
// difference shows. Text that is not JSON is returned as it is.
func sortMembers(b []byte) []byte {
	var out []byte
	i := 0
	for {
		j := skipSpace(b, i)
		out = append(out, b[i:j]...)
		if j == len(b) {
			return out
		}
		v, next, ok := sortedValue(b, j)
		if !ok {
			return b
		}
		out, i = append(out, v...), next
	}
}

// sortedValue reads the value at b[i:] and returns its text with sorted
// members and the index after it.
func sortedValue(b []byte, i int) (text []byte, next int, ok bool) {
	switch b[i] {
	case '{', '[':
		return sortedComposite(b, i)
	case '"':
		j, ok := stringEnd(b, i)
		return b[i:j], j, ok
	}
	j := i
	for j < len(b) && strings.IndexByte(" \t\r\n,:]}", b[j]) < 0 {
		j++
	}
	return b[i:j], j, j > i
}

// sortedComposite is sortedValue of an object or array.
func sortedComposite(b []byte, i int) ([]byte, int, bool) {
	object := b[i] == '{'
	end := byte(']')
	if object {
		end = '}'
	}
	type member struct{ key, text []byte }
	var members []member
	var seps [][]byte
	open := skipSpace(b, i+1)
	j := open
	if j < len(b) && b[j] == end {
		return b[i : j+1], j + 1, true
	}
	for {
		var m member
		if object {
			if j >= len(b) || b[j] != '"' {
				return nil, 0, false
			}
			k, ok := stringEnd(b, j)
			if !ok {
				return nil, 0, false
			}
			m.key = b[j:k]
			k = skipSpace(b, k)
			if k >= len(b) || b[k] != ':' {
				return nil, 0, false
			}
			k = skipSpace(b, k+1)
			if k >= len(b) {
				return nil, 0, false
			}
			v, next, ok := sortedValue(b, k)
			if !ok {
				return nil, 0, false
			}
			m.text = append(append([]byte(nil), b[j:k]...), v...)
			j = next
		} else {
			if j >= len(b) {
				return nil, 0, false
			}
			v, next, ok := sortedValue(b, j)
			if !ok {
				return nil, 0, false
			}
			m.text, j = v, next
		}
		members = append(members, m)
		k := skipSpace(b, j)
		if k >= len(b) {
			return nil, 0, false
		}
		if b[k] == end {
			out := append([]byte(nil), b[i:open]...)
			sameSeps := true
			for _, s := range seps {
				sameSeps = sameSeps && bytes.Equal(s, seps[0])
			}
			if object && sameSeps {
				sort.SliceStable(members, func(x, y int) bool { return bytes.Compare(members[x].key, members[y].key) < 0 })
			}
			for n, m := range members {
				if n > 0 {
					out = append(out, seps[n-1]...)
				}
				out = append(out, m.text...)
			}
			return append(out, b[j:k+1]...), k + 1, true
		}
		if b[k] != ',' {
			return nil, 0, false
		}
		next := skipSpace(b, k+1)
		seps = append(seps, b[j:next])
		j = next
	}
}

// stringEnd returns the index after the string that starts at b[i].
func stringEnd(b []byte, i int) (int, bool) {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1, true
		}
	}
	return 0, false
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}
