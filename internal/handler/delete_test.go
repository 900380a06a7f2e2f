package handler_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
)

// A deletecollection answers with each object as it was when deleted, at
// the revision of its delete (or of its marking, while a finalizer keeps
// it), as the watch's events carry it; a single delete answers with a
// Status naming the object's uid. Objects without finalizers go by the
// cached-copy path, the held one by the ordinary path: both answer alike.
func TestDeleteAnswers(t *testing.T) {
	e := newCronTabEnv(t)
	uids := map[string]string{}
	for _, c := range []struct{ name, finalizers string }{{"d1", ""}, {"d2", ""}, {"d3", `"finalizers":["example.com/hold"],`}, {"single", ""}} {
		body := fmt.Sprintf(`{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{%s"name":%q,"labels":{"set":%q}},"spec":{"cronSpec":"* * * * */%d"}}`,
			c.finalizers, c.name, map[bool]string{true: "single", false: "d"}[c.name == "single"], len(c.name))
		r := e.do(req{method: "POST", path: cronTabs, body: body})
		if r.code != 201 {
			t.Fatalf("create %s: %d %s", c.name, r.code, r.body)
		}
		uids[c.name] = str(r.obj(t), "metadata", "uid")
	}
	before := str(e.do(req{method: "GET", path: cronTabs}).obj(t), "metadata", "resourceVersion")

	r := e.do(req{method: "DELETE", path: cronTabs + "/single"})
	if st := r.status(t); r.code != 200 || st.Status != "Success" || st.Details == nil || st.Details.Name != "single" || string(st.Details.UID) != uids["single"] || st.Details.Kind != "crontabs" || st.Details.Group != "stable.example.com" {
		t.Errorf("delete single: %d %s", r.code, r.body)
	}
	if r := e.do(req{method: "GET", path: cronTabs + "/single"}); r.code != 404 {
		t.Errorf("single after its delete: %d %s", r.code, r.body)
	}

	r = e.do(req{method: "DELETE", path: cronTabs + "?labelSelector=set%3Dd"})
	if r.code != 200 {
		t.Fatalf("deletecollection: %d %s", r.code, r.body)
	}
	// The list deleted from, at its revision, as upstream answers.
	if lm, _ := r.obj(t)["metadata"].(map[string]any); lm["resourceVersion"] == nil || lm["continue"] != "" {
		t.Errorf("deletecollection's list metadata: %v", lm)
	}
	answered := map[string]map[string]any{}
	items, _ := r.obj(t)["items"].([]any)
	for _, it := range items {
		answered[str(it, "metadata", "name")] = it.(map[string]any)
	}
	if len(answered) != 3 || len(items) != 3 {
		t.Fatalf("deletecollection answered %d items: %s", len(items), r.body)
	}
	if str(answered["d3"], "metadata", "deletionTimestamp") == "" {
		t.Errorf("d3, held by its finalizer, answered unmarked: %v", answered["d3"])
	}

	// The events since the delete began carry each object as it went.
	w := e.do(req{method: "GET", path: cronTabs + "?watch=true&timeoutSeconds=1&labelSelector=set%3Dd&resourceVersion=" + before})
	events := map[string]map[string]any{}
	dec := json.NewDecoder(bytes.NewReader(w.body))
	for dec.More() {
		var ev struct {
			Type   string         `json:"type"`
			Object map[string]any `json:"object"`
		}
		if err := dec.Decode(&ev); err != nil {
			t.Fatalf("watch: %v: %s", err, w.body)
		}
		events[str(ev.Object, "metadata", "name")] = ev.Object
	}
	for name, want := range events {
		got, ok := answered[name]
		if !ok {
			t.Errorf("%s: an event but not in the answer", name)
			continue
		}
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		if !bytes.Equal(g, w) {
			t.Errorf("%s answered\n%s\nits last event\n%s", name, g, w)
		}
		if str(got, "metadata", "uid") != uids[name] {
			t.Errorf("%s: uid %s, want %s", name, str(got, "metadata", "uid"), uids[name])
		}
	}
	if len(events) != 3 {
		t.Errorf("%d objects in the events, want 3: %s", len(events), w.body)
	}
	for _, name := range []string{"d1", "d2"} {
		if r := e.do(req{method: "GET", path: cronTabs + "/" + name}); r.code != 404 {
			t.Errorf("%s after deletecollection: %d %s", name, r.code, r.body)
		}
	}
}
