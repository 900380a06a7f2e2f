package conversion_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crdserver/crdserver/internal/conversion"
	"github.com/crdserver/crdserver/internal/registry"
	"github.com/crdserver/crdserver/internal/webhook"
	"github.com/crdserver/crdserver/internal/webhook/webhooktest"
)

const group = "restaurant.programming-kubernetes.info"

// pizza converts the seed's Pizza: v1alpha1 toppings are names, a name
// repeated for extra; v1beta1 toppings are name/quantity pairs.
func pizza(obj map[string]any, to string) (map[string]any, error) {
	from, _ := obj["apiVersion"].(string)
	spec, _ := obj["spec"].(map[string]any)
	tops, _ := spec["toppings"].([]any)
	var out []any
	switch {
	case from == group+"/v1alpha1" && to == group+"/v1beta1":
		idx := map[string]int{}
		for _, t := range tops {
			name := t.(string)
			if i, ok := idx[name]; ok {
				out[i].(map[string]any)["quantity"] = out[i].(map[string]any)["quantity"].(float64) + 1
				continue
			}
			idx[name] = len(out)
			out = append(out, map[string]any{"name": name, "quantity": float64(1)})
		}
	case from == group+"/v1beta1" && to == group+"/v1alpha1":
		for _, t := range tops {
			m := t.(map[string]any)
			for range int(m["quantity"].(float64)) {
				out = append(out, m["name"])
			}
		}
	default:
		return nil, fmt.Errorf("cannot convert %s to %s", from, to)
	}
	if spec != nil {
		spec["toppings"] = out
	}
	obj["apiVersion"] = to
	return obj, nil
}

func pizzaDef(conv *registry.Conversion) *registry.Definition {
	return &registry.Definition{
		Group: group, Resource: "pizzas", Kind: "Pizza", ListKind: "PizzaList", Scope: registry.Namespaced,
		Versions:   []registry.Version{{Name: "v1alpha1", Served: true, Storage: true}, {Name: "v1beta1", Served: true}},
		Conversion: conv,
	}
}

func margherita(name string, rev int) []byte {
	return []byte(`{"apiVersion":"` + group + `/v1alpha1","kind":"Pizza","metadata":{"labels":{"a":"b"},"name":"` + name +
		`","namespace":"default","resourceVersion":"` + strconv.Itoa(rev) + `","uid":"u-` + name + `"},"spec":{"toppings":["mozzarella","tomato","mozzarella"]}}`)
}

type counting struct {
	calls   atomic.Int64
	objects atomic.Int64
	h       http.Handler
}

func (c *counting) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.calls.Add(1)
	c.h.ServeHTTP(w, r)
}

func startPizzaWebhook(t testing.TB, edit func(*webhooktest.Review)) (*counting, *registry.Definition, conversion.Converter) {
	h := &counting{h: webhooktest.Conversion(pizza, edit)}
	srv := webhooktest.Start(t, h)
	def := pizzaDef(&registry.Conversion{URL: srv.URL + "/convert", CABundle: srv.CABundle, ReviewVersions: []string{"v2", "v1", "v1beta1"}})
	return h, def, conversion.New(def, &webhook.Manager{})
}

