package handler_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// A PUT keeps the managedFields it was sent encoded when they are written
// as the server writes them (compact, keys sorted), which is how clients
// that update what they read send them back. What a replacement does with
// its managedFields must not depend on that: each case sends the same
// replacement compact and indented, to two objects made alike, and the
// answers must agree, times aside.
func TestReplacementManagedFieldsReadAlike(t *testing.T) {
	e := newCronTabEnv(t)
	entries := func(obj map[string]any) []any {
		l, _ := obj["metadata"].(map[string]any)["managedFields"].([]any)
		return l
	}
	cases := []struct {
		name  string
		query string
		edit  func(obj map[string]any) // of the object read, besides its spec
		check func(t *testing.T, code int, answer map[string]any, warning string)
	}{
		{name: "sent back as read", edit: func(map[string]any) {},
			check: func(t *testing.T, code int, answer map[string]any, _ string) {
				if code != 200 || len(entries(answer)) != 2 {
					t.Errorf("want 200 and the creator's and the editor's entries: %d %v", code, entries(answer))
				}
			}},
		{name: "left out", edit: func(obj map[string]any) { delete(obj["metadata"].(map[string]any), "managedFields") },
			check: func(t *testing.T, code int, answer map[string]any, _ string) {
				if code != 200 || len(entries(answer)) != 2 {
					t.Errorf("want 200 and the creator's and the editor's entries: %d %v", code, entries(answer))
				}
			}},
		{name: "a manager renamed", edit: func(obj map[string]any) {
			entries(obj)[0].(map[string]any)["manager"] = "renamed"
		}, check: func(t *testing.T, code int, answer map[string]any, _ string) {
			managers := map[string]bool{}
			for _, e := range entries(answer) {
				managers[str(e, "manager")] = true
			}
			if code != 200 || !managers["renamed"] || !managers["editor"] || managers["creator"] {
				t.Errorf("want the client's entries kept, renamed: %d %v", code, entries(answer))
			}
		}},
		{name: "reset", edit: func(obj map[string]any) {
			obj["metadata"].(map[string]any)["managedFields"] = []any{map[string]any{}}
		}, check: func(t *testing.T, code int, answer map[string]any, _ string) {
			if code != 200 || len(entries(answer)) != 0 {
				t.Errorf("want the entries cleared: %d %v", code, entries(answer))
			}
		}},
		{name: "an unknown member, warned", edit: func(obj map[string]any) {
			entries(obj)[0].(map[string]any)["zzz"] = 1
		}, check: func(t *testing.T, code int, answer map[string]any, warning string) {
			if code != 200 || !strings.Contains(warning, `unknown field \"metadata.managedFields[0].zzz\"`) {
				t.Errorf("want 200 and a warning: %d %q", code, warning)
			}
			if _, ok := entries(answer)[0].(map[string]any)["zzz"]; ok {
				t.Errorf("the unknown member was kept: %v", entries(answer))
			}
		}},
		{name: "an unknown member, strict", query: "&fieldValidation=Strict", edit: func(obj map[string]any) {
			entries(obj)[0].(map[string]any)["zzz"] = 1
		}, check: func(t *testing.T, code int, answer map[string]any, _ string) {
			if msg, _ := answer["message"].(string); code != 400 || !strings.Contains(msg, `unknown field "metadata.managedFields[0].zzz"`) {
				t.Errorf("want a 400 naming the field: %d %v", code, answer)
			}
		}},
		{name: "a manager of the wrong type", edit: func(obj map[string]any) {
			entries(obj)[0].(map[string]any)["manager"] = 5
		}, check: func(t *testing.T, code int, answer map[string]any, _ string) {
			if code == 200 && len(entries(answer)) == 0 {
				t.Errorf("the entries were lost: %v", answer)
			}
		}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var answers [2]map[string]any
			var codes [2]int
			var warnings [2]string
			for form, marshal := range []func(any) ([]byte, error){
				json.Marshal,
				func(v any) ([]byte, error) { return json.MarshalIndent(v, "", "  ") },
			} {
				name := fmt.Sprintf("r%d-%d", i, form)
				path := cronTabs + "/" + name
				if r := e.do(req{method: "POST", path: cronTabs + "?fieldManager=creator", body: cronTabBody(name)}); r.code != 201 {
					t.Fatalf("create %s: %d %s", name, r.code, r.body)
				}
				obj := e.do(req{method: "GET", path: path}).obj(t)
				obj["spec"].(map[string]any)["replicas"] = 5
				c.edit(obj)
				body, err := marshal(obj)
				if err != nil {
					t.Fatal(err)
				}
				r := e.do(req{method: "PUT", path: path + "?fieldManager=editor" + c.query, body: string(body)})
				codes[form], answers[form], warnings[form] = r.code, r.obj(t), r.header.Get("Warning")
				c.check(t, r.code, answers[form], warnings[form])
			}
			if codes[0] != codes[1] || warnings[0] != warnings[1] {
				t.Errorf("compact: %d %q; indented: %d %q", codes[0], warnings[0], codes[1], warnings[1])
			}
			if a, b := comparable(answers[0]), comparable(answers[1]); !reflect.DeepEqual(a, b) {
				t.Errorf("the answers differ:\ncompact:  %v\nindented: %v", a, b)
			}
		})
	}
}

// comparable is an answer without what differs between two objects made
// alike: names, uids, resourceVersions and times.
func comparable(answer map[string]any) any {
	md, _ := answer["metadata"].(map[string]any)
	if md == nil {
		return answer
	}
	l, _ := md["managedFields"].([]any)
	for _, e := range l {
		if m, ok := e.(map[string]any); ok {
			delete(m, "time")
		}
	}
	// Entries are ordered by time, then by manager: a create and an
	// update in the same second come in the other order than across a
	// second's boundary, which the two forms' writes may straddle.
	// compat/managedfields holds the order to upstream's.
	slices.SortStableFunc(l, func(a, b any) int {
		ma, _ := a.(map[string]any)
		mb, _ := b.(map[string]any)
		return strings.Compare(fmt.Sprint(ma["manager"], ma["operation"]), fmt.Sprint(mb["manager"], mb["operation"]))
	})
	for _, k := range []string{"name", "uid", "resourceVersion", "creationTimestamp"} {
		delete(md, k)
	}
	return answer
}
