package conversion

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crdserver/crdserver/internal/codec"
	"github.com/crdserver/crdserver/internal/registry"
	"github.com/crdserver/crdserver/internal/webhook"
)

// MaxBatch is the most objects one ConversionReview carries; a longer
// list is sent as several reviews, parallelReviews at a time.
const (
	MaxBatch        = 500
	parallelReviews = 4
)

// reviewVersions are the ConversionReview versions crdserver sends.
var reviewVersions = []string{"v1", "v1beta1"}

// New returns the converter of def: None unless def has a webhook, whose
// client comes from m (one connection pool per webhook configuration).
func New(def *registry.Definition, m *webhook.Manager) Converter {
	if def.Conversion == nil {
		return None{Def: def}
	}
	return NewWebhook(def, m)
}

// Webhook is the Webhook strategy: objects not yet in the target version
// go to the CRD's conversion webhook, at most MaxBatch per review. The
// answer is checked as upstream checks it, then pruned and defaulted with
// the target version's schema.
//
// Conversions of stored objects (Object.Key set) are kept, by key and
// target version, while the object's revision is unchanged: a list or a
// watch event already converted is not sent again, and concurrent callers
// converting the same object (every watcher of one version receiving one
// event) share one review.
type Webhook struct {
	def     *registry.Definition
	client  *webhook.Client
	err     error  // building the client failed: every call fails with it
	review  string // the ConversionReview version sent, "" if none is known
	Timeout time.Duration
	// Metrics, when set, is told how long each review took.
	Metrics Metrics

	// mu guards cache and inflight.
	mu       sync.Mutex
	cache    resultCache
	inflight map[cacheKey]inflight

	reviews atomic.Int64 // reviews sent
}

var _ Converter = (*Webhook)(nil)

// NewWebhook builds def's webhook converter.
func NewWebhook(def *registry.Definition, m *webhook.Manager) *Webhook {
	w := &Webhook{def: def, inflight: map[cacheKey]inflight{}, cache: resultCache{max: 64 << 20, m: map[cacheKey]cached{}}}
	conv := def.Conversion
	for _, v := range conv.ReviewVersions {
		if v == reviewVersions[0] || v == reviewVersions[1] {
			w.review = v
			break
		}
	}
	cfg := webhook.ClientConfig{URL: conv.URL, CABundle: conv.CABundle}
	if s := conv.Service; s != nil {
		cfg.Service = &webhook.Service{Namespace: s.Namespace, Name: s.Name, Path: s.Path, Port: s.Port}
	}
	w.client, w.err = m.Client(cfg)
	return w
}

// Metrics records conversion reviews, as upstream's
// apiserver_crd_conversion_webhook_duration_seconds: the CRD's name, the
// versions converted from and to, and whether the review succeeded.
type Metrics interface {
	ConversionWebhook(crd, from, to string, succeeded bool, elapsed time.Duration)
}

// Reviews is how many ConversionReviews the converter has sent.
func (w *Webhook) Reviews() int64 { return w.reviews.Load() }

type cacheKey struct{ key, to string }

type inflight struct {
	f   *flight
	idx int // the object's index in the flight's batch
	rev int64
}

// flight is one review under way; done closes once res or err is set.
type flight struct {
	done chan struct{}
	res  [][]byte
	ans  *answer // the answer res are parts of, if they are
	err  error
	// abandoned: the review failed because the caller that sent it went
	// away (its request ended), which says nothing about the webhook.
	abandoned bool
}