func TestWebhookPizza(t *testing.T) {
	h, _, conv := startPizzaWebhook(t, nil)
	out, err := conv.Convert(context.Background(), group+"/v1beta1", []conversion.Object{{JSON: margherita("m", 5), Key: "/m", Revision: 5}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"apiVersion":"` + group + `/v1beta1","kind":"Pizza","metadata":{"labels":{"a":"b"},"name":"m","namespace":"default","resourceVersion":"5","uid":"u-m"},"spec":{"toppings":[{"name":"mozzarella","quantity":2},{"name":"tomato","quantity":1}]}}`
	if string(out[0]) != want {
		t.Errorf("got  %s\nwant %s", out[0], want)
	}
	// Unchanged, it is not sent again.
	if _, err := conv.Convert(context.Background(), group+"/v1beta1", []conversion.Object{{JSON: margherita("m", 5), Key: "/m", Revision: 5}}); err != nil {
		t.Fatal(err)
	}
	if n := h.calls.Load(); n != 1 {
		t.Errorf("%d reviews, want 1", n)
	}
	// Back again.
	back, err := conv.Convert(context.Background(), group+"/v1alpha1", []conversion.Object{{JSON: out[0]}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(back[0]), `"toppings":["mozzarella","mozzarella","tomato"]`) {
		t.Errorf("back: %s", back)
	}
	// Already there: no call.
	same, err := conv.Convert(context.Background(), group+"/v1alpha1", []conversion.Object{{JSON: margherita("x", 1)}})
	if err != nil || string(same[0]) != string(margherita("x", 1)) {
		t.Errorf("same version: %s, %v", same, err)
	}
	if n := h.calls.Load(); n != 2 {
		t.Errorf("%d reviews, want 2", n)
	}
}

func TestWebhookBatches(t *testing.T) {
	var sizes []int
	var mu sync.Mutex
	h, _, conv := startPizzaWebhook(t, func(r *webhooktest.Review) {
		mu.Lock()
		sizes = append(sizes, len(r.Response.ConvertedObjects))
		mu.Unlock()
	})
	objs := make([]conversion.Object, 1200)
	for i := range objs {
		objs[i] = conversion.Object{JSON: margherita("p"+strconv.Itoa(i), i+1), Key: "/p" + strconv.Itoa(i), Revision: int64(i + 1)}
	}
	out, err := conv.Convert(context.Background(), group+"/v1beta1", objs)
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range out {
		if !strings.Contains(string(b), `"name":"p`+strconv.Itoa(i)+`"`) {
			t.Fatalf("object %d out of order: %s", i, b)
		}
	}
	slices.Sort(sizes)
	if fmt.Sprint(sizes) != "[200 500 500]" {
		t.Errorf("review sizes %v, want 200, 500 and 500", sizes)
	}
	// A second list sends only the changed object.
	objs[7] = conversion.Object{JSON: margherita("p7", 5000), Key: "/p7", Revision: 5000}
	if _, err := conv.Convert(context.Background(), group+"/v1beta1", objs); err != nil {
		t.Fatal(err)
	}
	if n := h.calls.Load(); n != 4 || sizes[3] != 1 {
		t.Errorf("%d reviews (sizes %v), want 4, the last of 1", n, sizes)
	}
}

// inParts is a cached object that counts how often it was put together.
type inParts struct {
	json  []byte
	whole *atomic.Int64
}

func (p inParts) Head() []byte { return p.json[:len(p.json)/2] }
func (p inParts) AppendPieces(dst [][]byte) [][]byte {
	return append(dst, p.Head(), p.json[len(p.json)/2:])
}
func (p inParts) JSON() []byte {
	p.whole.Add(1)
	return slices.Clone(p.json)
}

// TestWebhookCachedInParts: cached objects kept in parts are put together
// only to be sent; a list that kept conversions answer reads only their
// heads, and the answers are those of objects given whole.
func TestWebhookCachedInParts(t *testing.T) {
	h, _, conv := startPizzaWebhook(t, nil)
	var whole atomic.Int64
	objs := make([]conversion.Object, 600)
	for i := range objs {
		objs[i] = conversion.Object{Cached: inParts{json: margherita("p"+strconv.Itoa(i), i+1), whole: &whole}, Key: "/p" + strconv.Itoa(i), Revision: int64(i + 1)}
	}
	objs[3] = conversion.Object{JSON: margherita("p3", 4), Key: "/p3", Revision: 4} // whole already
	for round, want := range []int64{599, 599} {
		out, err := conv.Convert(context.Background(), group+"/v1beta1", objs)
		if err != nil {
			t.Fatal(err)
		}
		if n := whole.Load(); n != want {
			t.Errorf("round %d: objects put together %d times in all, want %d", round, n, want)
		}
		for i, b := range out {
			if want := `"name":"p` + strconv.Itoa(i) + `"`; !strings.Contains(string(b), want) || !strings.Contains(string(b), `"quantity":`) {
				t.Fatalf("round %d: object %d: %s", round, i, b)
			}
		}
	}
	if n := h.calls.Load(); n != 2 {
		t.Errorf("%d reviews, want 2 (the first round's)", n)
	}
	if objs[0].JSON != nil {
		t.Errorf("the caller's objects were changed")
	}
}

// TestWebhookStoredInParts: cached objects written since the storage
// schema last changed, converted to a version of the same schema by a
// webhook that changes only their apiVersion, are compared with the
// answer piece by piece: only the first of each review is put together
// (for its apiVersion and kind). Those that may predate the schema are
// put together and read as ever. The results are the same.
func TestWebhookStoredInParts(t *testing.T) {
	rewrite := func(o map[string]any, to string) (map[string]any, error) {
		o["apiVersion"] = to
		return o, nil
	}
	for _, tc := range []struct {
		name      string
		schemaRev int64
		whole     int64
	}{
		{"written since the schema changed", 0, 2},
		{"some may predate it", 300, 301},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := webhooktest.Start(t, webhooktest.Conversion(rewrite, nil))
			def := pizzaDef(&registry.Conversion{URL: srv.URL, CABundle: srv.CABundle, ReviewVersions: []string{"v1"}})
			def.SchemaRevision = tc.schemaRev
			conv := conversion.New(def, &webhook.Manager{})
			var whole atomic.Int64
			objs := make([]conversion.Object, 600)
			for i := range objs {
				objs[i] = conversion.Object{Cached: inParts{json: margherita("p"+strconv.Itoa(i), i+1), whole: &whole}, Key: "/p" + strconv.Itoa(i), Revision: int64(i + 1)}
			}
			out, err := conv.Convert(context.Background(), group+"/v1beta1", objs)
			if err != nil {
				t.Fatal(err)
			}
			if n := whole.Load(); n != tc.whole {
				t.Errorf("objects put together %d times, want %d", n, tc.whole)
			}
			for i, b := range out {
				want := strings.Replace(string(margherita("p"+strconv.Itoa(i), i+1)), "/v1alpha1", "/v1beta1", 1)
				if string(b) != want {
					t.Fatalf("object %d: %s, want %s", i, b, want)
				}
			}
		})
	}
}

// TestWebhookSharedByWatchers: watchers converting one event at once
// share one review.
func TestWebhookSharedByWatchers(t *testing.T) {
	release := make(chan struct{})
	h := &counting{h: webhooktest.Conversion(func(o map[string]any, to string) (map[string]any, error) {
		<-release
		return pizza(o, to)
	}, nil)}
	srv := webhooktest.Start(t, h)
	def := pizzaDef(&registry.Conversion{URL: srv.URL, CABundle: srv.CABundle, ReviewVersions: []string{"v1"}})
	conv := conversion.New(def, &webhook.Manager{})
	var wg sync.WaitGroup
	results := make([]string, 20)
	for i := range results {
		wg.Go(func() {
			out, err := conv.Convert(context.Background(), group+"/v1beta1", []conversion.Object{{JSON: margherita("m", 9), Key: "/m", Revision: 9}})
			if err != nil {
				results[i] = err.Error()
				return
			}
			results[i] = string(out[0])
		})
	}
	for h.calls.Load() == 0 {
		runtime.Gosched()
	}
	close(release)
	wg.Wait()
	for _, r := range results[1:] {
		if r != results[0] {
			t.Fatalf("results differ: %s vs %s", r, results[0])
		}
	}
	if n := h.calls.Load(); n != 1 {
		t.Errorf("%d reviews, want 1", n)
	}
}

func TestWebhookAnswersChecked(t *testing.T) {
	to := group + "/v1beta1"
	gvk := group + "/v1alpha1, Kind=Pizza"
	for _, tc := range []struct {
		name string
		edit func(*webhooktest.Review)
		want string
	}{
		{"wrong uid", func(r *webhooktest.Review) { r.Response.UID = "other" }, `conversion webhook for ` + gvk + ` failed: expected response.uid=`},
		{"wrong review kind", func(r *webhooktest.Review) { r.Kind = "AdmissionReview" }, `failed: expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got apiextensions.k8s.io/v1, Kind=AdmissionReview`},
		{"no response", func(r *webhooktest.Review) { r.Response = nil }, `failed: no response provided`},
		{"failed", func(r *webhooktest.Review) {
			r.Response.Result = webhooktest.Result{Status: "Failed", Message: "no pineapple"}
		}, `conversion webhook for ` + gvk + ` failed: no pineapple`},
		{"failed silently", func(r *webhooktest.Review) { r.Response.Result = webhooktest.Result{Status: "Failure"} }, `failed: response.result.status was 'Failure', not 'Success'`},
		{"missing object", func(r *webhooktest.Review) { r.Response.ConvertedObjects = nil }, `conversion webhook for ` + gvk + ` returned 0 objects, expected 1`},
		{"changed name", func(r *webhooktest.Review) {
			r.Response.ConvertedObjects[0]["metadata"].(map[string]any)["name"] = "other"
		}, `conversion webhook for ` + gvk + ` returned invalid object: must have the same name: m != other`},
		{"changed uid", func(r *webhooktest.Review) {
			r.Response.ConvertedObjects[0]["metadata"].(map[string]any)["uid"] = "x"
		}, `must have the same UID: u-m != x`},
		{"changed kind", func(r *webhooktest.Review) { r.Response.ConvertedObjects[0]["kind"] = "Calzone" }, `returned invalid object at index 0: invalid kind (expected Pizza, received Calzone)`},
		{"wrong version", func(r *webhooktest.Review) { r.Response.ConvertedObjects[0]["apiVersion"] = group + "/v1alpha1" }, `returned invalid object at index 0: invalid groupVersion (expected ` + to + `, received ` + group + `/v1alpha1)`},
		{"bad label", func(r *webhooktest.Review) {
			r.Response.ConvertedObjects[0]["metadata"].(map[string]any)["labels"] = map[string]any{"a": "b c"}
		}, `returned invalid metadata: metadata.labels: Invalid value: "b c"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, conv := startPizzaWebhook(t, tc.edit)
			// A request's object, and a stored one (whose answer is first
			// read without decoding): the same error.
			for _, key := range []string{"", "/m"} {
				_, err := conv.Convert(context.Background(), to, []conversion.Object{{JSON: margherita("m", 5), Key: key, Revision: 5}})
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("key %q: error %v\nwant %s", key, err, tc.want)
				}
			}
		})
	}
}

