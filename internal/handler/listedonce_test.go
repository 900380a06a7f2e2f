package handler_test

import (
	"slices"
	"testing"
)

// An update's errors are listed as upstream lists them: a built-in's
// declarative validation step lists alike errors once (an invalid label,
// which the generic update checks and the resource's own checks find
// again; an events.k8s.io Event's reason, checked twice); a custom
// resource's, a CRD's and an APIService's are listed once per check, as
// their strategies run no such step (kube-apiserver 1.37's answers).
func TestUpdateListsAlikeErrorsOnce(t *testing.T) {
	e := newCronTabEnv(t)
	for _, c := range []struct{ path, body string }{
		{"/api/v1/namespaces/default/configmaps", `{"metadata":{"name":"cm"}}`},
		{"/apis/events.k8s.io/v1/namespaces/default/events", `{"metadata":{"name":"ev"},"eventTime":"2024-01-01T00:00:00.000000Z",
			"reportingController":"example.com/c","reportingInstance":"i","action":"A","reason":"R","type":"Normal","regarding":{"kind":"Pod","name":"p"}}`},
	} {
		if r := e.do(req{method: "POST", path: c.path, body: c.body}); r.code != 201 {
			t.Fatalf("create %s: %d %s", c.path, r.code, r.body)
		}
	}
	const merge = "application/merge-patch+json"
	badLabel := `{"metadata":{"labels":{"-bad":"x"}}}`
	for _, tc := range []struct {
		line        int
		path, patch string
		causes      []string
	}{
		{line: line(), path: "/api/v1/namespaces/default/configmaps/cm", patch: badLabel,
			causes: []string{"metadata.labels"}},
		{line: line(), path: "/api/v1/namespaces/default/configmaps/cm", patch: `{"metadata":{"labels":{"-bad":"x"},"annotations":{"-ann":"y"}},"data":{"a b":"c"}}`,
			causes: []string{"metadata.labels", "metadata.annotations", "data[a b]"}},
		{line: line(), path: "/apis/events.k8s.io/v1/namespaces/default/events/ev", patch: `{"reason":"S"}`,
			causes: []string{"reason"}},
		{line: line(), path: cronTabs + "/m1", patch: badLabel,
			causes: []string{"metadata.labels", "metadata.labels", "metadata.labels"}},
		{line: line(), path: "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/crontabs.stable.example.com", patch: badLabel,
			causes: []string{"metadata.labels", "metadata.labels", "metadata.labels"}},
		{line: line(), path: "/apis/apiregistration.k8s.io/v1/apiservices/v1.apps", patch: badLabel,
			causes: []string{"metadata.labels", "metadata.labels", "metadata.labels", "metadata.labels"}},
	} {
		r := e.do(req{method: "PATCH", path: tc.path, body: tc.patch, contentType: merge})
		st := r.status(t)
		var got []string
		if st.Details != nil {
			for _, c := range st.Details.Causes {
				got = append(got, c.Field)
			}
		}
		if r.code != 422 || !slices.Equal(got, tc.causes) {
			t.Errorf("line %d: %d causes %q, want 422 %q: %s", tc.line, r.code, got, tc.causes, r.body)
		}
	}
}
