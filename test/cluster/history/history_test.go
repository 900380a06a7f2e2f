package history

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
)

// good is a correct history: two keys, a create, updates and a delete,
// two watches (one resumed), a bookmark and a list.
func good() History {
	return History{
		InitialRV: 10,
		Reference: []Event{
			{Key: "a", Value: "1", RV: 11},
			{Key: "b", Value: "1", RV: 12},
			{Key: "a", Value: "2", RV: 13},
			{Type: Deleted, Key: "b", RV: 14},
			{Key: "a", Value: "3", RV: 15},
		},
		Writes: []Write{
			{Op: Create, Key: "a", Value: "1", RV: 11},
			{Op: Create, Key: "b", Value: "1", RV: 12},
			{Op: Update, Key: "a", Value: "2", Precondition: 11, RV: 13},
			{Op: Delete, Key: "b", Precondition: 12},
			{Op: Update, Key: "a", Value: "3", Precondition: 13, RV: 15},
			{Op: Update, Key: "a", Value: "x", Precondition: 11, Outcome: Refused},
			{Op: Update, Key: "b", Value: "y", Precondition: 12, Outcome: Unknown},
		},
		Watches: []Watch{
			{Name: "from start", From: 10, Events: []Event{
				{Type: Added, Key: "a", Value: "1", RV: 11},
				{Type: Added, Key: "b", Value: "1", RV: 12},
				{Type: Bookmark, RV: 12},
				{Type: Modified, Key: "a", Value: "2", RV: 13},
				{Type: Deleted, Key: "b", Value: "1", RV: 14},
				{Type: Modified, Key: "a", Value: "3", RV: 15},
				{Type: Bookmark, RV: 20},
			}},
			{Name: "expired", From: 10, Expired: true, Events: []Event{
				{Type: Added, Key: "a", Value: "1", RV: 11},
			}},
			{Name: "resumed", From: 12, Events: []Event{
				{Type: Modified, Key: "a", Value: "2", RV: 13},
				{Type: Deleted, Key: "b", Value: "1", RV: 14},
			}},
		},
		Lists: []List{
			{Name: "list", RV: 13, Items: map[string]string{"a": "2", "b": "1"}},
			{Name: "empty", RV: 10, Items: map[string]string{}},
		},
	}
}

func TestGoodHistory(t *testing.T) {
	r := Check(good())
	if len(r.Violations) > 0 {
		t.Fatalf("violations in a good history: %v", r.Violations)
	}
	if r.Acknowledged != 5 || r.Unknown != 1 || r.WatchEvents != 8 || r.Watches != 3 || r.ExpiredWatches != 1 || r.Lists != 2 {
		t.Errorf("report = %+v", r)
	}
}

// Each case breaks one rule of a good history and expects that rule to be
// reported (a broken watch may break more than one rule: a missing event
// before a bookmark is a gap and a bookmark ahead of events).
func TestViolations(t *testing.T) {
	type tc struct {
		name   string
		line   string
		rule   string
		mutate func(h *History)
	}
	at := func() string { _, _, l, _ := runtime.Caller(1); return fmt.Sprint("line ", l) }
	watch := func(h *History, name string) *Watch {
		i := slices.IndexFunc(h.Watches, func(w Watch) bool { return w.Name == name })
		return &h.Watches[i]
	}
	cases := []tc{
		{"reference out of order", at(), "reference", func(h *History) {
			h.Reference[1], h.Reference[2] = h.Reference[2], h.Reference[1]
		}},
		{"reference deletes a missing key", at(), "reference", func(h *History) {
			h.Reference = append(h.Reference, Event{Type: Deleted, Key: "b", RV: 16})
		}},
		{"acknowledged write missing", at(), "lost", func(h *History) {
			h.Writes = append(h.Writes, Write{Op: Update, Key: "a", Value: "4", Precondition: 15, RV: 16})
		}},
		{"acknowledged write with another value", at(), "lost", func(h *History) {
			h.Writes[2].Value = "z"
		}},
		{"acknowledged create that etcd has as an update", at(), "lost", func(h *History) {
			h.Writes[4].Op = Create
		}},
		{"acknowledged update whose precondition is not the previous change", at(), "lost", func(h *History) {
			h.Writes[4].Precondition = 11
		}},
		{"acknowledged delete not followed by a delete", at(), "lost", func(h *History) {
			h.Writes = append(h.Writes, Write{Op: Delete, Key: "a", Precondition: 13})
		}},
		{"refused write happened", at(), "refused", func(h *History) {
			h.Writes = append(h.Writes, Write{Op: Update, Key: "a", Value: "3", Outcome: Refused})
		}},
		{"events out of order", at(), "watch-order", func(h *History) {
			w := watch(h, "resumed")
			w.Events[0], w.Events[1] = w.Events[1], w.Events[0]
		}},
		{"event repeated", at(), "watch-unique", func(h *History) {
			w := watch(h, "resumed")
			w.Events = append(w.Events, w.Events[1])
		}},
		{"event missing in the middle", at(), "watch-gap", func(h *History) {
			w := watch(h, "from start")
			w.Events = slices.Delete(w.Events, 3, 4)
		}},
		{"event missing at the end before a bookmark", at(), "bookmark", func(h *History) {
			w := watch(h, "from start")
			w.Events = slices.Delete(w.Events, 5, 6)
		}},
		{"resumed watch skips the first change", at(), "resume", func(h *History) {
			w := watch(h, "resumed")
			w.Events = w.Events[1:]
		}},
		{"resumed watch repeats the change it resumed from", at(), "watch-extra", func(h *History) {
			w := watch(h, "resumed")
			w.Events = append([]Event{{Type: Added, Key: "b", Value: "1", RV: 12}}, w.Events...)
		}},
		{"event with another value", at(), "watch-extra", func(h *History) {
			watch(h, "resumed").Events[0].Value = "9"
		}},
		{"event with another type", at(), "watch-extra", func(h *History) {
			watch(h, "resumed").Events[0].Type = Added
		}},
		{"event etcd never had", at(), "watch-extra", func(h *History) {
			w := watch(h, "from start")
			w.Events = slices.Insert(w.Events, 6, Event{Type: Modified, Key: "a", Value: "5", RV: 17})
		}},
		{"bookmark ahead of an event", at(), "bookmark", func(h *History) {
			w := watch(h, "from start")
			w.Events[2].RV = 13
		}},
		{"bookmark going back", at(), "bookmark", func(h *History) {
			w := watch(h, "from start")
			w.Events[6].RV = 14
		}},
		{"list missing an object", at(), "list", func(h *History) {
			delete(h.Lists[0].Items, "b")
		}},
		{"list with a stale value", at(), "list", func(h *History) {
			h.Lists[0].Items["a"] = "1"
		}},
		{"list with an extra object", at(), "list", func(h *History) {
			h.Lists[1].Items["a"] = "1"
		}},
	}
	for _, c := range cases {
		h := good()
		c.mutate(&h)
		r := Check(h)
		if len(r.Violations) == 0 {
			t.Errorf("%s: %s: no violation, want %s", c.line, c.name, c.rule)
			continue
		}
		if !slices.ContainsFunc(r.Violations, func(v Violation) bool { return v.Rule == c.rule }) {
			t.Errorf("%s: %s: violations %v, want %s", c.line, c.name, r.Violations, c.rule)
		}
	}
}