// TestWebhookListLastReviewOfOne: a list whose last review carries one
// object words that review's errors as a list's (the list's kind, the
// object's index), not as one object's converted alone.
func TestWebhookListLastReviewOfOne(t *testing.T) {
	_, _, conv := startPizzaWebhook(t, func(r *webhooktest.Review) {
		if len(r.Response.ConvertedObjects) == 1 {
			r.Response.ConvertedObjects[0]["kind"] = "Calzone"
		}
	})
	objs := make([]conversion.Object, conversion.MaxBatch+1)
	for i := range objs {
		objs[i] = conversion.Object{JSON: margherita("p"+strconv.Itoa(i), i+1), Key: "/p" + strconv.Itoa(i), Revision: int64(i + 1)}
	}
	_, err := conv.Convert(context.Background(), group+"/v1beta1", objs)
	want := `conversion webhook for ` + group + `/v1alpha1, Kind=PizzaList returned invalid converted object at index 0: invalid kind (expected Pizza, received Calzone)`
	if err == nil || err.Error() != want {
		t.Errorf("error %v\nwant %s", err, want)
	}
}

func TestWebhookMetadata(t *testing.T) {
	_, _, conv := startPizzaWebhook(t, func(r *webhooktest.Review) {
		md := r.Response.ConvertedObjects[0]["metadata"].(map[string]any)
		md["labels"] = map[string]any{"to": "v1beta1"}
		md["annotations"] = map[string]any{"converted": "yes"}
		md["finalizers"] = []any{"foo"}
		md["generation"] = 42
		md["garbage"] = "x"
	})
	for _, key := range []string{"", "/m"} {
		out, err := conv.Convert(context.Background(), group+"/v1beta1", []conversion.Object{{JSON: margherita("m", 5), Key: key, Revision: 5}})
		if err != nil {
			t.Fatal(err)
		}
		var obj struct{ Metadata map[string]any }
		json.Unmarshal(out[0], &obj)
		want := `map[annotations:map[converted:yes] labels:map[to:v1beta1] name:m namespace:default resourceVersion:5 uid:u-m]`
		if got := fmt.Sprint(obj.Metadata); got != want {
			t.Errorf("key %q: metadata %s, want %s", key, got, want)
		}
	}
}

