package handler_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
)

// A single delete answers with a Status naming the object's uid; a
// deletecollection answers with the list it deleted from, as listed before
// the deletes (an object a finalizer holds unmarked), one page of it when
// it asks for a limit, as upstream does. Objects without finalizers go by
// the cached-copy path, the held one by the ordinary path.
func TestDeleteAnswers(t *testing.T) {
	e := newCronTabEnv(t)
	uids := map[string]string{}
	for _, c := range []struct{ name, set, finalizers string }{{"d1", "d", ""}, {"d2", "d", ""}, {"d3", "d", `"finalizers":["example.com/hold"],`}, {"single", "single", ""},
		{"p1", "p", ""}, {"p2", "p", ""}, {"p3", "p", ""}} {
		body := fmt.Sprintf(`{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{%s"name":%q,"labels":{"set":%q}},"spec":{"cronSpec":"* * * * */%d"}}`,
			c.finalizers, c.name, c.set, len(c.name))
		r := e.do(req{method: "POST", path: cronTabs, body: body})
		if r.code != 201 {
			t.Fatalf("create %s: %d %s", c.name, r.code, r.body)
		}
		uids[c.name] = str(r.obj(t), "metadata", "uid")
	}

	r := e.do(req{method: "DELETE", path: cronTabs + "/single"})
	if st := r.status(t); r.code != 200 || st.Status != "Success" || st.Details == nil || st.Details.Name != "single" || string(st.Details.UID) != uids["single"] || st.Details.Kind != "crontabs" || st.Details.Group != "stable.example.com" {
		t.Errorf("delete single: %d %s", r.code, r.body)
	}
	if r := e.do(req{method: "GET", path: cronTabs + "/single"}); r.code != 404 {
		t.Errorf("single after its delete: %d %s", r.code, r.body)
	}

	listed := e.do(req{method: "GET", path: cronTabs + "?labelSelector=set%3Dd"}).obj(t)
	r = e.do(req{method: "DELETE", path: cronTabs + "?labelSelector=set%3Dd"})
	if r.code != 200 {
		t.Fatalf("deletecollection: %d %s", r.code, r.body)
	}
	got := r.obj(t)
	if lm, _ := got["metadata"].(map[string]any); lm["resourceVersion"] == nil || lm["continue"] != "" {
		t.Errorf("deletecollection's list metadata: %v", lm)
	}
	g, _ := json.Marshal(got["items"])
	w, _ := json.Marshal(listed["items"])
	if !bytes.Equal(g, w) {
		t.Errorf("deletecollection answered\n%s\nwhat a list answered before it\n%s", g, w)
	}
	for _, name := range []string{"d1", "d2"} {
		if r := e.do(req{method: "GET", path: cronTabs + "/" + name}); r.code != 404 {
			t.Errorf("%s after deletecollection: %d %s", name, r.code, r.body)
		}
	}
	if r := e.do(req{method: "GET", path: cronTabs + "/d3"}); r.code != 200 || str(r.obj(t), "metadata", "deletionTimestamp") == "" {
		t.Errorf("d3, held by its finalizer, after deletecollection: %d %s", r.code, r.body)
	}

	// A limit deletes one page, answered with its continue token.
	r = e.do(req{method: "DELETE", path: cronTabs + "?labelSelector=set%3Dp&limit=2"})
	items, _ := r.obj(t)["items"].([]any)
	if lm, _ := r.obj(t)["metadata"].(map[string]any); r.code != 200 || len(items) != 2 || lm["continue"] == "" {
		t.Errorf("deletecollection of a page: %d %s", r.code, r.body)
	}
	left, _ := e.do(req{method: "GET", path: cronTabs + "?labelSelector=set%3Dp"}).obj(t)["items"].([]any)
	if len(left) != 1 || str(left[0], "metadata", "name") != "p3" {
		t.Errorf("after deleting a page of 2, left: %v", left)
	}
}
