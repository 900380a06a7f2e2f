package etcd

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"testing"
)

// A member is taken out of the client's endpoints when it fails a probe,
// which restarts the watches; it is taken back at its first answer. When no member answers, the client keeps them all.
func TestMembers(t *testing.T) {
	all := []string{"a", "b", "c"}
	down := errors.New("no answer")
	var answers []error // per probe round, per member
	var set [][]string
	ejections := 0
	m := &members{
		log:     slog.New(slog.NewTextHandler(io.Discard, nil)),
		set:     func(eps ...string) { set = append(set, eps) },
		all:     all,
		ejected: func() { ejections++ },
		using:   all,
	}
	for i := range all {
		m.probes = append(m.probes, func(context.Context) error { return answers[i] })
	}
	for _, tc := range []struct {
		name      string
		answers   []error
		wantErr   bool
		using     []string
		ejections int
	}{
		{"all answer", []error{nil, nil, nil}, false, all, 0},
		{"c fails: ejected", []error{nil, nil, down}, false, []string{"a", "b"}, 1},
		{"c still down", []error{nil, nil, down}, false, []string{"a", "b"}, 1},
		{"none answers: keep them all", []error{down, down, down}, true, all, 1},
		{"a and b answer: c ejected again", []error{nil, nil, down}, false, []string{"a", "b"}, 2},
		{"c answers: taken back", []error{nil, nil, nil}, false, all, 2},
	} {
		answers = tc.answers
		err := m.probe(context.Background())
		if (err != nil) != tc.wantErr {
			t.Errorf("%s: probe error %v, want error %v", tc.name, err, tc.wantErr)
		}
		if !slices.Equal(m.using, tc.using) {
			t.Errorf("%s: using %v, want %v", tc.name, m.using, tc.using)
		}
		if len(set) > 0 && !slices.Equal(set[len(set)-1], m.using) {
			t.Errorf("%s: client's endpoints %v, want %v", tc.name, set[len(set)-1], m.using)
		}
		if ejections != tc.ejections {
			t.Errorf("%s: watches restarted %d times, want %d", tc.name, ejections, tc.ejections)
		}
	}
}