func TestWebhookUnreachable(t *testing.T) {
	def := pizzaDef(&registry.Conversion{URL: "https://127.0.0.1:1/convert", ReviewVersions: []string{"v1"}})
	conv := conversion.New(def, &webhook.Manager{})
	_, err := conv.Convert(context.Background(), group+"/v1beta1", []conversion.Object{{JSON: margherita("m", 5)}})
	want := `conversion webhook for ` + group + `/v1alpha1, Kind=Pizza failed: Post "https://127.0.0.1:1/convert?timeout=30s": dial tcp 127.0.0.1:1: connect: connection refused`
	if err == nil || err.Error() != want {
		t.Errorf("error %v\nwant  %s", err, want)
	}
}

func TestNone(t *testing.T) {
	def := pizzaDef(nil)
	conv := conversion.For(def)
	out, err := conv.Convert(context.Background(), group+"/v1beta1", []conversion.Object{{JSON: margherita("m", 5)}})
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Replace(string(margherita("m", 5)), "/v1alpha1", "/v1beta1", 1); string(out[0]) != want {
		t.Errorf("got %s", out[0])
	}
	obj := map[string]any{"apiVersion": group + "/v1alpha1", "kind": "Pizza"}
	got, err := conversion.ConvertObject(context.Background(), conv, obj, group+"/v1beta1")
	if err != nil || got["apiVersion"] != group+"/v1beta1" {
		t.Errorf("ConvertObject: %v, %v", got, err)
	}
}

