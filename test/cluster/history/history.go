// Package history checks what clients of an API server saw against what
// storage recorded, in the manner of etcd's robustness tests: acknowledged
// writes are never lost, and each watch reports exactly the changes that
// happened, in order, once each, from where it started to where it ended.
//
// A History holds three kinds of records. The Reference is the complete,
// ordered account of every change to the watched objects, read from etcd
// itself (a watch on the key prefix from before the first write); it is
// checked for order and then trusted. Writes are what clients were told;
// Watches and Lists are what clients were shown. Check compares the latter
// two with the Reference and returns every violation it finds.
//
// Objects are identified by Key (e.g. namespace/name) and compared by
// Value (whatever part of the object the writers make unique, such as a
// data field), and positioned by resourceVersion (etcd's revision).
package history

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/watch"
)

// Event types are the watch events' (a Bookmark carries only a revision).
const (
	Added    = watch.Added
	Modified = watch.Modified
	Deleted  = watch.Deleted
	Bookmark = watch.Bookmark
)

// Event is one change (or bookmark) at revision RV.
type Event struct {
	Type  watch.EventType
	Key   string
	Value string // the value written; for Deleted, the value removed
	RV    int64
}

func (e Event) String() string {
	if e.Type == Bookmark {
		return fmt.Sprintf("BOOKMARK@%d", e.RV)
	}
	return fmt.Sprintf("%s %s=%q@%d", e.Type, e.Key, e.Value, e.RV)
}

// Op is a kind of write.
type Op string

// Kinds of writes.
const (
	Create Op = "create"
	Update Op = "update"
	Delete Op = "delete"
)

// Write is one write a client attempted.
type Write struct {
	Op    Op
	Key   string
	Value string // written (Create, Update); unused for Delete
	// Precondition is the resourceVersion the write required the object
	// to have (Update, Delete); 0 for none.
	Precondition int64
	// Outcome says what the client was told.
	Outcome Outcome
	// RV is the resourceVersion an acknowledged Create or Update returned;
	// for an acknowledged Delete it may be 0 (the server answered with a
	// Status, not the object).
	RV int64
}

// Outcome is what a client was told about a write.
type Outcome int

const (
	// Acknowledged writes happened: they must be in the Reference.
	Acknowledged Outcome = iota
	// Refused writes (a conflict, a failed precondition, invalid) did
	// not happen: their value must not be in the Reference.
	Refused
	// Unknown writes (a timeout, a lost connection, a 5xx) may or may
	// not have happened.
	Unknown
)

// Watch is what one watch request reported, from its start until it ended
// (the connection closed, the client stopped it, or 410 Gone).
type Watch struct {
	Name string // for messages: which watcher, which replica, which attempt
	// From is the revision the watch started after: the resourceVersion
	// it was opened with, or the revision of the list it followed.
	From   int64
	Events []Event // in the order received, bookmarks included
	// Expired says the watch ended with 410 Gone: it may have missed
	// changes after its last event, and its client must relist.
	Expired bool
}

// List is what one list request returned: the objects at revision RV.
type List struct {
	Name  string
	RV    int64
	Items map[string]string // key → value
}

// History is everything recorded in one run.
type History struct {
	// Initial is the state of the watched objects at InitialRV, where the
	// Reference starts (usually empty).
	Initial   map[string]string
	InitialRV int64
	// Reference is every change after InitialRV, in etcd's order, up to
	// at least the last revision any other record mentions. Types may be
	// left empty: Check derives Added/Modified from the state.
	Reference []Event
	Writes    []Write
	Watches   []Watch
	Lists     []List
}

// Violation is one broken rule.
type Violation struct {
	Rule   string // "reference", "lost", "refused", "watch-order", "watch-unique", "watch-gap", "watch-extra", "resume", "bookmark", "list"
	Detail string
}

func (v Violation) String() string { return v.Rule + ": " + v.Detail }

// Report counts what Check checked, for the fault tests' summaries.
type Report struct {
	Acknowledged   int // acknowledged writes, all found in the Reference
	Unknown        int // writes whose outcome the client never learnt
	WatchEvents    int // watch events compared with the Reference
	Watches        int
	ExpiredWatches int // watches that ended with 410
	Lists          int
	Violations     []Violation
}

