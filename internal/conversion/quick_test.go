package conversion

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/registry"
	"github.com/crdserver/crdserver/internal/webhook/webhooktest"
)

const quickGroup = "example.com"

// junkSchema prunes spec.junk and defaults spec.size to "m".
type junkSchema struct{ registry.Schema }

func (junkSchema) Prune(obj map[string]any) []string {
	if spec, ok := obj["spec"].(map[string]any); ok {
		if _, ok := spec["junk"]; ok {
			delete(spec, "junk")
			return []string{"spec.junk"}
		}
	}
	return nil
}

func (junkSchema) Default(obj map[string]any) {
	if spec, ok := obj["spec"].(map[string]any); ok {
		if _, ok := spec["size"]; !ok {
			spec["size"] = "m"
		}
	}
}

func (junkSchema) Validate(map[string]any) field.ErrorList { return nil }

// UnchangedAt is what schema.Schema.UnchangedAt promises, checked the
// long way: decoding, pruning, defaulting and encoding give the object
// back.
func (s junkSchema) UnchangedAt(t *codec.Tokens, member func(name, value []byte) bool) (start, end int, ok bool) {
	at := t.Offset()
	encoded, ok := t.Value()
	if !ok {
		return 0, 0, false
	}
	obj, err := Decode(encoded)
	start, end, ok = codec.MetadataSpan(encoded)
	if err != nil || !ok {
		return 0, 0, false
	}
	if member != nil {
		t := codec.MakeTokens(encoded[start:end])
		if !eachMember(&t, func(name, v []byte) (bool, bool) { return false, member(name, v) }) {
			return 0, 0, false
		}
	}
	obj["metadata"] = codec.Raw(encoded[start:end])
	s.Prune(obj)
	s.Default(obj)
	out, err := codec.Marshal(obj)
	return at + start, at + end, err == nil && bytes.Equal(out, encoded)
}

func thing(name string) []byte {
	return []byte(`{"apiVersion":"` + quickGroup + `/v1","kind":"Thing","metadata":{"annotations":{"n":"1"},"labels":{"a":"b"},"managedFields":[{"manager":"m"}],"name":"` +
		name + `","namespace":"ns","resourceVersion":"7","uid":"u-` + name + `"},"spec":{"junk":1,"x":[1,2.5,"s"]}}`)
}

// converted is thing converted to v2 by rewriting its apiVersion, then
// edited.
func converted(name string, edit func(string) string) []byte {
	c := strings.Replace(string(thing(name)), quickGroup+"/v1", quickGroup+"/v2", 1)
	if edit != nil {
		c = edit(c)
	}
	return []byte(c)
}

// checkSame holds quickResult to result on one converted object: either
// it declines, or both give the same bytes. It reports whether
// quickResult took it.
func checkSame(t *testing.T, orig Object, conv []byte) bool {
	t.Helper()
	quickIn, err1 := Decode(conv)
	slowIn, err2 := Decode(conv)
	if err1 != nil || err2 != nil {
		return false
	}
	to := quickGroup + "/v2"
	raw, rawOK := rawResult(orig, conv, to, junkSchema{})
	quick, _, ok := quickResult(orig, quickIn, to, junkSchema{}, nil)
	w := &Webhook{def: &registry.Definition{Group: quickGroup, Kind: "Thing", ListKind: "ThingList"}}
	toGV := schema.GroupVersion{Group: quickGroup, Version: "v2"}
	in := toGV.WithKind("ThingList")
	slow, err := w.result(orig, slowIn, toGV, junkSchema{}, in, 0, false)
	if rawOK && (err != nil || !bytes.Equal(raw, slow)) {
		t.Fatalf("rawResult took an answer result refuses or writes otherwise (%v):\nraw  %s\nslow %s", err, raw, slow)
	}
	if rawOK && !ok {
		t.Fatalf("rawResult took an answer quickResult declines: %s", conv)
	}
	if !ok {
		return false
	}
	if err != nil {
		t.Fatalf("quickResult took an answer result refuses (%v): %s", err, conv)
	}
	if !bytes.Equal(quick, slow) {
		t.Fatalf("\nquick %s\nslow  %s\nanswer %s", quick, slow, conv)
	}
	return true
}