// BenchmarkNone is the cost of the None strategy per object: a rewrite of
// apiVersion in the encoded bytes.
func BenchmarkNone(b *testing.B) {
	def := pizzaDef(nil)
	conv := conversion.For(def)
	objs := []conversion.Object{{JSON: margherita("margherita", 12345)}}
	to := group + "/v1beta1"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := conv.Convert(context.Background(), to, objs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNone2KB is BenchmarkNone with an object of about 2KB, the load
// generator's size.
func BenchmarkNone2KB(b *testing.B) {
	def := pizzaDef(nil)
	conv := conversion.For(def)
	js := strings.Replace(string(margherita("margherita", 12345)), `"spec":{`, `"spec":{"pad":"`+strings.Repeat("x", 1800)+`",`, 1)
	objs := []conversion.Object{{JSON: []byte(js)}}
	to := group + "/v1beta1"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := conv.Convert(context.Background(), to, objs); err != nil {
			b.Fatal(err)
		}
	}
}

func TestNoneRewrite(t *testing.T) {
	n := conversion.For(pizzaDef(nil)).(conversion.None)
	in := margherita("m", 5)
	rest, ok := n.Rewrite(in, group+"/v1beta1")
	if !ok {
		t.Fatal("no rewrite between versions without schemas")
	}
	out, _ := n.Convert(context.Background(), group+"/v1beta1", []conversion.Object{{JSON: in}})
	if got := `{"apiVersion":"` + group + "/v1beta1" + string(rest); got != string(out[0]) {
		t.Errorf("Rewrite gives %s, Convert %s", got, out[0])
	}
	if _, ok := n.Rewrite([]byte(`{"kind":"Pizza"}`), group+"/v1beta1"); ok {
		t.Error("an object without a leading apiVersion was rewritten")
	}
}

// TestWebhookWaiterOutlivesSender: a caller waiting for another's review
// of the same object converts it itself when the other goes away.
func TestWebhookWaiterOutlivesSender(t *testing.T) {
	first, gaveUp := make(chan struct{}), make(chan struct{})
	var calls atomic.Int64
	h := webhooktest.Conversion(func(o map[string]any, to string) (map[string]any, error) {
		if calls.Add(1) == 1 {
			close(first)
			<-gaveUp // the sender gives up meanwhile
		}
		return pizza(o, to)
	}, nil)
	srv := webhooktest.Start(t, h)
	def := pizzaDef(&registry.Conversion{URL: srv.URL, CABundle: srv.CABundle, ReviewVersions: []string{"v1"}})
	conv := conversion.New(def, &webhook.Manager{})
	obj := []conversion.Object{{JSON: margherita("m", 9), Key: "/m", Revision: 9}}
	ctx, cancel := context.WithCancel(context.Background())
	senderDone := make(chan error, 1)
	go func() {
		_, err := conv.Convert(ctx, group+"/v1beta1", obj)
		senderDone <- err
	}()
	<-first
	waiterDone := make(chan error, 1)
	go func() {
		_, err := conv.Convert(context.Background(), group+"/v1beta1", obj)
		waiterDone <- err
	}()
	time.Sleep(50 * time.Millisecond) // the waiter joins the sender's review
	cancel()
	var err error
	select {
	case err = <-senderDone:
		close(gaveUp)
	case <-time.After(10 * time.Second):
		close(gaveUp)
		t.Fatal("the canceled sender still waits for its review")
	}
	if err == nil {
		t.Error("the canceled sender converted")
	}
	if err := <-waiterDone; err != nil {
		t.Errorf("the waiter failed with the sender: %v", err)
	}
}

type reviewRecorder []string

func (r *reviewRecorder) ConversionWebhook(crd, from, to string, succeeded bool, elapsed time.Duration) {
	*r = append(*r, fmt.Sprintf("%s %s→%s succeeded=%v", crd, from, to, succeeded))
}

func TestWebhookMetrics(t *testing.T) {
	def := pizzaDef(&registry.Conversion{URL: "https://127.0.0.1:1/convert", ReviewVersions: []string{"v1"}})
	conv := conversion.New(def, &webhook.Manager{}).(*conversion.Webhook)
	var rec reviewRecorder
	conv.Metrics = &rec
	conv.Convert(context.Background(), group+"/v1beta1", []conversion.Object{{JSON: margherita("m", 5)}})
	if want := "pizzas." + group + " v1alpha1→v1beta1 succeeded=false"; len(rec) != 1 || rec[0] != want {
		t.Errorf("recorded %q, want [%q]", rec, want)
	}
}

// TestWebhookUpdatedObjectsReconverted: an object updated since its
// conversion was kept is converted again, alone; and lists racing with
// writes each get every object converted at the revision they asked for:
// a kept conversion of another revision is never answered.
func TestWebhookUpdatedObjectsReconverted(t *testing.T) {
	var lastSize atomic.Int64 // objects in the last review
	h, _, conv := startPizzaWebhook(t, func(r *webhooktest.Review) { lastSize.Store(int64(len(r.Response.ConvertedObjects))) })
	const n = 50
	var revs [n]atomic.Int64
	for i := range revs {
		revs[i].Store(1)
	}
	list := func() []conversion.Object {
		objs := make([]conversion.Object, n)
		for i := range objs {
			rev := int(revs[i].Load())
			objs[i] = conversion.Object{JSON: margherita("p"+strconv.Itoa(i), rev), Key: "/p" + strconv.Itoa(i), Revision: int64(rev)}
		}
		return objs
	}
	check := func(objs []conversion.Object, out [][]byte) bool {
		t.Helper()
		for i, b := range out {
			if want := `"resourceVersion":"` + strconv.FormatInt(objs[i].Revision, 10) + `"`; !strings.Contains(string(b), want) {
				t.Errorf("object %d asked at revision %d, answered %s", i, objs[i].Revision, b)
				return false
			}
		}
		return true
	}
	convert := func() {
		t.Helper()
		objs := list()
		out, err := conv.Convert(context.Background(), group+"/v1beta1", objs)
		if err != nil {
			t.Fatal(err)
		}
		check(objs, out)
	}
	convert()
	convert()
	if got := h.calls.Load(); got != 1 {
		t.Fatalf("%d reviews for two lists of unchanged objects, want 1", got)
	}
	revs[7].Add(1)
	convert()
	if got, size := h.calls.Load(), lastSize.Load(); got != 2 || size != 1 {
		t.Fatalf("after one object changed: %d reviews, the last of %d objects; want 2, of 1", got, size)
	}

	done := make(chan struct{})
	writer := make(chan struct{})
	go func() {
		defer close(writer)
		for i := 0; ; i = (i + 7) % n {
			select {
			case <-done:
				return
			default:
			}
			revs[i].Add(1)
			runtime.Gosched()
		}
	}()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 10 {
				objs := list()
				out, err := conv.Convert(context.Background(), group+"/v1beta1", objs)
				if err != nil {
					t.Error(err)
					return
				}
				if !check(objs, out) {
					return
				}
			}
		})
	}
	wg.Wait()
	close(done)
	<-writer
	// Unchanged since, the last revisions are converted once more at most.
	before := h.calls.Load()
	convert()
	convert()
	if got := h.calls.Load() - before; got > 1 {
		t.Errorf("%d reviews for two lists after the writes stopped, want at most 1", got)
	}
}