// Convert converts objs to "group/version" to (see Converter).
func (w *Webhook) Convert(ctx context.Context, to string, objs []Object) ([][]byte, error) {
	out := make([][]byte, len(objs))
	err := w.ConvertEach(ctx, to, objs, func(i int, b []byte) error {
		out[i] = b
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// source is where an object's conversion comes from: its bytes (res),
// or a review under way, this call's own or another's (shared).
type source struct {
	res    []byte
	f      *flight
	idx    int // the object's index in f's batch
	shared bool
}

// ConvertEach is Convert handing each result over as soon as it and those
// before it are in. Reviews go out in the objects' order, a few at a
// time, so a caller writing the results out works on the first batches
// while the webhook converts the later ones.
func (w *Webhook) ConvertEach(ctx context.Context, to string, objs []Object, each func(i int, b []byte) error) error {
	src := make([]source, len(objs))
	var todo []int
	w.mu.Lock()
	for i, o := range objs {
		av, err := o.apiVersion()
		if err != nil {
			w.mu.Unlock()
			return err
		}
		if av == to {
			src[i].res = o.Bytes()
			continue
		}
		if o.Key != "" {
			k := cacheKey{o.Key, to}
			if b, ok := w.cache.get(k, o.Revision); ok {
				src[i].res = b
				continue
			}
			if in, ok := w.inflight[k]; ok && in.rev == o.Revision {
				src[i] = source{f: in.f, idx: in.idx, shared: true}
				continue
			}
		}
		todo = append(todo, i)
	}
	var batches []*flight
	var batchIdx [][]int
	for start := 0; start < len(todo); start += MaxBatch {
		f := &flight{done: make(chan struct{})}
		idx := todo[start:min(start+MaxBatch, len(todo))]
		for j, i := range idx {
			src[i] = source{f: f, idx: j}
			if objs[i].Key != "" {
				w.inflight[cacheKey{objs[i].Key, to}] = inflight{f: f, idx: j, rev: objs[i].Revision}
			}
		}
		batches = append(batches, f)
		batchIdx = append(batchIdx, idx)
	}
	w.mu.Unlock()

	// Batches go out in parallel, a few at a time and in order: a long
	// list's first conversion is bounded by the webhook's throughput, not
	// its latency, and its first objects are ready first. Reviews not yet
	// answered when this call returns (it failed) are not needed: they
	// end, and those not yet sent fail at once.
	if len(batches) > 0 {
		bctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() {
			sem := make(chan struct{}, parallelReviews)
			for n, f := range batches {
				select {
				case sem <- struct{}{}:
					go func() {
						defer func() { <-sem }()
						f.res, f.ans, f.err = w.send(bctx, to, objs, batchIdx[n])
						f.abandoned = f.err != nil && bctx.Err() != nil
						w.landed(to, objs, batchIdx[n], f)
					}()
				case <-bctx.Done():
					f.err, f.abandoned = bctx.Err(), true
					w.landed(to, objs, batchIdx[n], f)
				}
			}
		}()
	}
	for i := range objs {
		s := src[i]
		if s.f != nil {
			select {
			case <-s.f.done:
			case <-ctx.Done():
				return ctx.Err()
			}
			if s.shared && s.f.abandoned && ctx.Err() == nil {
				// Another request's review of this object ended with that
				// request (a watcher went away): convert it here.
				res, err := w.Convert(ctx, to, objs[i:i+1])
				if err != nil {
					return err
				}
				s.res = res[0]
			} else if s.f.err != nil {
				return s.f.err
			} else {
				s.res = s.f.res[s.idx]
			}
		}
		if err := each(i, s.res); err != nil {
			return err
		}
	}
	return nil
}

// Pending reports whether some object of objs has no conversion to to
// kept (see EachConverter).
func (w *Webhook) Pending(to string, objs []Object) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, o := range objs {
		if o.Key == "" {
			return true
		}
		if av, ok := o.headAPIVersion(); ok && av == to {
			continue
		}
		if _, ok := w.cache.get(cacheKey{o.Key, to}, o.Revision); !ok {
			return true
		}
	}
	return false
}

// landed keeps the results of f, the review of objs[idx], and tells
// the callers waiting on it.
func (w *Webhook) landed(to string, objs []Object, idx []int, f *flight) {
	w.mu.Lock()
	for j, i := range idx {
		k := cacheKey{objs[i].Key, to}
		if objs[i].Key == "" {
			continue
		}
		if f.err == nil {
			w.cache.put(k, objs[i].Revision, f.res[j], f.ans)
		}
		if in, ok := w.inflight[k]; ok && in.f == f {
			delete(w.inflight, k)
		}
	}
	w.mu.Unlock()
	close(f.done)
}

// batchOf returns objs[idx], a slice of its own, for send to put
// together those it reads whole.
func batchOf(objs []Object, idx []int) []Object {
	batch := make([]Object, len(idx))
	for j, i := range idx {
		batch[j] = objs[i]
	}
	return batch
}

// putTogether gives the objects kept in parts (Cached) their bytes,
// but those skip says are not read.
func putTogether(objs []Object, skip func(j int) bool) {
	for j := range objs {
		if objs[j].JSON == nil && objs[j].Cached != nil && (skip == nil || !skip(j)) {
			objs[j].JSON = objs[j].Cached.JSON()
		}
	}
}

// comma separates the objects of a review's body.
var comma = []byte{','}

// reviewParts is a ConversionReview's request, the same in v1 and
// v1beta1, in parts to send one after another: the objects are not copied
// into one body (a list's review carries megabytes of them), nor those
// kept in parts put together (a cold list's would be tens of megabytes
// of new memory).
func reviewParts(review, uid, to string, objs []Object, idx []int) [][]byte {
	av, _ := json.Marshal(to)
	head := `{"kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/` + review +
		`","request":{"uid":"` + uid + `","desiredAPIVersion":` + string(av) + `,"objects":[`
	parts := make([][]byte, 0, 2*len(idx)+1)
	parts = append(parts, []byte(head))
	for j, i := range idx {
		if j > 0 {
			parts = append(parts, comma)
		}
		if o := objs[i]; o.JSON == nil && o.Cached != nil {
			parts = o.Cached.AppendPieces(parts)
		} else {
			parts = append(parts, o.JSON)
		}
	}
	return append(parts, []byte("]}}"))
}

// send converts objs[idx] with one review and checks the answer.
// The results are either all parts of the webhook's answer (ans, which
// they keep alive: a cache must count it) or all of their own (ans nil).
func (w *Webhook) send(ctx context.Context, to string, objs []Object, idx []int) (_ [][]byte, ans *answer, err error) {
	// Upstream words its errors for one object converted alone, not for
	// a list's last review of one.
	single := len(objs) == 1
	objs = batchOf(objs, idx)
	idx = make([]int, len(objs))
	for j := range idx {
		idx[j] = j
	}
	objs[0].JSON = objs[0].Bytes()
	from, kind, err := apiVersionAndKind(objs[0].JSON)
	if err != nil {
		return nil, nil, err
	}
	in := w.inputKind(from, kind, single)
	if w.err != nil {
		return nil, nil, fmt.Errorf("conversion webhook for %v failed: %v", in, w.err)
	}
	if w.review == "" {
		return nil, nil, errors.New("no supported conversion review versions")
	}
	uid := string(uuid.NewUUID())
	w.reviews.Add(1)
	if w.Metrics != nil {
		defer func(start time.Time) {
			w.Metrics.ConversionWebhook(w.def.GroupResource().String(), version(from), version(to), err == nil, time.Since(start))
		}(time.Now())
	}
	data, err := w.client.PostParts(ctx, reviewParts(w.review, uid, to, objs, idx), w.Timeout)
	if err != nil {
		return nil, nil, fmt.Errorf("conversion webhook for %v failed: %v", in, err)
	}
	if cap(data) > len(data)+len(data)/4 {
		// The answer was read into a buffer of the size the review
		// expected, and came back much smaller: the results the cache
		// keeps as parts of it should not keep the rest alive.
		data = bytes.Clone(data)
	}
	toGV, _ := schema.ParseGroupVersion(to)
	s := targetSchema(w.def, to)
	uc, _ := s.(unchangedChecker)
	if raws, ok := w.quickReview(uid, data, len(idx), uc, w.storedMatcher(to, objs)); ok {
		putTogether(objs, func(j int) bool { return raws[j].stored })
		if out, shared, ok, err := w.resultsFromRaw(raws, to, objs, idx, toGV, s, in, single); ok {
			if err != nil {
				return nil, nil, err
			}
			if shared {
				ans = &answer{size: cap(data)} // what the parts keep alive
			}
			return out, ans, nil
		}
	}
	putTogether(objs, nil)
	converted, err := w.convertedObjects(uid, data)
	if err != nil {
		return nil, nil, fmt.Errorf("conversion webhook for %v failed: %v", in, err)
	}
	if len(converted) != len(idx) {
		return nil, nil, fmt.Errorf("conversion webhook for %v returned %d objects, expected %d", in, len(converted), len(idx))
	}
	out := make([][]byte, len(idx))
	var scratch []byte
	for j, c := range converted {
		var ok bool
		if out[j], scratch, ok = quickResult(objs[idx[j]], c, to, s, scratch); ok {
			continue
		}
		if out[j], err = w.result(objs[idx[j]], c, toGV, s, in, j, single); err != nil {
			return nil, nil, err
		}
	}
	return out, nil, nil
}

// resultsFromRaw is the rest of send for an answer whose converted
// objects quickReview found, encoded: each is taken as it is
// (rawResultAt, for those the target schema's walk accepted), or decoded
// alone and checked. ok is false when one needs the whole answer decoded
// (it is not an object, or does not decode), for the errors to be worded
// as ever.
//
// The results are the answer's objects themselves when each is its
// original's but for apiVersion and what follows metadata (shared): then
// they keep the whole answer alive. Otherwise each is of its own (those
// taken as they came are copied): a cache of results then counts each,
// and keeps no answer for a few of its objects.
func (w *Webhook) resultsFromRaw(raws []rawObject, to string, objs []Object, idx []int, toGV schema.GroupVersion, s registry.Schema, in schema.GroupVersionKind, single bool) (_ [][]byte, shared, ok bool, _ error) {
	out := make([][]byte, len(idx))
	var scratch []byte
	parts := 0 // results that are parts of the answer
	for j, ro := range raws {
		orig, raw := objs[idx[j]], ro.json
		if ro.stored {
			out[j] = raw
			parts++
			continue
		}
		if ro.unchanged {
			var part bool
			if out[j], part, ok = rawResultAt(orig, raw, to, ro.metaStart, ro.metaEnd); ok {
				if part {
					parts++
				}
				continue
			}
		}
		if raw[0] != '{' {
			return nil, false, false, nil
		}
		c, err := Decode(raw)
		if err != nil {
			return nil, false, false, nil
		}
		if out[j], scratch, ok = quickResult(orig, c, to, s, scratch); ok {
			continue
		}
		if out[j], err = w.result(orig, c, toGV, s, in, j, single); err != nil {
			return nil, false, true, err
		}
	}
	if parts > 0 && parts < len(out) {
		for j, ro := range raws {
			if len(out[j]) > 0 && len(ro.json) > 0 && &out[j][0] == &ro.json[0] {
				out[j] = bytes.Clone(out[j])
			}
		}
	}
	return out, parts == len(out), true, nil
}

// result checks converted, the webhook's answer for orig at index j, as
// upstream does and returns it pruned and defaulted with s, encoded.
func (w *Webhook) result(orig Object, converted any, toGV schema.GroupVersion, s registry.Schema, in schema.GroupVersionKind, j int, single bool) ([]byte, error) {
	original, err := Decode(orig.JSON)
	if err != nil {
		return nil, err
	}
	obj, err := w.check(original, converted, toGV, in, j, single)
	if err != nil {
		return nil, err
	}
	return finish(obj, s)
}

// apiVersionAndKind reads an encoded object's apiVersion and kind.
func apiVersionAndKind(b []byte) (apiVersion, kind string, err error) {
	var id identity
	if id.scan(b, true) {
		av, ok1 := id.str(id.apiVersion)
		k, ok2 := id.str(id.kind)
		if ok1 && ok2 {
			return av, k, nil
		}
	}
	obj, err := Decode(b)
	if err != nil {
		return "", "", err
	}
	apiVersion, _ = obj["apiVersion"].(string)
	kind, _ = obj["kind"].(string)
	return apiVersion, kind, nil
}

// inputKind is how upstream names what it converted in its errors: the
// object's group, version and kind, or the list's.
func (w *Webhook) inputKind(apiVersion, kind string, single bool) schema.GroupVersionKind {
	gv, _ := schema.ParseGroupVersion(apiVersion)
	if !single {
		kind = w.def.ListKind
	}
	return gv.WithKind(kind)
}

// convertedObjects decodes the webhook's answer and checks its review:
// for v1 the kind and the uid (v1beta1 answers were never checked for
// them, and upstream keeps it so), then the result. The answer is decoded
// once, with the converted objects in it.
func (w *Webhook) convertedObjects(uid string, data []byte) ([]any, error) {
	ans, err := Decode(data)
	if err != nil {
		return nil, fmt.Errorf("decoding the webhook's answer: %v", err)
	}
	if w.review == "v1" {
		av, _ := ans["apiVersion"].(string)
		kind, _ := ans["kind"].(string)
		want := schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "ConversionReview"}
		if got := schema.FromAPIVersionAndKind(av, kind); got != want {
			return nil, fmt.Errorf("expected webhook response of %v, got %v", want.String(), got.String())
		}
	}
	resp, ok := ans["response"].(map[string]any)
	if !ok {
		return nil, errors.New("no response provided")
	}
	if got, _ := resp["uid"].(string); w.review == "v1" && got != uid {
		return nil, fmt.Errorf("expected response.uid=%q, got %q", uid, got)
	}
	result, _ := resp["result"].(map[string]any)
	if status, _ := result["status"].(string); status != metav1.StatusSuccess {
		if msg, _ := result["message"].(string); msg != "" {
			return nil, errors.New(msg)
		}
		return nil, fmt.Errorf("response.result.status was '%s', not 'Success'", status)
	}
	objs, _ := resp["convertedObjects"].([]any)
	return objs, nil
}

// check holds one converted object to upstream's rules:
// the desired group and version, the original's kind, name, namespace and
// uid; its metadata is the original's but for labels and annotations,
// which the webhook may change.
func (w *Webhook) check(original map[string]any, converted any, toGV schema.GroupVersion, in schema.GroupVersionKind, j int, single bool) (map[string]any, error) {
	invalid := func(err error) error {
		if single {
			return fmt.Errorf("conversion webhook for %v returned invalid object at index 0: %v", in, err)
		}
		return fmt.Errorf("conversion webhook for %v returned invalid converted object at index %v: %v", in, j, err)
	}
	obj, ok := converted.(map[string]any)
	if !ok {
		return nil, invalid(fmt.Errorf("not an object: %T", converted))
	}
	av, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	gv, _ := schema.ParseGroupVersion(av)
	if gv != toGV {
		return nil, invalid(fmt.Errorf("invalid groupVersion (expected %v, received %v)", toGV, gv))
	}
	if want, _ := original["kind"].(string); kind != want {
		return nil, invalid(fmt.Errorf("invalid kind (expected %v, received %v)", want, kind))
	}
	om, _ := original["metadata"].(map[string]any)
	cm, _ := obj["metadata"].(map[string]any)
	for _, f := range []struct{ key, what string }{{"name", "name"}, {"namespace", "namespace"}, {"uid", "UID"}} {
		a, _ := om[f.key].(string)
		b, _ := cm[f.key].(string)
		if a != b {
			err := fmt.Errorf("must have the same %s: %v != %v", f.what, a, b)
			if single {
				return nil, fmt.Errorf("conversion webhook for %v returned invalid object: %v", in, err)
			}
			return nil, invalid(err)
		}
	}
	if err := restoreMetadata(original, obj); err != nil {
		if single {
			return nil, fmt.Errorf("conversion webhook for %v returned invalid metadata: %v", in, err)
		}
		return nil, fmt.Errorf("conversion webhook for %v returned invalid metadata in object at index %v: %v", in, j, err)
	}
	return obj, nil
}

// restoreMetadata gives converted the original's metadata, with the
// labels and annotations the webhook answered (validated when changed).
func restoreMetadata(original, converted map[string]any) error {
	raw, found := converted["metadata"]
	if !found {
		return errors.New("missing metadata in converted object")
	}
	answered, ok := raw.(map[string]any)
	if !ok {
		return fmt.Errorf("invalid metadata of type %T in converted object", raw)
	}
	md := map[string]any{}
	if om, ok := original["metadata"].(map[string]any); ok {
		md = codec.DeepCopy(om)
	}
	converted["metadata"] = md
	for _, fld := range []string{"labels", "annotations"} {
		v, found := answered[fld]
		if !found || v == nil {
			delete(md, fld)
			continue
		}
		got, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("invalid metadata.%s of type %T in converted object", fld, v)
		}
		orig, _ := md[fld].(map[string]any)
		changed := len(orig) != len(got)
		strs := make(map[string]string, len(got))
		for k, x := range got {
			s, ok := x.(string)
			if !ok {
				return fmt.Errorf("metadata.%s[%s] must be a string, but is %T in converted object", fld, k, x)
			}
			if o, _ := orig[k].(string); o != s || orig[k] == nil {
				changed = true
			}
			strs[k] = s
		}
		if changed {
			var errs field.ErrorList
			if fld == "labels" {
				errs = metav1validation.ValidateLabels(strs, field.NewPath("metadata", "labels"))
			} else {
				errs = apivalidation.ValidateAnnotations(strs, field.NewPath("metadata", "annotation"))
			}
			if len(errs) > 0 {
				return errs.ToAggregate()
			}
		}
		md[fld] = got
	}
	return nil
}