func TestQuickResult(t *testing.T) {
	stored := Object{JSON: thing("a"), Key: "/a", Revision: 7}
	for _, tc := range []struct {
		name  string
		edit  func(string) string
		quick bool
	}{
		{"plain", nil, true},
		{"pruned and defaulted", func(c string) string { return strings.Replace(c, `"x":`, `"y":true,"x":`, 1) }, true},
		{"metadata besides identity ignored", func(c string) string {
			return strings.Replace(c, `"managedFields":[{"manager":"m"}]`, `"generation":3,"junk":{}`, 1)
		}, true},
		{"indented", func(c string) string { return strings.ReplaceAll(c, `,"`, ",\n  \"") }, true},
		{"label escaped", func(c string) string { return strings.Replace(c, `{"a":"b"}`, `{"a":"\u0062"}`, 1) }, true},
		{"label changed", func(c string) string { return strings.Replace(c, `{"a":"b"}`, `{"a":"c"}`, 1) }, false},
		{"label not a string", func(c string) string { return strings.Replace(c, `{"a":"b"}`, `{"a":1}`, 1) }, false},
		{"labels dropped", func(c string) string { return strings.Replace(c, `"labels":{"a":"b"},`, ``, 1) }, false},
		{"annotation changed", func(c string) string { return strings.Replace(c, `{"n":"1"}`, `{"n":"2"}`, 1) }, false},
		{"name changed", func(c string) string { return strings.Replace(c, `"name":"a"`, `"name":"z"`, 1) }, false},
		{"uid dropped", func(c string) string { return strings.Replace(c, `,"uid":"u-a"`, ``, 1) }, false},
		{"kind changed", func(c string) string { return strings.Replace(c, `"kind":"Thing"`, `"kind":"Other"`, 1) }, false},
		{"kind repeated", func(c string) string { return strings.Replace(c, `"kind":"Thing"`, `"kind":"Other","kind":"Thing"`, 1) }, true},
		{"version not converted", func(c string) string { return strings.Replace(c, "/v2", "/v1", 1) }, false},
		{"no metadata", func(c string) string { return c[:strings.Index(c, `"metadata"`)] + `"spec":{}}` }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := checkSame(t, stored, converted("a", tc.edit)); got != tc.quick {
				t.Errorf("quick path taken: %v, want %v", got, tc.quick)
			}
		})
	}
	// A request's object, not stored, always takes the careful path.
	if checkSame(t, Object{JSON: thing("a")}, converted("a", nil)) {
		t.Error("quick path taken for an object that is not stored")
	}
}

// FuzzQuickResult: whatever a webhook answers for an object, quickResult
// either declines or agrees with result.
func FuzzQuickResult(f *testing.F) {
	f.Add(converted("a", nil))
	f.Add(converted("a", func(c string) string { return strings.Replace(c, `"x":`, `"y":{"z":null},"x":`, 1) }))
	f.Add(converted("a", func(c string) string {
		return strings.Replace(c, `"labels":{"a":"b"}`, `"labels":{"a":"b","a":"c"}`, 1)
	}))
	f.Add(converted("a", func(c string) string { return strings.Replace(c, `"name":"a"`, `"name":"\u0061"`, 1) }))
	f.Add(converted("a", func(c string) string { return strings.Replace(c, `"labels":{"a":"b"}`, `"labels":null`, 1) }))
	stored := Object{JSON: thing("a"), Key: "/a", Revision: 7}
	f.Fuzz(func(t *testing.T, conv []byte) {
		checkSame(t, stored, conv)
	})
}

