package handler_test

import (
	"testing"
)

// An update never moves or removes a deletionTimestamp, nor removes a
// grace period, but one that sets either where there was none, or another
// grace period, is refused, as upstream refuses it; a custom resource's
// metadata transitions are checked twice, as upstream's custom resource
// validator repeats them, so each of their causes comes twice.
func TestUpdateDeletionMetadata(t *testing.T) {
	e := newCronTabEnv(t)
	for _, body := range []string{
		`{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"live"}}`,
		`{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"going","finalizers":["example.com/hold"]}}`,
	} {
		if r := e.do(req{method: "POST", path: cronTabs, body: body}); r.code != 201 {
			t.Fatalf("create: %d %s", r.code, r.body)
		}
	}
	if r := e.do(req{method: "POST", path: "/api/v1/namespaces/default/configmaps", body: `{"metadata":{"name":"live"}}`}); r.code != 201 {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	r := e.do(req{method: "DELETE", path: cronTabs + "/going"})
	if r.code != 200 {
		t.Fatalf("delete: %d %s", r.code, r.body)
	}
	marked := str(r.obj(t), "metadata", "deletionTimestamp")

	const merge = "application/merge-patch+json"
	for _, tc := range []struct {
		line        int
		path, patch string
		causes      []string // of a 422; none: a 200
	}{
		{line: line(), path: cronTabs + "/live", patch: `{"metadata":{"deletionTimestamp":"2030-01-01T00:00:00Z"}}`,
			causes: []string{"metadata.deletionTimestamp", "metadata.deletionTimestamp"}},
		{line: line(), path: cronTabs + "/live", patch: `{"metadata":{"deletionGracePeriodSeconds":30}}`,
			causes: []string{"metadata.deletionGracePeriodSeconds", "metadata.deletionGracePeriodSeconds"}},
		{line: line(), path: "/api/v1/namespaces/default/configmaps/live", patch: `{"metadata":{"deletionTimestamp":"2030-01-01T00:00:00Z"}}`,
			causes: []string{"metadata.deletionTimestamp"}},
		{line: line(), path: cronTabs + "/going", patch: `{"metadata":{"deletionTimestamp":"2030-01-01T00:00:00Z"}}`},
		{line: line(), path: cronTabs + "/going", patch: `{"metadata":{"deletionTimestamp":null,"deletionGracePeriodSeconds":null}}`},
		{line: line(), path: cronTabs + "/going", patch: `{"metadata":{"deletionGracePeriodSeconds":30}}`,
			causes: []string{"metadata.deletionGracePeriodSeconds", "metadata.deletionGracePeriodSeconds"}},
		{line: line(), path: cronTabs + "/going", patch: `{"metadata":{"finalizers":["example.com/hold","example.com/more"]}}`,
			causes: []string{"metadata.finalizers", "metadata.finalizers"}},
	} {
		r := e.do(req{method: "PATCH", path: tc.path, body: tc.patch, contentType: merge})
		if tc.causes == nil {
			if r.code != 200 || str(r.obj(t), "metadata", "deletionTimestamp") != marked || str(r.obj(t), "metadata", "deletionGracePeriodSeconds") != "0" {
				t.Errorf("line %d: %d %s", tc.line, r.code, r.body)
			}
			continue
		}
		st := r.status(t)
		var got []string
		if st.Details != nil {
			for _, c := range st.Details.Causes {
				got = append(got, c.Field)
			}
		}
		if r.code != 422 || len(got) != len(tc.causes) || got[0] != tc.causes[0] {
			t.Errorf("line %d: %d causes %q, want 422 %q: %s", tc.line, r.code, got, tc.causes, r.body)
		}
	}
}