// TestWebhookReviewBody: the review a webhook reads, byte for byte, its
// length declared: the objects as stored, in order, comma-separated.
func TestWebhookReviewBody(t *testing.T) {
	type seen struct {
		length int64
		body   []byte
	}
	got := make(chan seen, 1)
	inner := webhooktest.Conversion(pizza, nil)
	srv := webhooktest.Start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.ContentLength, b}
		r.Body = io.NopCloser(bytes.NewReader(b))
		inner.ServeHTTP(w, r)
	}))
	def := pizzaDef(&registry.Conversion{URL: srv.URL + "/convert", CABundle: srv.CABundle, ReviewVersions: []string{"v1"}})
	conv := conversion.New(def, &webhook.Manager{})
	objs := []conversion.Object{
		{JSON: margherita("a", 1), Key: "/a", Revision: 1},
		{JSON: margherita("b", 2), Key: "/b", Revision: 2},
	}
	if _, err := conv.Convert(context.Background(), group+"/v1beta1", objs); err != nil {
		t.Fatal(err)
	}
	s := <-got
	var review struct {
		Request struct {
			UID string `json:"uid"`
		} `json:"request"`
	}
	if err := json.Unmarshal(s.body, &review); err != nil {
		t.Fatal(err)
	}
	want := `{"kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1","request":{"uid":"` + review.Request.UID +
		`","desiredAPIVersion":"` + group + `/v1beta1","objects":[` + string(objs[0].JSON) + `,` + string(objs[1].JSON) + `]}}`
	if string(s.body) != want || s.length != int64(len(want)) {
		t.Errorf("the webhook read (length %d)\n%s\nwant (length %d)\n%s", s.length, s.body, len(want), want)
	}
	if review.Request.UID == "" {
		t.Error("no uid")
	}
}