func Example_quickResult() {
	obj, _ := Decode(converted("a", nil))
	out, _, ok := quickResult(Object{JSON: thing("a"), Key: "/a", Revision: 7}, obj, quickGroup+"/v2", junkSchema{}, nil)
	fmt.Println(ok)
	fmt.Printf("%s\n", out)
	// Output:
	// true
	// {"apiVersion":"example.com/v2","kind":"Thing","metadata":{"annotations":{"n":"1"},"labels":{"a":"b"},"managedFields":[{"manager":"m"}],"name":"a","namespace":"ns","resourceVersion":"7","uid":"u-a"},"spec":{"size":"m","x":[1,2.5,"s"]}}
}

func TestRawResult(t *testing.T) {
	stored := Object{JSON: thing("a"), Key: "/a", Revision: 7}
	defaulted := func(c string) string { return strings.Replace(c, `"junk":1,`, `"size":"m",`, 1) }
	for _, tc := range []struct {
		name string
		edit func(string) string
		raw  bool
	}{
		{"pruned and defaulted already", defaulted, true},
		{"to be pruned", nil, false},
		{"other metadata", func(c string) string {
			return strings.Replace(defaulted(c), `"managedFields":[{"manager":"m"}]`, `"generation":3`, 1)
		}, true},
		{"name repeated", func(c string) string { return strings.Replace(defaulted(c), `"name":"a"`, `"name":"a","name":"z"`, 1) }, false},
		{"label changed", func(c string) string { return strings.Replace(defaulted(c), `{"a":"b"}`, `{"a":"c"}`, 1) }, false},
		{"version not converted", func(c string) string { return strings.Replace(defaulted(c), "/v2", "/v1", 1) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conv := converted("a", tc.edit)
			_, ok := rawResult(stored, conv, quickGroup+"/v2", junkSchema{})
			if ok != tc.raw {
				t.Errorf("rawResult ok = %v, want %v", ok, tc.raw)
			}
			checkSame(t, stored, conv)
		})
	}
}

// FuzzQuickReview: an answer quickReview reads, convertedObjects reads
// alike.
func FuzzQuickReview(f *testing.F) {
	f.Add([]byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{"uid":"u1","result":{"status":"Success"},"convertedObjects":[{"a":1},{"b":[2]}]}}` + "\n"))
	f.Add([]byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{"uid":"u1","result":{"status":"Success"},"convertedObjects":[{"a":1},{"b":2}],"uid":"u2"}}`))
	f.Add([]byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{"uid":"u1","result":{"status":"Failed","message":"no"}}}`))
	// Answers as real webhooks write them: the load generator's, by hand
	// with apiVersion rewritten in each object, and webhooktest's, with
	// encoding/json (members in struct order, a newline after).
	_, w1 := widget(f, 1)
	_, w2 := widget(f, 2)
	f.Add([]byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{"uid":"u1","result":{"status":"Success"},"convertedObjects":[` +
		string(w1) + `,` + string(w2) + `]}}`))
	var o1, o2 map[string]any
	if err := json.Unmarshal(w1, &o1); err != nil {
		f.Fatal(err)
	}
	if err := json.Unmarshal(w2, &o2); err != nil {
		f.Fatal(err)
	}
	for _, resp := range []*webhooktest.ReviewResponse{
		{UID: "u1", ConvertedObjects: []map[string]any{o1, o2}, Result: webhooktest.Result{Status: "Success"}},
		{UID: "u1", Result: webhooktest.Result{Status: "Failed", Message: "cannot convert"}},
	} {
		for _, review := range []string{"v1", "v1beta1"} {
			var b bytes.Buffer
			if err := json.NewEncoder(&b).Encode(webhooktest.Review{APIVersion: "apiextensions.k8s.io/" + review, Kind: "ConversionReview", Response: resp}); err != nil {
				f.Fatal(err)
			}
			f.Add(b.Bytes())
		}
	}
	s := compileWidgetSchema(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, review := range []string{"v1", "v1beta1"} {
			w := &Webhook{review: review}
			plain, ok := w.quickReview("u1", data, 2, nil, nil)
			// Read with a schema's walk, the same objects, each accepted
			// as alone.
			walked, walkedOK := w.quickReview("u1", data, 2, s, nil)
			if ok != walkedOK || len(plain) != len(walked) {
				t.Fatalf("%s: quickReview read %d objects (%v), with the walk %d (%v)", review, len(plain), ok, len(walked), walkedOK)
			}
			for j, ro := range walked {
				if !bytes.Equal(ro.json, plain[j].json) || plain[j].unchanged {
					t.Fatalf("%s: object %d read as %s, with the walk %s", review, j, plain[j].json, ro.json)
				}
				start, end, unchanged := s.UnchangedSpan(ro.json, keptMember)
				if unchanged != ro.unchanged || unchanged && (start != ro.metaStart || end != ro.metaEnd) {
					t.Fatalf("%s: object %d walked in place: %v, %d, %d; alone: %v, %d, %d", review, j, ro.unchanged, ro.metaStart, ro.metaEnd, unchanged, start, end)
				}
			}
			if !ok {
				continue
			}
			objs, err := w.convertedObjects("u1", data)
			if err != nil || len(objs) != len(plain) {
				t.Fatalf("%s: quickReview read %d objects, convertedObjects %d (%v)", review, len(plain), len(objs), err)
			}
			for j, ro := range plain {
				raw := ro.json
				want, _ := codec.Marshal(objs[j])
				obj, err := Decode(raw)
				if raw[0] != '{' {
					continue // the caller decodes the whole answer then
				}
				got, _ := codec.Marshal(obj)
				if err != nil || !bytes.Equal(got, want) {
					t.Fatalf("%s: object %d: %s, convertedObjects read %s (%v)", review, j, got, want, err)
				}
			}
		}
	})
}

