package handler_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A delete's propagation options decide which of the garbage collector's
// finalizers the object gets, as upstream's store does: the object stays,
// marked deleted, while a finalizer remains, answered 200, or 202 when the
// legacy orphanDependents=false asked for its dependents to go.
func TestDeletePropagation(t *testing.T) {
	e := newCronTabEnv(t)
	// example.com/hold keeps every object here until the test ends, so
	// the answers show the marked object whatever the collector does.
	cases := []struct {
		query, body string
		finalizers  []string // besides example.com/hold
		accepted    bool     // answered 202
		line        int
	}{
		{line: line(), finalizers: nil}, // Background is the default
		{line: line(), query: "?propagationPolicy=Background"},
		{line: line(), query: "?propagationPolicy=Foreground", finalizers: []string{metav1.FinalizerDeleteDependents}},
		{line: line(), query: "?propagationPolicy=Orphan", finalizers: []string{metav1.FinalizerOrphanDependents}},
		{line: line(), query: "?orphanDependents=true", finalizers: []string{metav1.FinalizerOrphanDependents}},
		{line: line(), query: "?orphanDependents=false", accepted: true},
		// As upstream's parameter codec reads booleans: true unless "0" or "false".
		{line: line(), query: "?orphanDependents=yes", finalizers: []string{metav1.FinalizerOrphanDependents}},
		{line: line(), query: "?orphanDependents=FALSE", accepted: true},
		{line: line(), body: `{"orphanDependents":false}`, accepted: true},
		{line: line(), body: `{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Foreground"}`, finalizers: []string{metav1.FinalizerDeleteDependents}},
		{line: line(), body: `{"kind":"DeleteOptions","apiVersion":"v1","orphanDependents":true}`, finalizers: []string{metav1.FinalizerOrphanDependents}},
	}
	for i, c := range cases {
		name := fmt.Sprintf("p%d", i)
		body := fmt.Sprintf(`{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":%q,"finalizers":["example.com/hold"]}}`, name)
		if r := e.do(req{method: "POST", path: cronTabs, body: body}); r.code != 201 {
			t.Fatalf("create %s: %d %s", name, r.code, r.body)
		}
		r := e.do(req{method: "DELETE", path: cronTabs + "/" + name + c.query, body: c.body})
		if want := map[bool]int{false: 200, true: 202}[c.accepted]; r.code != want {
			t.Errorf("line %d: delete: %d %s", c.line, r.code, r.body)
			continue
		}
		obj := r.obj(t)
		if str(obj, "metadata", "deletionTimestamp") == "" {
			t.Errorf("line %d: no deletionTimestamp: %s", c.line, r.body)
		}
		var got []string
		md, _ := obj["metadata"].(map[string]any)
		for _, f := range md["finalizers"].([]any) {
			if f != "example.com/hold" {
				got = append(got, f.(string))
			}
		}
		if !slices.Equal(got, c.finalizers) {
			t.Errorf("line %d: finalizers %q, want %q", c.line, got, c.finalizers)
		}
	}

	// A second delete may change its mind: Foreground, then Orphan.
	r := e.do(req{method: "DELETE", path: cronTabs + "/p2?propagationPolicy=Orphan"})
	if fins := str(r.obj(t), "metadata", "finalizers"); r.code != 200 || fins != fmt.Sprint([]any{"example.com/hold", metav1.FinalizerOrphanDependents}) {
		t.Errorf("second delete: %d finalizers %s", r.code, fins)
	}

	// deletecollection takes the same options.
	for _, name := range []string{"c1", "c2"} {
		body := fmt.Sprintf(`{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":%q,"labels":{"set":"c"},"finalizers":["example.com/hold"]}}`, name)
		if r := e.do(req{method: "POST", path: cronTabs, body: body}); r.code != 201 {
			t.Fatalf("create %s: %d %s", name, r.code, r.body)
		}
	}
	before := str(e.do(req{method: "GET", path: cronTabs}).obj(t), "metadata", "resourceVersion")
	r = e.do(req{method: "DELETE", path: cronTabs + "?labelSelector=set%3Dc&propagationPolicy=Foreground"})
	items, _ := r.obj(t)["items"].([]any)
	if r.code != 200 || len(items) != 2 {
		t.Fatalf("deletecollection: %d %s", r.code, r.body)
	}
	// It answers with the objects as listed before; the events show them
	// marked (the garbage collector may have finished with them since).
	w := e.do(req{method: "GET", path: cronTabs + "?watch=true&timeoutSeconds=1&labelSelector=set%3Dc&resourceVersion=" + before})
	marked := map[string]bool{}
	dec := json.NewDecoder(bytes.NewReader(w.body))
	for dec.More() {
		var ev struct{ Object map[string]any }
		if err := dec.Decode(&ev); err != nil {
			t.Fatalf("watch: %v: %s", err, w.body)
		}
		if str(ev.Object, "metadata", "finalizers") == fmt.Sprint([]any{"example.com/hold", metav1.FinalizerDeleteDependents}) {
			marked[str(ev.Object, "metadata", "name")] = true
		}
	}
	if !marked["c1"] || !marked["c2"] {
		t.Errorf("objects the deletecollection marked with %s: %v", metav1.FinalizerDeleteDependents, marked)
	}

	e.checkCases(t, []errCase{
		at(errCase{name: "both set", req: req{method: "DELETE", path: cronTabs + "/m1?propagationPolicy=Orphan&orphanDependents=true"}, code: 422, reason: metav1.StatusReasonInvalid,
			message: `DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Invalid value: "Orphan": orphanDependents and deletionPropagation cannot be both set`}),
		at(errCase{name: "unknown policy", req: req{method: "DELETE", path: cronTabs + "/m1?propagationPolicy=Sideways"}, code: 422, reason: metav1.StatusReasonInvalid,
			message: `propagationPolicy: Unsupported value: "Sideways": supported values: "Foreground", "Background", "Orphan", "nil"`}),
		at(errCase{name: "both finalizers", req: req{method: "POST", path: cronTabs, body: `{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"both","finalizers":["orphan","foregroundDeletion"]}}`}, code: 422, reason: metav1.StatusReasonInvalid,
			message: `finalizer orphan and foregroundDeletion cannot be both set`}),
	})
}

func line() int {
	_, _, l, _ := runtime.Caller(1)
	return l
}
