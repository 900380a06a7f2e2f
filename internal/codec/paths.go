package codec

import "errors"

// Paths is a set of member paths (object member names from the top, as
// FindPath takes them) compiled to be found together. Reading several
// members of a large object with FindPath scans everything before each of
// them again: a Table row's columns sit after metadata and its
// managedFields, and each column paid for that scan. Paths.Find reads the
// object once.
type Paths struct {
	root pathNode
}

// pathNode is one level of the paths: the member names wanted there.
type pathNode struct {
	members []pathMember
}

type pathMember struct {
	name string
	at   int       // index of the path ending at this member; -1 for none
	next *pathNode // the members wanted inside it; nil for none
}

// maxPathMembers bounds the members wanted at one level, so that Find can
// mark the ones it has met in a word.
const maxPathMembers = 64

// NewPaths compiles paths. A path must name at least one member, and no
// level may want more than 64 members.
func NewPaths(paths [][]string) (*Paths, error) {
	ps := &Paths{}
	for i, path := range paths {
		if len(path) == 0 {
			return nil, errors.New("codec: an empty member path")
		}
		n := &ps.root
		for depth, name := range path {
			j := n.member(name)
			if j < 0 {
				if len(n.members) == maxPathMembers {
					return nil, errors.New("codec: more than 64 member paths at one level")
				}
				n.members = append(n.members, pathMember{name: name, at: -1})
				j = len(n.members) - 1
			}
			m := &n.members[j]
			if depth == len(path)-1 {
				if m.at < 0 { // a repeated path is found once, as its first
					m.at = i
				}
				break
			}
			if m.next == nil {
				m.next = &pathNode{}
			}
			n = m.next
		}
	}
	return ps, nil
}

func (n *pathNode) member(name string) int {
	for j := range n.members {
		if n.members[j].name == name {
			return j
		}
	}
	return -1
}

// Find calls found with the index of each path present in encoded and its
// encoded value, as FindPath would return it, in the order the values end
// in encoded (a path's value after those of paths below it); a path given
// more than once is reported by its first index. Unlike
// FindPath it reads the whole object, and ok is false when any of it is
// malformed; found may have been called by then.
func (ps *Paths) Find(encoded []byte, found func(i int, value []byte)) (ok bool) {
	s := scanner{b: encoded}
	if !s.peek('{') {
		return s.value(0)
	}
	return s.paths(&ps.root, 0, found)
}

// paths scans the object at s.i, reporting the members n wants and
// descending into those with paths below them.
func (s *scanner) paths(n *pathNode, depth int, found func(int, []byte)) bool {
	if depth >= maxScanDepth {
		return false
	}
	// The members of n already met: a member's first occurrence counts.
	var met uint64
	return eachMember(s, func(name []byte) bool {
		j := -1
		for c := range n.members {
			if met&(1<<c) == 0 && string(name) == n.members[c].name {
				j = c
				break
			}
		}
		if j < 0 {
			return s.value(depth + 1)
		}
		met |= 1 << j
		m := &n.members[j]
		start := s.i
		if m.next != nil && s.peek('{') {
			if !s.paths(m.next, depth+1, found) {
				return false
			}
		} else if !s.value(depth + 1) {
			return false
		}
		if m.at >= 0 {
			found(m.at, s.b[start:s.i])
		}
		return true
	})
}