// TestRawResultSameMetadata: an answer with its original's metadata byte
// for byte is taken as it came, but for originals whose labels or
// annotations check would not keep as they are (null, or not objects):
// those are read the long way, and every case agrees with result.
func TestRawResultSameMetadata(t *testing.T) {
	defaulted := func(c string) string { return strings.Replace(c, `"junk":1,`, `"size":"m",`, 1) }
	for _, tc := range []struct {
		name string
		edit func(string) string // of the original and its answer alike
		raw  bool
	}{
		{"as stored", nil, true},
		{"no labels or annotations", func(c string) string {
			return strings.Replace(c, `"annotations":{"n":"1"},"labels":{"a":"b"},`, ``, 1)
		}, true},
		{"a member before kind", func(c string) string { return strings.Replace(c, `"kind":`, `"data":[1],"kind":`, 1) }, true},
		{"no kind", func(c string) string { return strings.Replace(c, `"kind":"Thing",`, ``, 1) }, false},
		{"labels null", func(c string) string { return strings.Replace(c, `"labels":{"a":"b"}`, `"labels":null`, 1) }, false},
		{"annotations a string", func(c string) string {
			return strings.Replace(c, `"annotations":{"n":"1"}`, `"annotations":"n"`, 1)
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			orig := string(thing("a"))
			if tc.edit != nil {
				orig = tc.edit(orig)
			}
			stored := Object{JSON: []byte(orig), Key: "/a", Revision: 7}
			conv := []byte(defaulted(strings.Replace(orig, quickGroup+"/v1", quickGroup+"/v2", 1)))
			out, ok := rawResult(stored, conv, quickGroup+"/v2", junkSchema{})
			if ok != tc.raw {
				t.Errorf("rawResult ok = %v, want %v", ok, tc.raw)
			}
			if ok && !bytes.Equal(out, conv) {
				t.Errorf("rawResult gave\n%s\nfor the answer\n%s", out, conv)
			}
			checkSame(t, stored, conv)
		})
	}
}

