package apply

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/crdserver/crdserver/internal/codec"
)

// redecode encodes o and decodes it again as the handler decodes the
// object an update starts from: with managedFields kept encoded when raw.
func redecode(t *testing.T, o map[string]any, raw bool) map[string]any {
	t.Helper()
	b, err := codec.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := codec.Decode(b, "", codec.DecodeOptions{RawManagedFields: raw})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestUpdateRawMatchesDecoded runs random sequences of updates by a few
// managers from objects whose managedFields are kept encoded and from the
// same objects decoded, and wants the same entries, encoded alike when
// recorded in the same second.
func TestUpdateRawMatchesDecoded(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	managers := []string{"a", "b", "c"}
	mutations := []func(o map[string]any, n int){
		func(o map[string]any, n int) { o["spec"].(map[string]any)["color"] = fmt.Sprint("c", n) },
		func(o map[string]any, n int) { o["spec"].(map[string]any)["replicas"] = int64(n) },
		func(o map[string]any, n int) {
			if l, ok := o["metadata"].(map[string]any)["labels"].(map[string]any); ok {
				l["a"] = fmt.Sprint("v", n%3)
			}
		},
		func(o map[string]any, _ int) { delete(o["spec"].(map[string]any), "color") },
		func(o map[string]any, n int) {
			o["spec"].(map[string]any)["tags"] = []any{"x", fmt.Sprint("t", n%3)}
		},
		func(o map[string]any, n int) {
			o["spec"].(map[string]any)["ports"] = []any{map[string]any{"name": "http", "port": int64(n)}, map[string]any{"name": fmt.Sprint("p<&>\"", n%2)}}
		},
		func(o map[string]any, n int) {
			o["metadata"].(map[string]any)["labels"] = map[string]any{"a": "b", fmt.Sprint("l", n%4): "x"}
		},
		func(o map[string]any, n int) { o["status"] = map[string]any{"phase": fmt.Sprint(n)} },
		func(o map[string]any, _ int) { o["spec"].(map[string]any)["tags"] = []any{} },
	}
	rawOut, steps := 0, 0
	for seq := range 30 {
		m := manager(t, "v1", "")
		l := redecode(t, obj(t, w1), false)
		m.Update(nil, l, "creator")
		for step := range 12 {
			mut := mutations[rng.Intn(len(mutations))]
			who := managers[rng.Intn(len(managers))]
			n := rng.Intn(100)
			liveRaw, liveDec := redecode(t, l, true), redecode(t, l, false)
			if _, ok := rawManagedFields(liveRaw); !ok {
				t.Fatalf("sequence %d step %d: managedFields not kept encoded: %#v", seq, step, metadata(liveRaw)["managedFields"])
			}
			objRaw, objDec := redecode(t, l, false), redecode(t, l, false)
			if step%3 != 2 {
				// As clients that leave them out send objects; the others
				// send back the entries they read.
				delete(metadata(objRaw), "managedFields")
				delete(metadata(objDec), "managedFields")
			}
			mut(objRaw, n)
			mut(objDec, n)
			m.Update(liveRaw, objRaw, who)
			m.Update(liveDec, objDec, who)
			steps++
			if _, ok := rawManagedFields(objRaw); ok {
				rawOut++
			}
			r, d := summary(objRaw), summary(objDec)
			slices.Sort(r)
			slices.Sort(d)
			if !reflect.DeepEqual(r, d) {
				t.Fatalf("sequence %d step %d (%s): encoded\n  %s\ndecoded\n  %s", seq, step, who, strings.Join(r, "\n  "), strings.Join(d, "\n  "))
			}
			rb, _ := codec.Marshal(metadata(objRaw)["managedFields"])
			db, _ := codec.Marshal(metadata(objDec)["managedFields"])
			if string(rb) != string(db) && !strings.Contains(string(rb)+string(db), now()[:18]) {
				// Not a second boundary between the two: they must match.
				t.Fatalf("sequence %d step %d: encoded %s\ndecoded %s", seq, step, rb, db)
			}
			l = objDec
		}
	}
	if rawOut < steps/2 {
		t.Errorf("the encoded path recorded %d of %d updates; want most", rawOut, steps)
	}
}

// TestUpdateRawFallsBack: entries the fast path cannot take (more Update
// managers than the cap, an entry at another version) are decoded and
// recorded as from decoded entries.
func TestUpdateRawFallsBack(t *testing.T) {
	m := manager(t, "v1", "")
	l := redecode(t, obj(t, w1), false)
	m.Update(nil, l, "creator")
	step := func(change func(o map[string]any), who string) {
		t.Helper()
		liveRaw, liveDec := redecode(t, l, true), redecode(t, l, false)
		objRaw, objDec := redecode(t, l, false), redecode(t, l, false)
		for _, o := range []map[string]any{objRaw, objDec} {
			delete(metadata(o), "managedFields")
			change(o)
		}
		m.Update(liveRaw, objRaw, who)
		m.Update(liveDec, objDec, who)
		r, d := summary(objRaw), summary(objDec)
		slices.Sort(r)
		slices.Sort(d)
		if !reflect.DeepEqual(r, d) {
			t.Fatalf("%s: encoded\n  %s\ndecoded\n  %s", who, strings.Join(r, "\n  "), strings.Join(d, "\n  "))
		}
		l = objDec
	}
	for i := range MaxUpdateManagers + 2 {
		step(func(o map[string]any) { metadata(o)["labels"].(map[string]any)[fmt.Sprint("l", i)] = "x" }, fmt.Sprint("m", i))
	}
	if n := len(managedFieldsOf(l)); n != MaxUpdateManagers {
		t.Errorf("%d entries after %d managers, want %d (capped, with ancient-changes)", n, MaxUpdateManagers+3, MaxUpdateManagers)
	}
	// An entry recorded at another version.
	for _, x := range managedFieldsOf(l) {
		if e := x.(map[string]any); e["manager"] == "m3" {
			e["apiVersion"] = "example.com/v0"
		}
	}
	step(func(o map[string]any) { metadata(o)["labels"].(map[string]any)["l3"] = "y" }, "other")
}

// TestUpdateRawMatchesSlow runs random sequences of writes by a few
// managers, through the resource and its status, from objects whose
// managedFields are kept encoded (the fast path of encoded entries) and
// from the same objects through structured-merge-diff's updater, and
// wants the same entries in the same order; byte for byte, times
// included, when both were recorded within one second.
func TestUpdateRawMatchesSlow(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	managers := []string{"a", "b", "creator"}
	spec := func(o map[string]any) map[string]any { return o["spec"].(map[string]any) }
	mutations := []func(o map[string]any, n int){
		func(o map[string]any, n int) { spec(o)["color"] = fmt.Sprint("c", n%3) },
		func(o map[string]any, n int) { spec(o)["replicas"] = int64(n % 4) },
		func(o map[string]any, _ int) { delete(spec(o), "color") },
		func(o map[string]any, _ int) { delete(spec(o), "replicas") },
		func(o map[string]any, n int) {
			spec(o)["color"], spec(o)["replicas"] = fmt.Sprint("c", n%2), int64(n%2)
		},
		func(o map[string]any, n int) { labelsOf(o)[fmt.Sprint("l", n%3)] = fmt.Sprint("v", n%2) },
		// A name FieldsV1 writes escaped.
		func(o map[string]any, n int) { labelsOf(o)[fmt.Sprint("l<&>\"", n%2)] = fmt.Sprint("v", n%3) },
		func(o map[string]any, n int) {
			if l, ok := metadata(o)["labels"].(map[string]any); ok {
				delete(l, fmt.Sprint("l", n%3))
			}
		},
		func(o map[string]any, n int) { metadata(o)["annotations"] = map[string]any{"seq": fmt.Sprint(n)} },
		func(o map[string]any, n int) { spec(o)["tags"] = []any{"x", fmt.Sprint("t", n%3)} },
		func(o map[string]any, n int) {
			spec(o)["ports"] = []any{map[string]any{"name": "http", "port": int64(n % 3)}}
		},
		func(o map[string]any, n int) { spec(o)["selector"] = map[string]any{"k": fmt.Sprint(n % 2)} },
		func(o map[string]any, n int) { o["status"] = map[string]any{"phase": fmt.Sprint(n % 3)} },
		func(o map[string]any, _ int) { o["status"] = map[string]any{} },
		func(o map[string]any, _ int) {}, // nothing changes
	}
	fastRaw, steps := 0, 0
	for seq := range 40 {
		l := obj(t, w1)
		manager(t, "v1", "").Update(nil, l, "creator")
		l = redecode(t, l, false)
		for step := range 15 {
			sub := ""
			if rng.Intn(4) == 0 {
				sub = "status"
			}
			fast, slow := manager(t, "v1", sub), manager(t, "v1", sub)
			slow.slow = true
			mut := mutations[rng.Intn(len(mutations))]
			who := managers[rng.Intn(len(managers))]
			n := rng.Intn(100)
			if rng.Intn(2) == 0 {
				// Entries recorded earlier: the writer's time changes,
				// spliced into its encoded entry.
				for i, x := range managedFieldsOf(l) {
					x.(map[string]any)["time"] = fmt.Sprintf("2020-01-0%dT00:00:00Z", 1+(i+n)%3)
				}
			}
			liveRaw, liveSlow := redecode(t, l, true), redecode(t, l, false)
			objRaw, objSlow := redecode(t, l, false), redecode(t, l, false)
			for _, o := range []map[string]any{objRaw, objSlow} {
				delete(metadata(o), "managedFields")
				mut(o, n)
			}
			before := now()
			fast.Update(liveRaw, objRaw, who)
			slow.Update(liveSlow, objSlow, who)
			after := now()
			steps++
			if _, ok := rawManagedFields(objRaw); ok {
				fastRaw++
			}
			rb, err := codec.Marshal(metadata(objRaw)["managedFields"])
			if err != nil {
				t.Fatal(err)
			}
			sb, err := codec.Marshal(metadata(objSlow)["managedFields"])
			if err != nil {
				t.Fatal(err)
			}
			if before == after && string(rb) != string(sb) {
				t.Fatalf("sequence %d step %d (%s through %q): encoded entries\n  %s\nupdater\n  %s", seq, step, who, sub, rb, sb)
			}
			r, s := summary(objRaw), summary(objSlow)
			if before != after {
				slices.Sort(r)
				slices.Sort(s)
			}
			if !reflect.DeepEqual(r, s) {
				t.Fatalf("sequence %d step %d (%s through %q): encoded entries\n  %s\nupdater\n  %s", seq, step, who, sub, strings.Join(r, "\n  "), strings.Join(s, "\n  "))
			}
			l = objSlow
		}
	}
	if fastRaw < steps/2 {
		t.Errorf("the encoded path recorded %d of %d writes; want most", fastRaw, steps)
	}
}

// labelsOf is o's labels, made when it has none.
func labelsOf(o map[string]any) map[string]any {
	md := metadata(o)
	l, _ := md["labels"].(map[string]any)
	if l == nil {
		l = map[string]any{}
		md["labels"] = l
	}
	return l
}

// TestUpdateWritten: what Update reports of the entries it recorded
// encoded is what they hold, and entries of other types than a
// ManagedFieldsEntry's (which the handler drops whole) are left to the
// decoded path, with the result the updater gives.
func TestUpdateWritten(t *testing.T) {
	const creator = `{"apiVersion":"example.com/v1","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{".":{},"f:a":{}}},"f:spec":{".":{},"f:color":{},"f:replicas":{}}},"manager":"creator","operation":"Update","time":"2020-01-01T00:00:00Z"}`
	const other = `{"apiVersion":"example.com/v1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:tags":{}}},"manager":"other","operation":"Apply","time":"2020-01-02T00:00:00Z"}`
	replicas := func(o map[string]any) { o["spec"].(map[string]any)["replicas"] = int64(7) }
	tags := func(o map[string]any) { o["spec"].(map[string]any)["tags"] = []any{"y"} }
	status := func(o map[string]any) { o["status"] = map[string]any{"phase": "up"} }
	cases := []struct {
		line    int
		stored  string // the live object's managedFields
		sub     string
		who     string
		sent    string // the managedFields the client sends; "" for none
		change  func(map[string]any)
		written bool // recorded encoded, described
	}{
		{line: caseLine(), stored: `[` + creator + `]`, who: "creator", change: replicas, written: true},
		{line: caseLine(), stored: `[` + creator + `,` + other + `]`, who: "creator", change: replicas, written: true},
		{line: caseLine(), stored: `[` + creator + `]`, who: "b", change: replicas, written: true},                                  // another manager takes replicas
		{line: caseLine(), stored: `[` + creator + `,` + other + `]`, who: "b", change: tags, written: true},                        // a field another manager owns changes
		{line: caseLine(), stored: `[` + creator + `]`, who: "creator", sent: `[` + creator + `]`, change: replicas, written: true}, // sent back as read
		{line: caseLine(), stored: `[` + creator + `,` + other + `]`, who: "b", sent: `[` + creator + `,` + other + `]`, change: tags, written: true},
		{line: caseLine(), stored: `[` + creator + `]`, who: "creator", sent: `[` + other + `]`, change: replicas},
		{line: caseLine(), stored: `[` + creator + `]`, who: "creator", sent: `[]`, change: replicas}, // a reset
		{line: caseLine(), stored: `[` + creator + `]`, sub: "status", who: "s", change: status, written: true},
		// Members of other types: the decoded path decides.
		{line: caseLine(), stored: `[{"apiVersion":"example.com/v1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:color":{}}},"manager":1,"operation":"Update"}]`, who: "creator", change: replicas},
		{line: caseLine(), stored: `[{"apiVersion":"example.com/v1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:color":{}}},"manager":"m","operation":"Update","time":"yesterday"}]`, who: "creator", change: replicas},
		{line: caseLine(), stored: `[{"apiVersion":"example.com/v1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:color":{}}},"manager":"m","operation":"Update","time":null}]`, who: "creator", change: replicas},
		{line: caseLine(), stored: `[{"apiVersion":"example.com/v1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:color":{}}},"manager":"m","operation":"Update","subresource":2}]`, who: "creator", change: replicas},
	}
	for _, tc := range cases {
		l := obj(t, w1)
		var mf any
		if err := json.Unmarshal([]byte(tc.stored), &mf); err != nil {
			t.Fatalf("line %d: %v", tc.line, err)
		}
		metadata(l)["managedFields"] = mf
		liveRaw, liveSlow := redecode(t, l, true), redecode(t, l, false)
		if _, ok := rawManagedFields(liveRaw); !ok {
			t.Fatalf("line %d: managedFields not kept encoded", tc.line)
		}
		objRaw, objSlow := redecode(t, l, false), redecode(t, l, false)
		for _, o := range []map[string]any{objRaw, objSlow} {
			delete(metadata(o), "managedFields")
			if tc.sent != "" {
				var sent any
				if err := json.Unmarshal([]byte(tc.sent), &sent); err != nil {
					t.Fatal(err)
				}
				metadata(o)["managedFields"] = sent
			}
			tc.change(o)
		}
		fast, slow := manager(t, "v1", tc.sub), manager(t, "v1", tc.sub)
		slow.slow = true
		before := now()
		w := fast.Update(liveRaw, objRaw, tc.who)
		slow.Update(liveSlow, objSlow, tc.who)
		got, want := metadata(objRaw)["managedFields"], metadata(objSlow)["managedFields"]
		gb, _ := codec.Marshal(got)
		wb, _ := codec.Marshal(want)
		if before == now() && string(gb) != string(wb) {
			t.Errorf("line %d: entries\n  %s\nwant (the updater's)\n  %s", tc.line, gb, wb)
		}
		if (w != nil) != tc.written {
			t.Fatalf("line %d: described %v, want %v", tc.line, w != nil, tc.written)
		}
		if w == nil {
			continue
		}
		if !w.Holds(got) {
			t.Errorf("line %d: the description is not of the entries the object holds", tc.line)
		}
		if ids := EntryIdentities(managedFieldsOf(objRaw)); !reflect.DeepEqual(w.Entries, ids) {
			t.Errorf("line %d: described entries %+v, want %+v", tc.line, w.Entries, ids)
		}
		if w.Holds(slices.Clone(got.(codec.Raw))) || w.Holds(want) {
			t.Errorf("line %d: a copy of the entries is described as them", tc.line)
		}
	}
}

// TestUpdateRawKeepsUnchanged: an update that leaves the entries as they
// were (the writer's time did not move, or the write changed nothing it
// records) keeps the stored encoding itself rather than a copy of it.
func TestUpdateRawKeepsUnchanged(t *testing.T) {
	l := obj(t, w1)
	m := manager(t, "v1", "")
	m.Update(nil, l, "creator")
	liveRaw := redecode(t, l, true)
	raw, _ := rawManagedFields(liveRaw)
	next := redecode(t, l, false)
	delete(metadata(next), "managedFields")
	next["status"] = map[string]any{"phase": "x"} // reset through the resource: recorded by nobody
	w := m.Update(liveRaw, next, "creator")
	got, ok := rawManagedFields(next)
	if !ok || w == nil || string(got) != string(raw) || &got[0] != &raw[0] {
		t.Fatalf("entries %s (described %v), want the stored ones %s, not copied", got, w != nil, raw)
	}
}

// caseLine returns the caller's line, so that a failing case names itself.
func caseLine() int {
	_, _, l, _ := runtime.Caller(1)
	return l
}

// TestUpdateSentEncoded: a client's managedFields kept encoded (a PUT
// body in Marshal's form) are read as the same entries decoded: live's
// sent back, a client's own edit of them, and a reset.
func TestUpdateSentEncoded(t *testing.T) {
	m := manager(t, "v1", "")
	l := redecode(t, obj(t, w1), false)
	m.Update(nil, l, "creator")
	cases := []struct {
		name string
		edit func(entries []any)
		want int // entries after the update
	}{
		{"sent back as read", func([]any) {}, 2},
		{"renamed", func(e []any) { e[0].(map[string]any)["manager"] = "renamed" }, 2},
		{"reset", func(e []any) { clear(e[0].(map[string]any)) }, 0}, // [{}]
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sent := redecode(t, l, false)
			c.edit(managedFieldsOf(sent))
			metadata(sent)["labels"].(map[string]any)["new"] = "x"
			encoded, decoded := redecode(t, sent, true), redecode(t, sent, false)
			if _, ok := rawManagedFields(encoded); !ok {
				t.Fatal("the sent entries were not kept encoded")
			}
			m.Update(redecode(t, l, true), encoded, "editor")
			m.Update(redecode(t, l, true), decoded, "editor")
			e, d := summary(encoded), summary(decoded)
			if !reflect.DeepEqual(e, d) || len(d) != c.want {
				t.Errorf("sent encoded\n  %s\nsent decoded\n  %s\nwant %d entries", strings.Join(e, "\n  "), strings.Join(d, "\n  "), c.want)
			}
		})
	}
}