// Check checks h and reports what it checked and every violation.
func Check(h History) Report {
	c := checker{h: h}
	c.reference()
	if len(c.violations) > 0 {
		// Nothing else can be judged against a broken reference.
		return Report{Violations: c.violations}
	}
	c.writes()
	for _, w := range h.Watches {
		c.watch(w)
	}
	for _, l := range h.Lists {
		c.list(l)
	}
	r := Report{Watches: len(h.Watches), Lists: len(h.Lists), Violations: c.violations, WatchEvents: c.watchEvents}
	for _, w := range h.Writes {
		switch w.Outcome {
		case Acknowledged:
			r.Acknowledged++
		case Unknown:
			r.Unknown++
		}
	}
	for _, w := range h.Watches {
		if w.Expired {
			r.ExpiredWatches++
		}
	}
	return r
}

type checker struct {
	h           History
	ref         []Event // the Reference with types filled in
	violations  []Violation
	watchEvents int
}

func (c *checker) fail(rule, format string, args ...any) {
	c.violations = append(c.violations, Violation{Rule: rule, Detail: fmt.Sprintf(format, args...)})
}

// reference checks that the Reference is ordered, unique, starts after
// InitialRV, and describes possible changes (no update or delete of a
// missing key, no create of an existing one), and fills in event types.
func (c *checker) reference() {
	state := maps.Clone(c.h.Initial)
	if state == nil {
		state = map[string]string{}
	}
	prev := c.h.InitialRV
	seen := map[string]bool{}
	for _, ev := range c.h.Reference {
		id := fmt.Sprintf("%s@%d", ev.Key, ev.RV)
		if ev.RV < prev || ev.RV <= c.h.InitialRV || seen[id] {
			c.fail("reference", "%v out of order or repeated after revision %d", ev, prev)
		}
		seen[id] = true
		prev = ev.RV
		old, exists := state[ev.Key]
		switch {
		case ev.Type == Deleted && !exists:
			c.fail("reference", "%v deletes a missing object", ev)
		case ev.Type == Deleted:
			ev.Value = cmp.Or(ev.Value, old)
			delete(state, ev.Key)
		case ev.Type == Added && exists:
			c.fail("reference", "%v adds an existing object", ev)
		case ev.Type == Modified && !exists:
			c.fail("reference", "%v modifies a missing object", ev)
		default:
			ev.Type = Modified
			if !exists {
				ev.Type = Added
			}
			state[ev.Key] = ev.Value
		}
		c.ref = append(c.ref, ev)
	}
}

// writes checks that every acknowledged write is in the Reference where
// the client was told it is, and no refused write is anywhere.
func (c *checker) writes() {
	byKeyRV := map[string]Event{}
	values := map[string]bool{}
	var prevRV = map[string]int64{} // key@rv → revision of the key's previous change
	last := map[string]int64{}
	for _, ev := range c.ref {
		id := fmt.Sprintf("%s@%d", ev.Key, ev.RV)
		byKeyRV[id] = ev
		prevRV[id] = last[ev.Key]
		last[ev.Key] = ev.RV
		if ev.Type != Deleted {
			values[ev.Key+"="+ev.Value] = true
		}
	}
	// nextDelete: the revision of a Deleted event that follows the change
	// at key@rv directly.
	deletes := map[string]bool{}
	for _, ev := range c.ref {
		if ev.Type == Deleted {
			deletes[fmt.Sprintf("%s@%d", ev.Key, prevRV[fmt.Sprintf("%s@%d", ev.Key, ev.RV)])] = true
		}
	}
	for _, w := range c.h.Writes {
		switch w.Outcome {
		case Refused:
			if w.Op != Delete && values[w.Key+"="+w.Value] {
				c.fail("refused", "%s %s=%q was refused but happened", w.Op, w.Key, w.Value)
			}
			continue
		case Unknown:
			continue
		}
		switch {
		case w.Op == Delete && w.RV == 0:
			// A delete acknowledged without its revision: with a
			// precondition, the change after the one it named must be
			// this delete.
			if w.Precondition != 0 && !deletes[fmt.Sprintf("%s@%d", w.Key, w.Precondition)] {
				c.fail("lost", "delete of %s at resourceVersion %d acknowledged, but the next change of %s is not a delete", w.Key, w.Precondition, w.Key)
			}
		default:
			id := fmt.Sprintf("%s@%d", w.Key, w.RV)
			ev, ok := byKeyRV[id]
			switch {
			case !ok:
				c.fail("lost", "%s %s=%q acknowledged at %d is not in etcd's history", w.Op, w.Key, w.Value, w.RV)
			case w.Op == Delete && ev.Type != Deleted,
				w.Op != Delete && (ev.Type == Deleted || ev.Value != w.Value):
				c.fail("lost", "%s %s=%q acknowledged at %d, but etcd has %v there", w.Op, w.Key, w.Value, w.RV, ev)
			case w.Op == Create && ev.Type != Added:
				c.fail("lost", "create of %s acknowledged at %d, but etcd has %v there", w.Key, w.RV, ev)
			case w.Precondition != 0 && prevRV[id] != w.Precondition:
				c.fail("lost", "%s of %s at %d required resourceVersion %d, but the previous change was at %d", w.Op, w.Key, w.RV, w.Precondition, prevRV[id])
			}
		}
	}
}