// TestSameMetadataWidget: the load generator's webhook answer, its
// original's bytes under another apiVersion, is taken as it came without
// reading its identity member by member.
func TestSameMetadataWidget(t *testing.T) {
	s := compileWidgetSchema(t)
	orig, conv := widget(t, 3)
	start, end, ok := s.UnchangedSpan(conv, keptMember)
	if !ok {
		t.Fatal("UnchangedSpan declines the widget's answer")
	}
	var _ unchangedChecker = s
	if !sameMetadata(orig, conv, "bench.crdserver.io/v2", start, end) {
		t.Fatal("sameMetadata declines the widget's answer")
	}
	out, ok := rawResult(orig, conv, "bench.crdserver.io/v2", s)
	if !ok || !bytes.Equal(out, conv) {
		t.Fatalf("rawResult = %v:\n%s\nwant the answer\n%s", ok, out, conv)
	}
	if cap(out) != len(out) {
		t.Error("the result shares room after it with the answer: appending to it would write into the review")
	}
}

// TestStoredAnswer: an answer that is its stored original under the
// target apiVersion is compared with the original instead of walked, only
// where the walk would accept it for sure (the original written since the
// storage schema last changed, the target version of the same schema), and
// its results are those the walk gives.
func TestStoredAnswer(t *testing.T) {
	s := compileWidgetSchema(t)
	const to = "bench.crdserver.io/v2"
	toGV := schema.GroupVersion{Group: "bench.crdserver.io", Version: "v2"}
	otherSchema := strings.Replace(widgetSchema, `"default":"medium"`, `"default":"small"`, 1)
	for _, tc := range []struct {
		name      string
		v2Schema  string
		schemaRev int64 // objects are at revisions 1 and 2
		notStored bool  // the originals have no key
		second    func(string) string
		compared  []bool // which answers are compared, not walked
	}{
		{name: "as stored", v2Schema: widgetSchema, compared: []bool{true, true}},
		{name: "the second's label changed", v2Schema: widgetSchema, compared: []bool{true, false},
			second: func(c string) string { return strings.Replace(c, `"tier":"data"`, `"tier":"web"`, 1) }},
		{name: "the second's spec changed", v2Schema: widgetSchema, compared: []bool{true, false},
			second: func(c string) string { return strings.Replace(c, `"size":"large"`, `"size":"small"`, 1) }},
		{name: "the first written before the schema changed", v2Schema: widgetSchema, schemaRev: 1, compared: []bool{false, true}},
		{name: "v2 has another schema", v2Schema: otherSchema, compared: []bool{false, false}},
		{name: "not stored", v2Schema: widgetSchema, notStored: true, compared: []bool{false, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o1, c1 := widget(t, 0)
			o2, c2 := widget(t, 1)
			if tc.notStored {
				o1.Key, o2.Key = "", ""
			}
			if tc.second != nil {
				c2 = []byte(tc.second(string(c2)))
			}
			objs, idx := []Object{o1, o2}, []int{0, 1}
			answer := []byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{"uid":"u1","result":{"status":"Success"},"convertedObjects":[` +
				string(c1) + `,` + string(c2) + `]}}`)
			w := &Webhook{review: "v1", def: widgetDef(s, tc.v2Schema, tc.schemaRev)}
			results := func(same func(int, []byte) int) ([][]byte, []rawObject, bool) {
				t.Helper()
				raws, ok := w.quickReview("u1", answer, len(idx), s, same)
				if !ok {
					t.Fatal("quickReview declined")
				}
				out, shared, ok, err := w.resultsFromRaw(raws, to, objs, idx, toGV, s, toGV.WithKind("WidgetList"), false)
				if !ok || err != nil {
					t.Fatalf("resultsFromRaw: ok %v, %v", ok, err)
				}
				return out, raws, shared
			}
			got, raws, shared := results(w.storedMatcher(to, objs))
			want, _, _ := results(nil)
			for j := range idx {
				if raws[j].stored != tc.compared[j] {
					t.Errorf("answer %d compared with its original: %v, want %v", j, raws[j].stored, tc.compared[j])
				}
				if !bytes.Equal(got[j], want[j]) {
					t.Errorf("result %d:\n%s\nwalked:\n%s", j, got[j], want[j])
				}
				if shared && cap(got[j]) != len(got[j]) {
					t.Errorf("result %d shares room after it with the answer", j)
				}
			}
		})
	}
}
