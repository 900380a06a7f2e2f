package handler

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	utilnet "k8s.io/apimachinery/pkg/util/net"
)

func TestFinalizerWarnings(t *testing.T) {
	withFinalizers := func(f ...any) map[string]any {
		return map[string]any{"metadata": map[string]any{"finalizers": f}}
	}
	for _, tc := range []struct {
		name     string
		obj, old map[string]any
		want     []string
	}{
		{name: "none", obj: map[string]any{"metadata": map[string]any{}}},
		{name: "qualified with a path", obj: withFinalizers("example.com/cleanup")},
		{name: "standard", obj: withFinalizers("kubernetes", "orphan", "foregroundDeletion")},
		{name: "no path, in name order, once", obj: withFinalizers("b.example.com", "cleanup", "b.example.com"), want: []string{
			`metadata.finalizers: "b.example.com": prefer a domain-qualified finalizer name including a path (/) to avoid accidental conflicts with other finalizer writers`,
			`metadata.finalizers: "cleanup": prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers`,
		}},
		{name: "not a qualified name", obj: withFinalizers("a b"), want: []string{
			`metadata.finalizers: "a b": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
			`metadata.finalizers: "a b": prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers`,
		}},
		{name: "only the ones an update adds", obj: withFinalizers("old", "new"), old: withFinalizers("old"), want: []string{
			`metadata.finalizers: "new": prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers`,
		}},
	} {
		if got := finalizerWarnings(tc.obj, tc.old); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestWarningRecorder: warnings are written as upstream's recorder
// writes them.
func TestWarningRecorder(t *testing.T) {
	long := func(c string, n int) string { return strings.Repeat(c, n) }
	for _, tc := range []struct {
		name  string
		texts []string
		want  []string
	}{
		{"once each", []string{"a", "b", "a", ""}, []string{`299 - "a"`, `299 - "b"`}},
		{"quotes and backslashes escaped, the rest as it is", []string{`say "hi" \o/ ü ☃`}, []string{`299 - "say \"hi\" \\o/ ü ☃"`}},
		{"control characters: left out", []string{"two\nlines", "tab\there", "fine"}, []string{`299 - "fine"`}},
		{"within the limit", []string{long("a", 4000), long("b", 96)}, []string{`299 - "` + long("a", 4000) + `"`, `299 - "` + long("b", 96) + `"`}},
		{"over it: every one cut short, then no more past it", append([]string{long("a", 4000), long("b", 97)}, func() []string {
			var more []string
			for i := range 20 {
				more = append(more, long(string(rune('c'+i)), 300))
			}
			return more
		}()...), func() []string {
			out := []string{`299 - "` + long("a", 256) + `"`, `299 - "` + long("b", 97) + `"`}
			// 256+97 runes, then 256 each until 4096 is reached.
			for i := range 15 {
				out = append(out, `299 - "`+long(string(rune('c'+i)), 256)+`"`)
			}
			return out
		}()},
	} {
		h := http.Header{}
		var wr warningRecorder
		for _, text := range tc.texts {
			wr.add(h, text)
		}
		if got := h.Values("Warning"); !slices.Equal(got, tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

// TestWarningHeaders: more of upstream's recorder's cases.
func TestWarningHeaders(t *testing.T) {
	long := strings.Repeat("é", 300)
	many := make([]string, 100)
	for i := range many {
		many[i] = fmt.Sprintf("unknown field \"spec.field%03d.with.a.long.enough.path\"", i)
	}
	for _, tc := range []struct {
		name  string
		texts []string
		want  []string
	}{
		{name: "once each, in order", texts: []string{"b", "a", "b"}, want: []string{`299 - "b"`, `299 - "a"`}},
		{name: "quotes and backslashes escaped, the rest as is",
			texts: []string{`unknown field "spec.a\b"`, "spec.ü: ☃"},
			want:  []string{`299 - "unknown field \"spec.a\\b\""`, `299 - "spec.ü: ☃"`}},
		{name: "none empty, with a control character or not UTF-8",
			texts: []string{"", "a\tb", "c\nd", "\xff", "e"}, want: []string{`299 - "e"`}},
		{name: "one over the limit: cut", texts: []string{"a", strings.Repeat("x", 5000)},
			want: []string{`299 - "a"`, `299 - "` + strings.Repeat("x", 256) + `"`}},
		{name: "cut on a rune boundary", texts: []string{long + strings.Repeat("y", 4000)},
			want: []string{`299 - "` + strings.Repeat("é", 256) + `"`}},
		{name: "many: the ones after the cut texts fill the limit again dropped", texts: many,
			want: func() []string {
				var out []string
				// The texts that fit, and the one that passes the limit.
				for _, m := range many[:warningRunes/len(many[0])+1] {
					h, _ := utilnet.NewWarningHeader(299, "", m)
					out = append(out, h)
				}
				return out
			}()},
	} {
		var wh warningRecorder
		h := http.Header{}
		for _, text := range tc.texts {
			wh.add(h, text)
		}
		if got := h.Values("Warning"); !slices.Equal(got, tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}