// watch checks one watch: its events are the Reference's changes after
// From, in order, each once, without a gap up to its last event or
// bookmark; bookmarks never claim a revision whose changes were not yet
// delivered.
func (c *checker) watch(w Watch) {
	end := w.From      // the watch's claim: every change in (From, end] delivered
	var bookmark int64 // the last bookmark's revision
	var got []Event    // changes, in order, without repeats
	for _, ev := range w.Events {
		if ev.Type == Bookmark {
			switch want := c.after(w.From, ev.RV); {
			case ev.RV < end:
				c.fail("bookmark", "%s: bookmark at %d after revision %d", w.Name, ev.RV, end)
			case len(got) < len(want):
				c.fail("bookmark", "%s: bookmark at %d before %v", w.Name, ev.RV, want[len(got)])
			}
			bookmark, end = max(bookmark, ev.RV), max(end, ev.RV)
			continue
		}
		switch {
		case slices.ContainsFunc(got, func(e Event) bool { return e.Key == ev.Key && e.RV == ev.RV }):
			c.fail("watch-unique", "%s: %v reported twice", w.Name, ev)
			continue
		case ev.RV <= bookmark:
			c.fail("bookmark", "%s: %v after a bookmark at %d", w.Name, ev, bookmark)
			continue
		case ev.RV < end:
			c.fail("watch-order", "%s: %v after revision %d", w.Name, ev, end)
			continue
		}
		got = append(got, ev)
		c.watchEvents++
		end = ev.RV
	}
	want := c.after(w.From, end)
	for i := range max(len(want), len(got)) {
		switch {
		case i >= len(want):
			c.fail("watch-extra", "%s: %v is not in etcd's history after %d", w.Name, got[i], w.From)
		case i >= len(got) || got[i].RV > want[i].RV:
			rule := "watch-gap"
			if i == 0 {
				rule = "resume"
			}
			c.fail(rule, "%s (from %d): %v missing", w.Name, w.From, want[i])
		case got[i] != want[i]:
			c.fail("watch-extra", "%s: got %v where etcd's history has %v", w.Name, got[i], want[i])
		default:
			continue
		}
		return // one report per watch: after the first difference all would differ
	}
}

// after returns the Reference's changes in (from, to].
func (c *checker) after(from, to int64) []Event {
	i := sort.Search(len(c.ref), func(i int) bool { return c.ref[i].RV > from })
	j := sort.Search(len(c.ref), func(i int) bool { return c.ref[i].RV > to })
	return c.ref[i:j]
}

// list checks that a list at RV shows the state the Reference gives at RV.
func (c *checker) list(l List) {
	want := c.stateAt(l.RV)
	var diffs []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if g, ok := l.Items[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("missing %s=%q", k, want[k]))
		} else if g != want[k] {
			diffs = append(diffs, fmt.Sprintf("%s=%q, want %q", k, g, want[k]))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(l.Items)) {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("extra %s=%q", k, l.Items[k]))
		}
	}
	if len(diffs) > 0 {
		c.fail("list", "%s at %d: %s", l.Name, l.RV, strings.Join(diffs, ", "))
	}
}

// stateAt replays the Reference onto Initial up to revision rv.
func (c *checker) stateAt(rv int64) map[string]string {
	state := maps.Clone(c.h.Initial)
	if state == nil {
		state = map[string]string{}
	}
	for _, ev := range c.after(c.h.InitialRV, rv) {
		if ev.Type == Deleted {
			delete(state, ev.Key)
		} else {
			state[ev.Key] = ev.Value
		}
	}
	return state
}