// resultCache keeps converted objects by storage key and target version,
// with the revision they were converted at, up to max bytes; past it,
// arbitrary entries go. An entry that is part of a webhook's answer keeps
// the whole answer alive: the answer counts, once, while any of its
// entries is kept, and when one of them goes to make room, all of them go
// (keeping some would free nothing).
type resultCache struct {
	max, size int
	m         map[cacheKey]cached
}

type cached struct {
	rev  int64
	json []byte
	ans  *answer // the answer json is part of; nil: json is its own
}

// answer is a webhook's answer whose converted objects are cached as they
// are, parts of it.
type answer struct {
	size int        // its length
	refs int        // its entries in the cache
	keys []cacheKey // where they are (or were: some may have been replaced)
}

func (c *resultCache) get(k cacheKey, rev int64) ([]byte, bool) {
	e, ok := c.m[k]
	if !ok || e.rev != rev {
		return nil, false
	}
	return e.json, true
}

// put keeps b, converted at rev, for k, unless a later revision's is
// kept; ans is the answer b is part of (nil: none).
func (c *resultCache) put(k cacheKey, rev int64, b []byte, ans *answer) {
	if e, ok := c.m[k]; ok {
		if e.rev > rev {
			return
		}
		c.release(e)
	}
	c.m[k] = cached{rev: rev, json: b, ans: ans}
	if ans == nil {
		c.size += len(b)
	} else {
		if ans.refs == 0 {
			c.size += ans.size
		}
		ans.refs++
		ans.keys = append(ans.keys, k)
	}
	if c.size <= c.max {
		// Starting to range over a map of thousands of entries, only to
		// stop at once, cost more than the rest of a put.
		return
	}
	// Room is made from other entries first: evicting the answer being
	// put, part by part as it comes, would keep only its last parts.
	c.evict(func(key cacheKey, e cached) bool { return key != k && (ans == nil || e.ans != ans) })
	c.evict(func(cacheKey, cached) bool { return true })
}

// evict removes arbitrary entries that may go, each with all other parts
// of its answer, until the cache fits.
func (c *resultCache) evict(may func(cacheKey, cached) bool) {
	for key, e := range c.m {
		if c.size <= c.max {
			return
		}
		if !may(key, e) {
			continue
		}
		if e.ans == nil {
			delete(c.m, key)
			c.release(e)
			continue
		}
		for _, ak := range e.ans.keys {
			if ae, ok := c.m[ak]; ok && ae.ans == e.ans {
				delete(c.m, ak)
				c.release(ae)
			}
		}
	}
}

// release uncounts an entry that left the cache.
func (c *resultCache) release(e cached) {
	if e.ans == nil {
		c.size -= len(e.json)
		return
	}
	if e.ans.refs--; e.ans.refs == 0 {
		c.size -= e.ans.size
		e.ans.keys = nil
	}
}

// version is the version of an apiVersion, group/version.
func version(apiVersion string) string {
	return apiVersion[strings.LastIndexByte(apiVersion, '/')+1:]
}
